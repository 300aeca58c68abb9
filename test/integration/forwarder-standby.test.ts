/**
 * The warm standby, against a REAL kube-apiserver + etcd and a REAL SQS-compatible broker
 * (ElasticMQ), with two forwarder processes (the bundle the image runs): SIGKILL of the leader
 * hands over to the follower, which
 * - makes no LIST (the API server's own `apiserver_request_total{verb="LIST"}` of the watched
 *   resources does not move from the kill to the end),
 * - forwards the change the old leader saw and still held (a 60 s coalescing window kept its
 *   trailing message unsent, so the leader's watermark stayed before it) and a change made
 *   while no replica led,
 * - and sends nothing else: no `Resync` of the objects the old leader had forwarded.
 * The same scenario with `warmStandby: false` (the cold standby, the behaviour before) is the
 * contrast: the new leader lists and resyncs every Gadget.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import type { ForwarderConfigInput } from '../../src/forwarder/config/config.ts';
import { leaseClient } from '../../src/kube/lease.ts';
import { decodeWatermark } from '../../src/forwarder/control/handover.ts';
import { GADGET_CRD, Objects, collect, gadgetConfig, startBundleEnv, summary, type BundleEnv, type LoggedChild } from './forwarder-env.ts';

let env: BundleEnv;
let cp: ControlPlane;
let broker: Broker;
let objects: Objects;

before(async () => {
  env = await startBundleEnv({ name: 'fwd-standby', crds: [GADGET_CRD], queues: [{ name: 'warm' }, { name: 'cold' }] });
  ({ cp, broker } = env);
  objects = new Objects(cp.kubeConfig);
});
after(() => env?.stop());

const runBundle = (name: string, config: ForwarderConfigInput): LoggedChild => env.runBundle(name, config);

/** LIST requests the API server has served for the watched resources, by its own count. */
async function lists(): Promise<number> {
  const r = await cp.kubectl(['get', '--raw', '/metrics']);
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('apiserver_request_total{') && l.includes('verb="LIST"') && /resource="(gadgets|deployments)"/.test(l))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function metricSum(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

/** Whether the watermark the leader last wrote on the Lease covers every stream at the resourceVersion the follower listed it. */
async function covers(leaseName: string, follower: LoggedChild): Promise<boolean> {
  const { watermark } = decodeWatermark(await leaseClient(objects.api).get('default', leaseName));
  const listed = follower.lines.filter((l) => /watch synced/.test(String(l.msg)));
  return listed.length > 0 && listed.every((l) => BigInt(watermark.get(String(l.path)) ?? '0') >= BigInt(String(l.resourceVersion)));
}

function unownedDeployment(ns: string): Record<string, unknown> {
  const labels = { app: 'unowned' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'unowned', namespace: ns },
    spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'none' }] } } },
  };
}

