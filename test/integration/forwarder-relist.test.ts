/**
 * The forwarder's resyncs at a scale larger than its send buffer, against a REAL kube-apiserver
 * + etcd and a REAL SQS-compatible broker (ElasticMQ, behind the fault suite's pass-through proxy,
 * which can reset every connection like a stopped broker):
 * - a resync on start of 2,500 primaries with `buffer.maxMessages: 200` sends every object once,
 *   never overflows, is not repeated, and keeps the buffer at a few batches (resync-feed.ts);
 * - an overflow of live changes (queue down) is healed by ONE resync once the queue drains;
 * - losing leadership discards the buffer and the resync in progress; the next leadership
 *   resyncs every object once.
 * Every object is counted per key in the queue itself.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import type { QueuePort } from '../../src/queue/port.ts';
import type { ForwarderConfigInput } from '../../src/forwarder/config/config.ts';
import { microTime } from '../../src/kube/time.ts';
import { MAX_BATCH_ENTRIES } from '../../src/forwarder/sink/buffer.ts';
import { feedRoom } from '../../src/forwarder/sink/resync-feed.ts';
import type { ReconcileMessage } from '../../src/contract/message.ts';
import { createLogger, type Logger } from '../../src/observability/log.ts';
import { startSqsProxy, type SqsProxy } from '../faults/sqs-proxy.ts';
import { GADGET_CRD, Objects, collect, gadgetConfig } from './forwarder-env.ts';

/** Primaries of the scale case; OPERLESS_RELIST_OBJECTS overrides (CI carries the default). */
const OBJECTS = Number(process.env.OPERLESS_RELIST_OBJECTS ?? 2500);
const BUFFER = 200;

let cp: ControlPlane;
let broker: Broker;
let proxy: SqsProxy;
let objects: Objects;
let counter = 0;

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD] }), startBroker({ queues: [] })]);
  proxy = await startSqsProxy(broker.endpoint);
  objects = new Objects(cp.kubeConfig);
});
after(async () => {
  await proxy?.close();
  await Promise.all([cp?.stop(), broker?.stop()]);
});

/** A logger that keeps every line, to count what the forwarder reported (e.g. "resync started"). */
function capturingLogger(): { logger: Logger; lines: { msg: string; [k: string]: unknown }[] } {
  const lines: { msg: string; [k: string]: unknown }[] = [];
  return { logger: createLogger({ level: 'info', write: (line) => lines.push(JSON.parse(line)) }), lines };
}

