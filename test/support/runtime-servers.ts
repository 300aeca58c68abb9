/**
 * What the runtime's integration tests of timers and the rate limit share: a real API server
 * and ElasticMQ started once per file (with an admin client and an SQS client), a wait on a
 * condition (never on a duration), and the number of messages a queue holds in any state.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import type { BoundKubeClient } from '../../src/kube/client.ts';

export interface RuntimeServers {
  cp: ControlPlane;
  broker: Broker;
  sqs: SQSClient;
  admin: BoundKubeClient;
}

/** Registers before/after hooks that start and stop the servers; the fields are set once `before` ran. */
export function useRuntimeServers(): RuntimeServers {
  const servers = {} as RuntimeServers;
  before(async () => {
    [servers.cp, servers.broker] = await Promise.all([startControlPlane(), startBroker()]);
    servers.sqs = servers.broker.sqs();
    servers.admin = await createClientFactory({ env: { OPERLESS_KUBECONFIG: servers.cp.kubeconfigPath } })('admin');
  });
  after(async () => {
    await Promise.allSettled([servers.cp?.stop(), servers.broker?.stop()]);
  });
  return servers;
}

/** Polls `check` until it holds; fails naming `what` after `seconds`. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, seconds = 120): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(200);
  }
  assert.fail(`${what}: not reached within ${seconds} s`);
}

/** Messages in the queue: visible, in flight and delayed. */
export async function messagesIn(sqs: SQSClient, url: string): Promise<number> {
  const a =
    (
      await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
        }),
      )
    ).Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages) + Number(a.ApproximateNumberOfMessagesNotVisible) + Number(a.ApproximateNumberOfMessagesDelayed);
}