async function failover(mode: 'warm' | 'cold'): Promise<{ after: string[]; lists: number }> {
  const ns = `standby-${mode}`;
  const queueUrl = broker.queueUrl(mode);
  await objects.createNamespace(ns);
  const base = gadgetConfig(queueUrl, broker.region, { resyncOnStart: true, coalesceWindowMs: 60_000, coalesceMaxWindowMs: 60_000 });
  const config = (identity: string): ForwarderConfigInput => ({
    ...base,
    primaries: base.primaries!.map((p) => ({ ...p, namespaces: [ns] })),
    owned: base.owned!.map((o) => ({ ...o, namespaces: [ns] })),
    // No watch ends by itself during the test (an idle watch's close costs a `limit=1` LIST).
    watch: { backoffInitialMs: 100, backoffMaxMs: 2000, silenceTimeoutSeconds: 900, serverTimeoutSeconds: 600 },
    leaderElection: {
      enabled: true,
      namespace: 'default',
      leaseName: ns,
      identity,
      leaseDurationSeconds: 3,
      renewDeadlineSeconds: 2,
      retryPeriodSeconds: 0.5,
      warmStandby: mode === 'warm',
    },
  });
  const names = ['g1', 'g2', 'g3', 'g4', 'g5'];
  for (const n of names) await objects.createGadget(ns, n);
  const a = runBundle(`${mode}-a`, config(`${mode}-a`));
  await a.line(/became the leader/);
  const probes = String((await a.line(/forwarder running/)).probes);
  const b = runBundle(`${mode}-b`, config(`${mode}-b`));
  await b.line(/another replica leads; standing by/);
  // The leader's start-up resync: every Gadget once.
  const resync = await collect(broker.sqs(), queueUrl, { until: (m) => m.length >= names.length, quietMs: 1500 });
  assert.deepEqual(
    summary(resync).sort(),
    names.map((n) => `Resync Gadget/${ns}/${n}`),
  );
  if (mode === 'warm') {
    await waitUntil('the follower watches', () => b.lines.filter((l) => /watch synced/.test(String(l.msg))).length === 2, { timeoutMs: 30_000 });
    // A stream's watermark moves with what it sees (an event, a bookmark): the Deployment stream gets
    // an event after the follower listed (an unowned Deployment: filtered, no message), the Gadget
    // stream gets `held`. Until then, a takeover would replay from the follower's store (no LIST either).
    await objects.api.requestJson('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, { body: unownedDeployment(ns) });
  }
  // Seen by the leader, held unsent by its 60 s window (the key's `Added` went out at once and
  // opened the window, so the edit is a trailing message): its watermark stays before it.
  await objects.createGadget(ns, 'held');
  await collect(broker.sqs(), queueUrl, { until: (m) => m.some((x) => x.name === 'held') });
  if (mode === 'warm') await waitUntil("the leader's watermark covers what the follower listed", () => covers(ns, b), { timeoutMs: 30_000 });
  await objects.patchGadget(ns, 'held', { spec: { size: 9 } });
  await waitUntil('the leader holds the edit', async () => (await metricSum(probes, 'operless_forwarder_messages_enqueued_total')) === names.length + 2, {
    timeoutMs: 30_000,
  });
  assert.equal(await metricSum(probes, 'operless_forwarder_messages_sent_total'), names.length + 1, 'the edit is held, not sent');

  const listsBefore = await lists();
  a.child.kill('SIGKILL');
  await a.exited;
  await objects.createGadget(ns, 'during');
  await b.line(/became the leader/, 30_000);
  const afterTakeover = await collect(broker.sqs(), queueUrl, {
    until: (m) => ['held', 'during'].every((n) => m.some((x) => x.name === n)),
    quietMs: 3000,
    timeoutMs: 30_000,
  });
  const listed = (await lists()) - listsBefore;
  b.child.kill('SIGTERM');
  assert.equal(await b.exited, 0);
  const takeover = b.lines.find((l) => /took over with a warm store/.test(String(l.msg)));
  if (mode === 'warm') assert.deepEqual([takeover?.replayedChanges, takeover?.resyncedFromStore], [2, []], JSON.stringify(takeover));
  else assert.equal(takeover, undefined);
  return { after: summary(afterTakeover).sort(), lists: listed };
}

test('warm standby: SIGKILL of the leader; the follower takes over without a LIST and forwards only what the old leader had not', {
  timeout: 180_000,
}, async () => {
  const { after, lists } = await failover('warm');
  assert.equal(lists, 0, 'no LIST of the watched resources after the kill');
  assert.deepEqual(
    after,
    [`Added Gadget/standby-warm/during`, `Modified Gadget/standby-warm/held`],
    'the held edit and the change made during the failover, and nothing the old leader had sent',
  );
});

test('cold standby (warmStandby: false): the new leader lists and resyncs every Gadget', { timeout: 180_000 }, async () => {
  const { after, lists } = await failover('cold');
  assert.ok(lists >= 2, `the new leader lists Gadgets and Deployments: ${lists}`);
  assert.deepEqual(
    after,
    ['during', 'g1', 'g2', 'g3', 'g4', 'g5', 'held'].map((n) => `Resync Gadget/standby-cold/${n}`),
  );
});
