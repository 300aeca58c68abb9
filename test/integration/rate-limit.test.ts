/**
 * A controller's shared rate limit (core/controller/rate-limit.ts, docs/semantics.md "A rate limit shared
 * by all invocations") on a REAL kube-apiserver + etcd and a REAL broker (ElasticMQ): two
 * functions (handlers built separately, as two Lambda sandboxes), each with a runner of up to
 * three concurrent invocations, drain 24 objects of a kind limited to 3 reconciles per second.
 *
 * - The bound holds: every reconcile's log line names the second whose shared count admitted
 *   it (`rateWindow`), and no second admitted more than 3.
 * - Nothing is lost: every object is reconciled, the DLQ stays empty, and no reconcile ran as
 *   a retry (the excess was handed back with its attempt unchanged, never failed).
 * - The limit did act: some keys found their second full and were handed back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as sdk from '@aws-sdk/client-sqs';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { done } from '../../src/core/controller/result.ts';
import { rateLeaseName } from '../../src/core/controls/rate-limit-lease.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { LEASES } from '../../src/kube/kinds.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { messagesIn, useRuntimeServers, waitFor } from '../support/runtime-servers.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import { sqsQueuePort } from '../../src/queue/sqs-port.ts';
import { createLogger, silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';

const CONFIGMAP: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const NS = 'default';
const CLUSTER = 'it';
const PER_SECOND = 3;
const OBJECTS = 24;

const servers = useRuntimeServers();

test(`${OBJECTS} objects, two functions with concurrent invocations, rateLimit.perSecond ${PER_SECOND}: no second admits more than ${PER_SECOND} reconciles, and every object is reconciled without a retry`, async (t) => {
  const name = `rl-${randomUUID().slice(0, 8)}`;
  const work = (await servers.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '30' } }))).QueueUrl!;
  const dlq = (await servers.sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
  const prefix = `limited-${randomUUID().slice(0, 6)}`;
  const objects = await Promise.all(
    Array.from({ length: OBJECTS }, (_, i) =>
      servers.admin.create(CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-${i}`, namespace: NS } }),
    ),
  );

  const reconciled: { name: string; attempt: number }[] = [];
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'info', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const fn = () =>
    toSqsHandler(
      defineController<KubeObject>({
        ...CONFIGMAP,
        async reconcile(cm, ctx) {
          if (!cm.metadata.name.startsWith(prefix)) return done();
          reconciled.push({ name: cm.metadata.name, attempt: ctx.message.attempt });
          await sleep(20);
          return done();
        },
        rateLimit: { perSecond: PER_SECOND, namespace: NS },
      }),
      {
        queueUrl: work,
        deadLetterQueueUrl: dlq,
        clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: servers.cp.kubeconfigPath, OPERLESS_CLUSTER: CLUSTER } }),
        sender: createSqsSender(servers.sqs),
        log,
        metrics: noMetrics,
      },
    );
  const bodies = objects.map((cm, i) => ({
    id: `m${i}`,
    body: encodeMessage(
      newMessage({ cluster: CLUSTER, apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: cm.metadata.name, uid: cm.metadata.uid }, 'Added'),
    ),
  }));
  const port = sqsQueuePort(sdk, servers.sqs, work);
  for (let i = 0; i < bodies.length; i += 10) assert.deepEqual((await port.sendBatch(bodies.slice(i, i + 10))).failed, []);

  const runners: LambdaRunner[] = [];
  for (const handler of [fn(), fn()])
    runners.push(await startLambdaRunner({ queueUrl: work, sqs: servers.sqs, handler, batchSize: 2, maxConcurrency: 3, logger: silentLogger }));
  try {
    await waitFor('every object reconciled', () => new Set(reconciled.map((r) => r.name)).size === OBJECTS);
    await waitFor('the work queue drained', async () => (await messagesIn(servers.sqs, work)) === 0);
  } finally {
    await Promise.all(runners.map((r) => r.stop()));
  }

  const reconcileLines = lines.filter((l) => l.msg === 'reconciled' && typeof l.key === 'string' && l.key.includes(prefix));
  assert.equal(reconcileLines.length, reconciled.length, 'one log line per reconcile');
  const perSecond = new Map<number, number>();
  for (const line of reconcileLines) {
    assert.equal(typeof line.rateWindow, 'number', `the reconcile of ${String(line.key)} names the second that admitted it`);
    perSecond.set(line.rateWindow as number, (perSecond.get(line.rateWindow as number) ?? 0) + 1);
  }
  const busiest = Math.max(...perSecond.values());
  const handedBack = lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('rate limit reached')).length;
  t.diagnostic(`reconciles per admitted second: ${[...perSecond.values()].join(' ')}; keys handed back: ${handedBack}`);
  assert.ok(busiest <= PER_SECOND, `a second admitted ${busiest} reconciles: ${JSON.stringify([...perSecond])}`);
  assert.ok(
    perSecond.size >= Math.ceil(OBJECTS / PER_SECOND),
    `${OBJECTS} reconciles spread over at least ${Math.ceil(OBJECTS / PER_SECOND)} seconds (${perSecond.size})`,
  );
  assert.ok(handedBack > 0, 'some keys found their second full and were handed back');
  assert.deepEqual(
    reconciled.filter((r) => r.attempt !== 0),
    [],
    'no reconcile ran as a retry: the excess was not counted as a failure',
  );
  assert.equal(await messagesIn(servers.sqs, dlq), 0, 'nothing dead-lettered');
  const lease = await servers.admin.get(LEASES, rateLeaseName('configmap'), NS);
  assert.ok(lease?.metadata.annotations?.['operless.dev/rate-window'], 'the shared count lives on the Lease');
});
