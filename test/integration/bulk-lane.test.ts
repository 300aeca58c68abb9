/**
 * Live changes before the backlog (docs/semantics.md, "Live changes before the backlog"), on a
 * real kube-apiserver + etcd and ElasticMQ: the forwarder's resync on start and the scheduled
 * resync function put thousands of `Resync`s on the bulk queue; a ConfigMap created meanwhile
 * goes to the live queue and is reconciled while the backlog is still there; the backlog then
 * drains completely (no starvation), with one consumer per queue as the event source mappings
 * of serverless.yml. Each object's first resync reconcile repairs it (creates its missing
 * child) and reports `resync_repaired_total` 1; the later ones report 0.
 *
 * OPERLESS_BULK_OBJECTS sets the number of objects (default 1500: a backlog of 3000).
 * OPERLESS_BULK_LANE=off sends everything to the live queue as before the bulk lane (a check
 * that the test fails without it; not a supported setting).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { done } from '../../src/core/controller/result.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { createEmfMetrics } from '../../src/core/reconcile/metrics.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { CONFIGMAPS } from '../../src/kube/kinds.ts';
import { createResyncHandler } from '../../src/core/resync/resync.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import { startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { createLogger, silentLogger } from '../../src/observability/log.ts';

const OBJECTS = Number(process.env.OPERLESS_BULK_OBJECTS ?? 1500);
const BULK_LANE = process.env.OPERLESS_BULK_LANE !== 'off';
const CLUSTER = 'bulk-lane';
const NS = 'bulk';
const LABEL = 'bulk.test.operless.dev/primary';

let cp: ControlPlane;
let broker: Broker;
const stops: (() => Promise<unknown>)[] = [];

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane(), startBroker({ queues: [] })]);
});
after(async () => {
  for (const stop of stops.reverse()) await stop();
  await Promise.all([cp?.stop(), broker?.stop()]);
});

/** Runs `task` over `items` with at most `parallel` at once. */
async function inParallel<T>(items: readonly T[], parallel: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

test('a live change is reconciled while thousands of resyncs wait on the bulk queue, and the backlog still drains', async (t) => {
  const factory = createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: cp.kubeconfigPath } }, env: {} });
  const kube = await factory(CLUSTER);
  assert.equal((await cp.kubectl(['create', 'namespace', NS])).code, 0);
  const names = Array.from({ length: OBJECTS }, (_, i) => `cm-${i}`);
  await inParallel(names, 16, (name) =>
    kube.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels: { [LABEL]: 'true' } }, data: { n: name } }),
  );

  const [liveQueue, bulkQueue] = await Promise.all([
    broker.createQueue({ name: 'bulk-test-live', visibilityTimeoutSeconds: 60 }),
    broker.createQueue({ name: 'bulk-test-bulk', visibilityTimeoutSeconds: 60 }),
  ]);
  const sqs = broker.sqs();
  const depth = async (queueUrl: string) => {
    const { Attributes: a = {} } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
  };

  // The backlog: the forwarder's resync on start, then the scheduled resync function's.
  const forwarderLog: string[] = [];
  const context = () => `forwarder log:\n${forwarderLog.slice(-20).join('\n')}`;
  const forwarder: Forwarder = startForwarder(
    {
      clusterId: CLUSTER,
      queue: { url: liveQueue, ...(BULK_LANE ? { bulkUrl: bulkQueue } : {}), region: broker.region, endpoint: broker.endpoint },
      primaries: [{ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, namespaces: [NS], labelSelector: `${LABEL}=true` }],
      resyncOnStart: true,
      coalesceWindowMs: 0,
      server: { port: 0, host: '127.0.0.1' },
    },
    {
      kubeConfig: cp.kubeConfig,
      queues: (queueUrl) => createSqsQueue({ queueUrl, region: broker.region, client: sqs }),
      logger: createLogger({ level: 'info', write: (line) => forwarderLog.push(line) }),
    },
  );
  stops.push(() => forwarder.stop());
  await forwarder.ready;
  const backlogQueue = BULK_LANE ? bulkQueue : liveQueue;
  await waitUntil('the forwarder resync is on the queue', async () => (await depth(backlogQueue)) >= OBJECTS, { timeoutMs: 300_000, context });
  const resync = createResyncHandler({
    kinds: [CONFIGMAPS],
    env: { OPERLESS_CLUSTER: CLUSTER, OPERLESS_NAMESPACES: NS, OPERLESS_QUEUE_URL: liveQueue, OPERLESS_BULK_QUEUE_URL: BULK_LANE ? bulkQueue : '' },
    clientFor: factory,
    sqs,
  });
  const report = await resync({}, { getRemainingTimeInMillis: () => 300_000 });
  assert.equal(report.sent, OBJECTS);
  const backlog = await depth(backlogQueue);
  assert.ok(backlog >= 2 * OBJECTS, `a backlog of ${backlog} resyncs`);
  if (BULK_LANE) assert.equal(await depth(liveQueue), 0, 'no resync went to the live queue');

  // The functions: one reconcile function, one mapping per queue (serverless.yml: the bulk one capped lower; Lambda's floor is 2).
  const reconciled: string[] = [];
  let liveAt: number | undefined;
  let backlogReconciles = 0;
  const emf: { resync_repaired_total?: number }[] = [];
  const controller = defineController({
    ...CONFIGMAPS,
    async reconcile(object, ctx) {
      const name = object.metadata.name;
      if (ctx.message.reason === 'Resync') backlogReconciles += 1;
      else if (name === 'live' && liveAt === undefined) liveAt = backlogReconciles;
      reconciled.push(name);
      // The repair: the object's child, missing until its first reconcile (not watched: no event).
      const child = `${name}-child`;
      if (!(await ctx.client.get(CONFIGMAPS, child, NS)))
        await ctx.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: child, namespace: NS }, data: {} });
      return done();
    },
  });
  const handler = toSqsHandler(controller, {
    queueUrl: liveQueue,
    cluster: CLUSTER,
    clients: factory,
    log: silentLogger,
    metrics: createEmfMetrics({ write: (line) => emf.push(JSON.parse(line)) }),
  });
  const runners: LambdaRunner[] = [];
  for (const [queueUrl, maxConcurrency] of [
    [liveQueue, 2],
    [bulkQueue, 2],
  ] as const) {
    runners.push(await startLambdaRunner({ queueUrl, sqs, handler, maxConcurrency, batchSize: 10, timeoutSeconds: 60, logger: silentLogger }));
  }
  stops.push(() => Promise.all(runners.map((r) => r.stop())));
  await waitUntil('the backlog is being reconciled', () => backlogReconciles >= 50, { timeoutMs: 300_000 });

  // The live change: a new object, while the backlog waits.
  assert.equal((await cp.kubectl(['-n', NS, 'create', 'configmap', 'live'])).code, 0);
  assert.equal((await cp.kubectl(['-n', NS, 'label', 'configmap', 'live', `${LABEL}=true`])).code, 0);
  await waitUntil('the live change is reconciled', () => liveAt !== undefined, { timeoutMs: 600_000 });
  const left = 2 * OBJECTS - liveAt!;
  t.diagnostic(`live change reconciled after ${liveAt} of ${2 * OBJECTS} resync reconciles (bulk lane ${BULK_LANE ? 'on' : 'off'})`);
  assert.ok(left > OBJECTS / 2, `the live change was reconciled with ${left} of ${2 * OBJECTS} resyncs still waiting (after ${liveAt} of them)`);

  // No starvation: the backlog drains completely beside the live queue.
  await waitUntil(
    'the backlog drained',
    async () => (await depth(bulkQueue)) + (await depth(liveQueue)) === 0 && backlogReconciles >= 2 * OBJECTS - (2 * OBJECTS) / 10,
    { timeoutMs: 900_000 },
  );
  const resynced = new Set(reconciled.filter((n) => n !== 'live'));
  assert.equal(resynced.size, OBJECTS, 'every object was reconciled from the backlog');

  // resync_repaired_total: each object's first resync reconcile created its child; the later ones changed nothing.
  const samples = emf.filter((d) => d.resync_repaired_total !== undefined);
  const repaired = samples.reduce((n, d) => n + d.resync_repaired_total!, 0);
  assert.equal(repaired, OBJECTS, `${repaired} repairs over ${samples.length} resync reconciles`);
  assert.ok(samples.length >= 2 * OBJECTS - OBJECTS / 10, `${samples.length} resync reconciles reported`);
  assert.equal(emf.filter((d) => d.resync_repaired_total === undefined).length >= 1, true, 'the live reconcile reports no resync_repaired_total');
});
