/**
 * A resync period per kind on the real API server and ElasticMQ: two controllers declare
 * different periods, their schedule events (resyncSchedules) fire as EventBridge would over a
 * simulated hour of minutes, and each kind's queue receives one Resync per object per period.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { done } from '../../src/core/controller/result.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { createPerKindResyncHandler } from '../../src/core/resync/resync.ts';
import { resyncSchedules } from '../../src/core/resync/resync-period.ts';

const CLUSTER = 'resync-period';
const NS = 'periods';
let cp: ControlPlane;
let broker: Broker;

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane(), startBroker()]);
});
after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
});

async function drain(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const names: string[] = [];
  for (;;) {
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    if (!got.Messages?.length) return names;
    for (const m of got.Messages) {
      const body = JSON.parse(m.Body ?? '{}') as { reason: string; name: string };
      assert.equal(body.reason, 'Resync');
      names.push(body.name);
    }
  }
}

test('two kinds with different declared periods are resynced each at its own period', async () => {
  assert.equal((await cp.kubectl(['create', 'namespace', NS])).code, 0);
  for (const name of ['c1', 'c2']) assert.equal((await cp.kubectl(['-n', NS, 'create', 'configmap', name])).code, 0);
  assert.equal((await cp.kubectl(['-n', NS, 'create', 'secret', 'generic', 's1'])).code, 0);
  const configMaps = defineController({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    plural: 'configmaps',
    namespaced: true,
    resync: { everySeconds: 600 },
    reconcile: async () => done(),
  });
  const secrets = defineController({
    apiVersion: 'v1',
    kind: 'Secret',
    plural: 'secrets',
    namespaced: true,
    resync: { everySeconds: 1800 },
    reconcile: async () => done(),
  });
  const schedules = resyncSchedules([configMaps, secrets].map((c) => ({ kind: c.kind.kind, everySeconds: c.resyncSeconds })));
  assert.deepEqual(
    schedules.map((s) => s.rate),
    ['rate(10 minutes)', 'rate(30 minutes)'],
  );

  const [cmQueue, secretQueue] = await Promise.all([broker.createQueue({ name: 'period-cm' }), broker.createQueue({ name: 'period-secret' })]);
  const factory = createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: cp.kubeconfigPath } }, env: {} });
  const handler = createPerKindResyncHandler({
    targets: [
      { kind: configMaps.kind, queueUrlVariable: 'CM_QUEUE_URL' },
      { kind: secrets.kind, queueUrlVariable: 'SECRET_QUEUE_URL' },
    ],
    env: { OPERLESS_CLUSTER: CLUSTER, OPERLESS_NAMESPACES: NS, CM_QUEUE_URL: cmQueue, SECRET_QUEUE_URL: secretQueue },
    clientFor: factory,
    sqs: broker.sqs(),
  });
  const periods = [configMaps.resyncSeconds, secrets.resyncSeconds];
  // An hour of EventBridge minutes: a schedule fires when its period divides the minute.
  for (let minute = 1; minute <= 60; minute++) {
    for (const [i, schedule] of schedules.entries()) {
      if ((minute * 60) % periods[i]! === 0) await handler(schedule.input, { getRemainingTimeInMillis: () => 60_000 });
    }
  }
  const cmNames = (await cp.kubectl(['-n', NS, 'get', 'configmaps', '-o', 'jsonpath={.items[*].metadata.name}'])).stdout.split(' ').filter(Boolean);
  const cm = await drain(broker.sqs(), cmQueue);
  const secret = await drain(broker.sqs(), secretQueue);
  assert.equal(cm.length, 6 * cmNames.length, `six ConfigMap resyncs of ${cmNames.join(',')}`);
  assert.deepEqual(secret.sort(), ['s1', 's1'], 'two Secret resyncs');
});
