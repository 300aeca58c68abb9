/**
 * The forwarder as the process the image runs (the esbuild bundle, as a child process),
 * against a REAL API server and broker: SIGTERM flushes everything pending and exits 0;
 * with two replicas only the leader sends, and SIGKILLing it hands over to the other
 * replica with nothing missed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Broker, ControlPlane } from '../../src/testing/index.ts';
import { startForwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import type { ForwarderConfigInput } from '../../src/forwarder/config/config.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { GADGET_CRD, Objects, collect, gadgetConfig, startBundleEnv, summary, type BundleEnv, type LoggedChild } from './forwarder-env.ts';

let env: BundleEnv;
let cp: ControlPlane;
let broker: Broker;
let objects: Objects;

before(async () => {
  env = await startBundleEnv({ name: 'fwd-process', crds: [GADGET_CRD], queues: [{ name: 'sigterm' }, { name: 'handover' }] });
  ({ cp, broker } = env);
  objects = new Objects(cp.kubeConfig);
});
after(() => env?.stop());

type Running = LoggedChild;

const runBundle = (name: string, config: ForwarderConfigInput): Running => env.runBundle(name, config);

async function metricSum(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

test('SIGTERM: pending messages are flushed to the queue and the process exits 0', async () => {
  const queueUrl = broker.queueUrl('sigterm');
  await objects.createNamespace('sigterm');
  const base = gadgetConfig(queueUrl, broker.region, { coalesceWindowMs: 60_000 });
  const run = runBundle('sigterm', { ...base, primaries: base.primaries!.map((p) => ({ ...p, namespaces: ['sigterm'] })), owned: [] });
  const running = await run.line(/forwarder running/);
  const url = String(running.probes);
  // Each key's first change leaves at once (leading edge); its next change is held by the
  // 60 s window as a trailing message, which only SIGTERM's flush can send.
  for (const n of ['s1', 's2', 's3']) await objects.createGadget('sigterm', n);
  for (let i = 0; i < 100 && (await metricSum(url, 'operless_forwarder_messages_sent_total')) < 3; i++) await new Promise((r) => setTimeout(r, 100));
  for (const n of ['s1', 's2', 's3']) await objects.patchGadget('sigterm', n, { spec: { size: 2 } });
  for (let i = 0; i < 100 && (await metricSum(url, 'operless_forwarder_messages_enqueued_total')) < 6; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(
    await metricSum(url, 'operless_forwarder_messages_sent_total'),
    3,
    'the leading edges were sent; the changes after them are still held by the 60 s window',
  );
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0);
  const messages = await collect(broker.sqs(), queueUrl, { until: (m) => m.length >= 6 });
  assert.deepEqual(summary(messages).sort(), [
    ...['s1', 's2', 's3'].map((n) => `Added Gadget/sigterm/${n}`),
    ...['s1', 's2', 's3'].map((n) => `Modified Gadget/sigterm/${n}`),
  ]);
});

test('two replicas: only the leader sends; SIGKILL of the leader hands over with nothing missed', async () => {
  const queueUrl = broker.queueUrl('handover');
  const ns = 'handover';
  await objects.createNamespace(ns);
  const base = gadgetConfig(queueUrl, broker.region, { resyncOnStart: true });
  const config = (identity: string): ForwarderConfigInput => ({
    ...base,
    primaries: base.primaries!.map((p) => ({ ...p, namespaces: [ns] })),
    owned: base.owned!.map((o) => ({ ...o, namespaces: [ns] })),
    leaderElection: {
      enabled: true,
      namespace: 'default',
      leaseName: 'handover',
      identity,
      leaseDurationSeconds: 3,
      renewDeadlineSeconds: 2,
      retryPeriodSeconds: 0.5,
    },
  });
  const a = runBundle('replica-a', config('replica-a'));
  await a.line(/became the leader/);
  await a.line(/forwarder running/);
  const b = startForwarder(config('replica-b'), {
    kubeConfig: cp.kubeConfig,
    queue: createSqsQueue({ queueUrl, region: broker.region, client: broker.sqs() }),
    logger: silentLogger,
  });
  try {
    await b.ready;
    assert.equal(b.isLeader(), false);
    await objects.createGadget(ns, 'before');
    const first = await collect(broker.sqs(), queueUrl, { quietMs: 2000 });
    assert.deepEqual(summary(first), [`Added Gadget/${ns}/before`], 'exactly one replica sent it');

    a.child.kill('SIGKILL');
    await a.exited;
    // Changes while nobody leads.
    await objects.createGadget(ns, 'during');
    await objects.patchGadget(ns, 'before', { spec: { size: 7 } });
    for (let i = 0; i < 150 && !b.isLeader(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(b.isLeader(), true, 'the standby took over after the lease expired');
    const after = await collect(broker.sqs(), queueUrl, { until: (m) => ['before', 'during'].every((n) => m.some((x) => x.name === n)), timeoutMs: 20_000 });
    const names = new Set(after.map((m) => m.name));
    assert.ok(names.has('during') && names.has('before'), `nothing missed: ${summary(after)}`);
    await objects.patchGadget(ns, 'during', { spec: { size: 3 } });
    const next = await collect(broker.sqs(), queueUrl, { quietMs: 1500 });
    assert.deepEqual(summary(next), [`Modified Gadget/${ns}/during`], 'the new leader watches on');
  } finally {
    await b.stop();
  }
});