/** Runs `task` over `items` with at most `parallel` at once. */
async function inParallel<T>(items: readonly T[], parallel: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

interface Case {
  ns: string;
  queueUrl: string;
  forwarder: Forwarder;
  lines: { msg: string; [k: string]: unknown }[];
  /** The buffer depth gauge of the lane, read before every SendMessageBatch. */
  depths: number[];
}

/** A namespace and queue; a forwarder for that namespace's Gadgets sending through the proxy. */
async function startCase(overrides: (ns: string) => ForwarderConfigInput, before?: (ns: string) => Promise<void>): Promise<Case> {
  counter += 1;
  const ns = `relist-${counter}`;
  await objects.createNamespace(ns);
  const queueUrl = await broker.createQueue({ name: ns });
  await before?.(ns);
  const base = gadgetConfig(proxy.url(queueUrl), broker.region, { resyncOnStart: true, buffer: { maxMessages: BUFFER }, ...overrides(ns) });
  const { logger, lines } = capturingLogger();
  const depths: number[] = [];
  const client = new SQSClient({
    endpoint: proxy.endpoint,
    region: broker.region,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
  const real = createSqsQueue({ queueUrl: proxy.url(queueUrl), region: broker.region, client });
  let forwarder: Forwarder | undefined;
  // The real queue client; only observes the depth gauge before each send.
  const observed: QueuePort = {
    async sendBatch(entries) {
      if (forwarder) depths.push(await gauge(forwarder, 'operless_forwarder_buffer_depth'));
      return real.sendBatch(entries);
    },
    probe: () => real.probe(),
    close: () => client.destroy(),
  };
  forwarder = startForwarder(
    { ...base, primaries: base.primaries!.map((p) => ({ ...p, namespaces: [ns] })), owned: [] },
    {
      kubeConfig: cp.kubeConfig,
      queue: observed,
      logger,
    },
  );
  await forwarder.ready;
  return { ns, queueUrl, forwarder, lines, depths };
}

async function gauge(forwarder: Forwarder, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await forwarder.metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((n, v) => n + v.value, 0);
}

/** Messages per object name. */
function perKey(messages: readonly ReconcileMessage[]): Map<string, ReconcileMessage[]> {
  const by = new Map<string, ReconcileMessage[]>();
  for (const m of messages) by.set(m.name, [...(by.get(m.name) ?? []), m]);
  return by;
}

const names = (n: number) => Array.from({ length: n }, (_, i) => `g-${String(i).padStart(5, '0')}`);

test(`a resync on start of ${OBJECTS} primaries with a buffer of ${BUFFER}: every object sent once, no overflow, not repeated, the buffer at a few batches`, async () => {
  const all = names(OBJECTS);
  const c = await startCase(
    () => ({}),
    (ns) => inParallel(all, 24, (name) => objects.createGadget(ns, name)),
  );
  try {
    // Live edits while the resync runs: they go out as Modified, and cover their key's Resync when not sent yet.
    const edited = all.filter((_, i) => i % 125 === 7);
    for (const name of edited) await objects.patchGadget(c.ns, name, { spec: { size: 2 } });
    const sqs = broker.sqs();
    const got = await collect(sqs, c.queueUrl, { until: (m) => perKey(m).size >= OBJECTS, timeoutMs: 240_000 });
    // Anything more (a repeated resync, a duplicate) would arrive now.
    got.push(...(await collect(sqs, c.queueUrl, { quietMs: 4000, timeoutMs: 60_000 })));
    const by = perKey(got);
    const missing = all.filter((n) => !by.has(n));
    assert.deepEqual(missing.slice(0, 10), [], `${missing.length} objects never sent`);
    const resyncs = [...by.values()].map((ms) => ms.filter((m) => m.reason === 'Resync').length);
    assert.equal(Math.max(...resyncs), 1, 'no object was resynced twice');
    for (const name of all) {
      const ms = by.get(name)!;
      const editedOne = edited.includes(name);
      assert.ok(ms.length <= (editedOne ? 2 : 1), `${name}: ${ms.map((m) => m.reason).join(', ')}`);
      if (editedOne)
        assert.ok(
          ms.some((m) => m.reason === 'Modified'),
          `${name}: the live edit was sent: ${ms.map((m) => m.reason).join(', ')}`,
        );
    }
    assert.equal(await gauge(c.forwarder, 'operless_forwarder_messages_dropped_total'), 0, 'nothing dropped: no overflow');
    assert.equal(c.lines.filter((l) => l.msg === 'resync started').length, 1, 'one resync, not repeated');
    assert.equal(c.lines.filter((l) => l.msg.startsWith('send buffer drained after an overflow')).length, 0);
    assert.equal(c.forwarder.readiness().ok, true, c.forwarder.readiness().reasons.join('; '));
    const maxDepth = Math.max(...c.depths);
    console.log(
      `relist: ${OBJECTS} primaries, buffer ${BUFFER}: ${got.length} messages (${got.filter((m) => m.reason === 'Resync').length} Resync), buffer depth gauge max ${maxDepth} over ${c.depths.length} batches`,
    );
    assert.ok(maxDepth <= feedRoom(0, BUFFER) + MAX_BATCH_ENTRIES, `buffer depth gauge max ${maxDepth}`);
  } finally {
    await c.forwarder.stop({ graceMs: 0 });
  }
});

test('an overflow of live changes while the queue is down is healed by one resync once it drains; that resync does not overflow again', async () => {
  const c = await startCase(() => ({ resyncOnStart: false, buffer: { maxMessages: 10 } }));
  try {
    proxy.setDown(true);
    const all = names(40);
    await inParallel(all, 8, (name) => objects.createGadget(c.ns, name));
    // 40 changes, 10 places: once all are seen, 30 were dropped.
    await waitUntil(
      'every creation was seen and the buffer overflowed',
      async () => (await gauge(c.forwarder, 'operless_forwarder_messages_dropped_total', { cause: 'overflow' })) >= 30,
      { timeoutMs: 30_000 },
    );
    assert.match(c.forwarder.readiness().reasons.join('\n'), /overflowed/);
    const droppedDuringOutage = await gauge(c.forwarder, 'operless_forwarder_messages_dropped_total', { cause: 'overflow' });
    proxy.setDown(false);
    const sqs = broker.sqs();
    const got = await collect(sqs, c.queueUrl, { until: (m) => perKey(m).size >= all.length, timeoutMs: 60_000 });
    got.push(...(await collect(sqs, c.queueUrl, { quietMs: 3000, timeoutMs: 30_000 })));
    const by = perKey(got);
    assert.deepEqual(
      all.filter((n) => !by.has(n)),
      [],
      'every object sent after all',
    );
    await waitUntil('the forwarder is ready again', () => c.forwarder.readiness().ok, {
      timeoutMs: 30_000,
      context: () => c.forwarder.readiness().reasons.join('; '),
    });
    assert.equal(
      await gauge(c.forwarder, 'operless_forwarder_messages_dropped_total', { cause: 'overflow' }),
      droppedDuringOutage,
      'the healing resync dropped nothing',
    );
    assert.equal(c.lines.filter((l) => l.msg === 'resync started').length, 1, 'healed by one resync');
    for (const [name, ms] of by) assert.ok(ms.filter((m) => m.reason === 'Resync').length <= 1, `${name}: ${ms.map((m) => m.reason).join(', ')}`);
  } finally {
    proxy.setDown(false);
    await c.forwarder.stop({ graceMs: 0 });
  }
});

test('losing leadership mid-resync discards the buffer and the resync in progress; leading again resyncs every object once', async () => {
  const all = names(300);
  const c = await startCase(
    (ns) => ({
      buffer: { maxMessages: 10 },
      leaderElection: {
        enabled: true,
        namespace: ns,
        identity: `fwd-${ns}`,
        leaseName: 'relist-leader',
        leaseDurationSeconds: 3,
        renewDeadlineSeconds: 2,
        retryPeriodSeconds: 0.5,
      },
    }),
    async (ns) => {
      await inParallel(all, 24, (name) => objects.createGadget(ns, name));
      proxy.setDown(true); // the resync on becoming leader waits in the buffer and the feed
    },
  );
  try {
    assert.equal(c.forwarder.isLeader(), true);
    assert.ok(c.forwarder.pending() >= all.length - 10, `pending ${c.forwarder.pending()}`);
    // Another replica takes the Lease (as after a partition): this one must step down and discard.
    const path = `/apis/coordination.k8s.io/v1/namespaces/${c.ns}/leases/relist-leader`;
    await waitUntil(
      'the lease was taken over',
      async () => {
        const lease = await objects.api.requestJson<{ spec: Record<string, unknown> }>('GET', path);
        await objects.api.requestJson('PUT', path, {
          body: { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', renewTime: microTime(Date.now()), leaseDurationSeconds: 3 } },
        });
        return true;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    await waitUntil('the forwarder stepped down', () => !c.forwarder.isLeader(), { timeoutMs: 20_000 });
    assert.equal(c.forwarder.pending(), 0, 'buffer, coalescer and resync feed discarded');
    const discarded = c.lines.find((l) => l.msg.startsWith('discarded pending messages on losing leadership'));
    assert.ok(discarded && (discarded.dropped as number) >= all.length - 10, JSON.stringify(discarded));
    proxy.setDown(false);
    // The intruder never renews: the forwarder takes the Lease back after its duration and resyncs.
    await waitUntil('the forwarder leads again', () => c.forwarder.isLeader(), { timeoutMs: 30_000 });
    const sqs = broker.sqs();
    const got = await collect(sqs, c.queueUrl, { until: (m) => perKey(m).size >= all.length, timeoutMs: 60_000 });
    got.push(...(await collect(sqs, c.queueUrl, { quietMs: 3000, timeoutMs: 30_000 })));
    const by = perKey(got);
    assert.deepEqual(
      all.filter((n) => !by.has(n)),
      [],
      'every object sent by the new leadership',
    );
    const twice = [...by].filter(([, ms]) => ms.length > 1).map(([n]) => n);
    assert.deepEqual(twice, [], 'each object once: nothing discarded was sent after all, the resync did not repeat');
  } finally {
    proxy.setDown(false);
    await c.forwarder.stop({ graceMs: 0 });
  }
});
