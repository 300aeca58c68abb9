/**
 * The forwarder against a REAL kube-apiserver + etcd and a REAL SQS-compatible broker
 * (ElasticMQ): every change reaches the queue once — across status-only writes, owned
 * objects, bursts, API server restarts, 410 Gone and broker outages.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closedPort, startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import type { ForwarderConfigInput } from '../../src/forwarder/config/config.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { encodeMessage, newMessage, type ReconcileMessage } from '../../src/contract/message.ts';
import { API_VERSION, GADGET_CRD, WIDGET_CRD, Objects, collect, gadgetConfig, summary } from './forwarder-env.ts';

let cp: ControlPlane;
let broker: Broker;
let objects: Objects;
let counter = 0;

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD, WIDGET_CRD] }), startBroker({ queues: [] })]);
  objects = new Objects(cp.kubeConfig);
});
after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
});

/** A fresh namespace and queue per test, and a forwarder limited to that namespace. */
async function setup(overrides: ForwarderConfigInput = {}): Promise<{ ns: string; queueUrl: string; forwarder: Forwarder }> {
  counter += 1;
  const ns = `fwd-${counter}`;
  await objects.createNamespace(ns);
  const queueUrl = await broker.createQueue({ name: `fwd-${counter}` });
  const base = gadgetConfig(queueUrl, broker.region, overrides);
  const config: ForwarderConfigInput = {
    ...base,
    primaries: base.primaries!.map((p) => ({ ...p, namespaces: [ns] })),
    owned: base.owned!.map((o) => ({ ...o, namespaces: [ns] })),
  };
  const forwarder = startForwarder(config, {
    kubeConfig: cp.kubeConfig,
    queue: createSqsQueue({ queueUrl, region: broker.region, client: broker.sqs() }),
    logger: silentLogger,
  });
  await forwarder.ready;
  return { ns, queueUrl, forwarder };
}

async function metric(forwarder: Forwarder, name: string, labels: Record<string, string> = {}): Promise<number> {
  const all = await forwarder.metrics.registry.getMetricsAsJSON();
  const m = all.find((x) => x.name === name);
  return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((n, v) => n + v.value, 0);
}

test('create, update and delete of a primary: one message each, with the right reason; status-only: none', async () => {
  const { ns, queueUrl, forwarder } = await setup();
  try {
    const sqs = broker.sqs();
    const created = await objects.createGadget(ns, 'g1');
    const added = await collect(sqs, queueUrl, { quietMs: 1500 });
    assert.deepEqual(summary(added), [`Added Gadget/${ns}/g1`]);
    assert.equal(added[0]!.uid, created.metadata.uid);
    assert.equal(added[0]!.cluster, 'test');
    assert.equal(added[0]!.apiVersion, 'forwarder.test.operless.dev/v1');
    assert.equal(added[0]!.attempt, 0);

    await objects.patchGadget(ns, 'g1', { status: { phase: 'Ready' } }, 'status');
    await objects.patchGadget(ns, 'g1', { status: { phase: 'Ready', nodes: ['a'] } }, 'status');
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [], 'status-only writes must not loop back');

    await objects.patchGadget(ns, 'g1', { spec: { size: 2 } });
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [`Modified Gadget/${ns}/g1`]);

    await objects.patchGadget(ns, 'g1', { metadata: { labels: { tier: 'gold' } } });
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [`Modified Gadget/${ns}/g1`], 'label change');

    await objects.deleteGadget(ns, 'g1');
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [`Deleted Gadget/${ns}/g1`]);
    assert.ok((await metric(forwarder, 'operless_forwarder_events_filtered_total')) >= 2);
  } finally {
    await forwarder.stop();
  }
});

test('an owned Deployment created, changed (status too) or deleted: a message for its owner; created by a function, only from its first change by another writer', async () => {
  const { ns, queueUrl, forwarder } = await setup();
  try {
    const sqs = broker.sqs();
    const gadget = await objects.createGadget(ns, 'owner');
    await collect(sqs, queueUrl, { until: (m) => m.length >= 1 });
    await objects.createOwnedDeployment(ns, 'child', { name: 'owner', uid: gadget.metadata.uid });
    const onCreate = await collect(sqs, queueUrl, { quietMs: 1500 });
    assert.deepEqual(summary(onCreate), [`Owned Gadget/${ns}/owner`]);
    assert.equal(onCreate[0]!.uid, gadget.metadata.uid, 'the owner uid from the owner reference');

    await objects.api.requestJson('PATCH', `/apis/apps/v1/namespaces/${ns}/deployments/child/status`, {
      body: { status: { observedGeneration: 1, replicas: 1 } },
      contentType: 'application/merge-patch+json',
    });
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [`Owned Gadget/${ns}/owner`], 'owned status change forwarded');

    await objects.api.requestJson('DELETE', `/apis/apps/v1/namespaces/${ns}/deployments/child`);
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [`Owned Gadget/${ns}/owner`]);

    // Created by a function (an Operless field manager): the echo of the reconcile's own
    // write sends nothing; the status its controller writes next does.
    await objects.createOwnedDeployment(ns, 'made-by-reconcile', { name: 'owner', uid: gadget.metadata.uid }, 'operless-gadget');
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [], 'no message for the creation echo');
    await objects.api.requestJson('PATCH', `/apis/apps/v1/namespaces/${ns}/deployments/made-by-reconcile/status`, {
      body: { status: { observedGeneration: 1, replicas: 1 } },
      contentType: 'application/merge-patch+json',
    });
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [`Owned Gadget/${ns}/owner`], 'its status change is forwarded');
  } finally {
    await forwarder.stop();
  }
});

test('many rapid updates of one object are coalesced', async () => {
  const { ns, queueUrl, forwarder } = await setup({ coalesceWindowMs: 3000 });
  try {
    const sqs = broker.sqs();
    await objects.createGadget(ns, 'burst');
    let last: Record<string, any> = {};
    for (let i = 0; i < 20; i++) last = await objects.patchGadget(ns, 'burst', { spec: { size: i } });
    // How many messages 21 changes become depends on how many 3 s windows the PATCHes span
    // (speed: bench/). What does not: once the forwarder has seen all 21 changes and holds
    // nothing more (no window, no send buffer), every message it sent is here — so the test
    // waits for exactly that, then asserts that the coalescer merged changes.
    const messages: ReconcileMessage[] = [];
    const coalesced = () => metric(forwarder, 'operless_forwarder_messages_coalesced_total');
    await waitUntil(
      'the forwarder saw the 21 changes, holds none, and every message it sent was received',
      async () => {
        messages.push(...(await collect(sqs, queueUrl, { timeoutMs: 1000 })));
        return (
          (await metric(forwarder, 'operless_forwarder_messages_enqueued_total')) === 21 &&
          // Nothing held: neither in a coalescing window (the trailing message waits there up to
          // 3 s after the last PATCH) nor in the send buffer. The buffer-depth gauge alone missed the
          // window and let a run end with the trailing message still held (seen in CI).
          forwarder.pending() === 0 &&
          (await metric(forwarder, 'operless_forwarder_messages_sent_total')) === messages.length
        );
      },
      { timeoutMs: 60_000, context: () => `messages so far: ${summary(messages).join(', ')}` },
    );
    assert.ok(
      (await coalesced()) > 0 && messages.length < 21,
      `21 changes became ${messages.length} messages (${await coalesced()} merged by the coalescer): ${summary(messages)}`,
    );
    // The trailing message stands for several changes (no single resourceVersion names them),
    // unless a slow machine left only the newest change in the last window.
    assert.ok([undefined, last.metadata.resourceVersion].includes(messages.at(-1)!.resourceVersion), `last message: ${JSON.stringify(messages.at(-1))}`);
    assert.ok(
      messages.some((m) => m.resourceVersion === undefined),
      'some message merged several changes',
    );
    assert.equal(messages.at(-1)!.reason, 'Modified');
  } finally {
    await forwarder.stop();
  }
});

test('a backlogged queue widens the coalescing window (its depth read from the broker); every change still arrives', async () => {
  const { ns, queueUrl, forwarder } = await setup({ coalesceWindowMs: 200, coalesceMaxWindowMs: 20_000 });
  try {
    const sqs = broker.sqs();
    // A backlog nobody consumes: 300 messages about another object already wait in the queue.
    const filler = encodeMessage(newMessage({ cluster: 'test', apiVersion: API_VERSION, kind: 'Gadget', namespace: ns, name: 'filler' }, 'Resync'));
    for (let i = 0; i < 30; i++) {
      await sqs.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: Array.from({ length: 10 }, (_, j) => ({ Id: `f${j}`, MessageBody: filler })) }),
      );
    }
    await objects.createGadget(ns, 'slow');
    // The lane samples its queue every 2 s once it forwarded something; two samples give a drain rate (none here).
    const deadline = Date.now() + 20_000;
    let window = await metric(forwarder, 'operless_forwarder_coalescing_window_seconds');
    while (window <= 0.2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      window = await metric(forwarder, 'operless_forwarder_coalescing_window_seconds');
    }
    assert.equal(window, 20, 'nothing drains: the window is the maximum');
    // Ten changes 300 ms apart: with the configured 200 ms window each would be its own message.
    let lastVersion: string | undefined;
    for (let i = 0; i < 10; i++) {
      lastVersion = (await objects.patchGadget(ns, 'slow', { spec: { size: i } })).metadata.resourceVersion;
      await new Promise((r) => setTimeout(r, 300));
    }
    // Stopping flushes the held trailing message: nothing is dropped by the long window.
    const { unsent } = await forwarder.stop();
    assert.equal(unsent, 0);
    const ours = (await collect(sqs, queueUrl, { quietMs: 3000, timeoutMs: 60_000 })).filter((m) => m.name === 'slow');
    assert.deepEqual(
      ours.map((m) => m.reason),
      ['Added', 'Modified', 'Modified'],
      `the leading change and one trailing message: ${summary(ours)}`,
    );
    assert.ok([undefined, lastVersion].includes(ours.at(-1)!.resourceVersion), 'the trailing message stands for the newest change');
  } finally {
    await forwarder.stop();
  }
});

test('API server restarted mid-stream: every change still arrives', async () => {
  const { ns, queueUrl, forwarder } = await setup();
  try {
    const sqs = broker.sqs();
    for (const n of ['a', 'b']) await objects.createGadget(ns, n);
    await collect(sqs, queueUrl, { until: (m) => m.length >= 2 });
    await cp.restartApiServer();
    await objects.createGadget(ns, 'c');
    await objects.patchGadget(ns, 'a', { spec: { size: 5 } });
    await objects.deleteGadget(ns, 'b');
    const messages = await collect(sqs, queueUrl, { until: (m) => m.length >= 3, timeoutMs: 60_000 });
    assert.deepEqual(summary(messages).sort(), [`Added Gadget/${ns}/c`, `Deleted Gadget/${ns}/b`, `Modified Gadget/${ns}/a`]);
    assert.ok((await metric(forwarder, 'operless_forwarder_watch_restarts_total')) >= 1);
    assert.equal(forwarder.readiness().ok, true, forwarder.readiness().reasons.join('; '));
  } finally {
    await forwarder.stop();
  }
});

test('forced 410 Gone (etcd compaction + API server restart): relist without a flood, then business as usual', async () => {
  const { ns, queueUrl, forwarder } = await setup();
  try {
    const sqs = broker.sqs();
    for (let i = 0; i < 10; i++) await objects.createGadget(ns, `g${i}`);
    assert.equal((await collect(sqs, queueUrl, { until: (m) => m.length >= 10 })).length, 10);
    // Move etcd's revision past what this forwarder has seen, in a namespace it does not watch.
    const other = `other-${counter}`;
    await objects.createNamespace(other);
    for (let i = 0; i < 5; i++) await objects.createGadget(other, `x${i}`);
    await cp.compactEtcd();
    await cp.restartApiServer();
    for (let i = 0; i < 100 && (await metric(forwarder, 'operless_forwarder_relists_total', { cause: 'gone' })) === 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok((await metric(forwarder, 'operless_forwarder_relists_total', { cause: 'gone' })) >= 1, 'the forwarder saw 410 Gone and relisted');
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 2000 })), [], 'no re-flood of unchanged objects');
    await objects.patchGadget(ns, 'g3', { spec: { size: 9 } });
    assert.deepEqual(summary(await collect(sqs, queueUrl, { quietMs: 1500 })), [`Modified Gadget/${ns}/g3`]);
  } finally {
    await forwarder.stop();
  }
});

test('broker down then back: messages buffered during the outage are all delivered', async () => {
  const { ns, queueUrl, forwarder } = await setup();
  try {
    // The harness's stop() is final, so the outage is a restart: wait until the broker is
    // really down, change objects while it boots again, then expect every change.
    const probe = createSqsQueue({ queueUrl, region: broker.region, client: broker.sqs() });
    const restarting = broker.restart();
    for (let i = 0; i < 200; i++) {
      if (
        await probe.probe().then(
          () => false,
          () => true,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 25));
    }
    for (const n of ['p', 'q', 'r']) await objects.createGadget(ns, n);
    await restarting;
    const messages = await collect(broker.sqs(), queueUrl, { until: (m) => m.length >= 3, timeoutMs: 30_000 });
    assert.deepEqual(
      summary(messages).sort(),
      ['p', 'q', 'r'].map((n) => `Added Gadget/${ns}/${n}`),
    );
    assert.ok((await metric(forwarder, 'operless_forwarder_send_errors_total', { kind: 'request' })) >= 1, 'the sends really failed during the outage');
    for (let i = 0; i < 50 && !forwarder.readiness().ok; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(forwarder.readiness().ok, true, forwarder.readiness().reasons.join('; '));
  } finally {
    await forwarder.stop({ graceMs: 0 });
  }
});

test('an unreachable queue: readiness says so, changes stay buffered, stop reports them unsent', async () => {
  counter += 1;
  const ns = `fwd-${counter}`;
  await objects.createNamespace(ns);
  // A port that was free a moment ago and is closed: nothing listens there.
  const deadEndpoint = `http://127.0.0.1:${await closedPort()}`;
  const deadQueue = `${deadEndpoint}/000000000000/nowhere`;
  const config = gadgetConfig(deadQueue, 'us-east-1');
  const forwarder = startForwarder(
    { ...config, primaries: config.primaries!.map((p) => ({ ...p, namespaces: [ns] })), owned: [] },
    {
      kubeConfig: cp.kubeConfig,
      queue: createSqsQueue({ queueUrl: deadQueue, region: 'us-east-1', endpoint: deadEndpoint }),
      logger: silentLogger,
    },
  );
  try {
    await forwarder.ready;
    await objects.createGadget(ns, 'stuck');
    for (let i = 0; i < 100 && forwarder.readiness().ok; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(forwarder.readiness().reasons.join('\n').includes('queue unreachable: nowhere'), forwarder.readiness().reasons.join('; '));
    const res = await fetch(`${forwarder.url}/readyz`);
    assert.equal(res.status, 503);
    const body = await res.text();
    assert.match(body, /queue unreachable: nowhere /);
    assert.ok(!body.includes('000000000000') && !body.includes(deadEndpoint), `/readyz names the queue, not its URL or account: ${body}`);
    assert.equal((await fetch(`${forwarder.url}/healthz`)).status, 200, 'a queue outage is not a reason to restart the pod');
  } finally {
    const { unsent } = await forwarder.stop({ graceMs: 200 });
    assert.equal(unsent, 1);
  }
});

/** Two primaries, each with its own queue: Gadgets (and their Deployments) → A, Widgets (and their ConfigMaps) → B. */
async function twoQueueSetup(
  queueB: (ns: string) => Promise<{ url: string; endpoint?: string }>,
): Promise<{ ns: string; queueA: string; queueB: string; forwarder: Forwarder }> {
  counter += 1;
  const ns = `fwd-${counter}`;
  await objects.createNamespace(ns);
  const queueA = await broker.createQueue({ name: `fwd-${counter}-gadgets` });
  const b = await queueB(ns);
  const base = gadgetConfig(queueA, broker.region);
  const forwarder = startForwarder(
    {
      ...base,
      primaries: [
        { ...base.primaries![0]!, namespaces: [ns] }, // no queueUrl: the default queue.url (A)
        { apiVersion: base.primaries![0]!.apiVersion, kind: 'Widget', plural: 'widgets', namespaced: false, queueUrl: b.url },
      ],
      owned: [
        { ...base.owned![0]!, namespaces: [ns] },
        { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, namespaces: [ns] },
      ],
    },
    {
      kubeConfig: cp.kubeConfig,
      // One SQS client per queue, as in a cluster (here both point at the broker, or B at nothing).
      queues: (url) =>
        url === b.url && b.endpoint
          ? createSqsQueue({ queueUrl: url, region: broker.region, endpoint: b.endpoint })
          : createSqsQueue({ queueUrl: url, region: broker.region, client: broker.sqs() }),
      logger: silentLogger,
    },
  );
  await forwarder.ready;
  return { ns, queueA, queueB: b.url, forwarder };
}

test('two kinds, two queues: each kind and its owned objects reach only their own queue', async () => {
  const { ns, queueA, queueB, forwarder } = await twoQueueSetup(async (n) => ({ url: await broker.createQueue({ name: `${n}-widgets` }) }));
  const widget = `w-${ns}`;
  try {
    const sqs = broker.sqs();
    const gadget = await objects.createGadget(ns, 'g1');
    const w = await objects.createWidget(widget);
    await objects.createOwnedDeployment(ns, 'g1-dep', { name: 'g1', uid: gadget.metadata.uid });
    await objects.createOwnedConfigMap(ns, 'w-cm', { kind: 'Widget', name: widget, uid: w.metadata.uid });
    const [a, b] = await Promise.all([collect(sqs, queueA, { quietMs: 2000 }), collect(sqs, queueB, { quietMs: 2000 })]);
    assert.deepEqual(new Set(a.map((m) => m.kind)), new Set(['Gadget']), `queue A: ${summary(a).join(', ')}`);
    assert.deepEqual(new Set(b.map((m) => m.kind)), new Set(['Widget']), `queue B: ${summary(b).join(', ')}`);
    assert.ok(summary(a).includes(`Added Gadget/${ns}/g1`), summary(a).join(', '));
    assert.ok(summary(b).includes(`Added Widget//${widget}`), summary(b).join(', '));

    // A change of an owned object alone: its owner's message, on its owner's queue.
    await objects.api.requestJson('PATCH', `/api/v1/namespaces/${ns}/configmaps/w-cm`, {
      body: { data: { a: '2' } },
      contentType: 'application/merge-patch+json',
    });
    const [a2, b2] = await Promise.all([collect(sqs, queueA, { quietMs: 1500 }), collect(sqs, queueB, { quietMs: 1500 })]);
    assert.deepEqual(summary(a2), [], 'nothing for the Gadget queue');
    assert.deepEqual(summary(b2), [`Owned Widget//${widget}`]);
    await objects.patchGadget(ns, 'g1', { spec: { size: 3 } });
    await objects.patchWidget(widget, { spec: { size: 3 } });
    const [a3, b3] = await Promise.all([collect(sqs, queueA, { quietMs: 1500 }), collect(sqs, queueB, { quietMs: 1500 })]);
    assert.deepEqual(summary(a3), [`Modified Gadget/${ns}/g1`]);
    assert.deepEqual(summary(b3), [`Modified Widget//${widget}`]);

    const sent = await forwarder.metrics.registry.getMetricsAsJSON();
    const byQueue = new Set(sent.find((m) => m.name === 'operless_forwarder_messages_sent_total')!.values.map((v) => v.labels.queue));
    assert.deepEqual(byQueue, new Set([`fwd-${counter}-gadgets`, `${ns}-widgets`]), 'sent counted per queue');
    assert.equal(forwarder.readiness().ok, true, forwarder.readiness().reasons.join('; '));
  } finally {
    await forwarder.stop({ graceMs: 0 });
    await objects.deleteWidget(widget).catch(() => {});
  }
});

test("two queues, one down: the other queue's messages still flow; readiness names the queue that is down", async () => {
  const deadEndpoint = `http://127.0.0.1:${await closedPort()}`; // free a moment ago, closed: nothing listens
  const dead = `${deadEndpoint}/000000000000/nowhere`;
  const { ns, queueA, forwarder } = await twoQueueSetup(async () => ({ url: dead, endpoint: deadEndpoint }));
  const widget = `w-${ns}`;
  try {
    await objects.createWidget(widget);
    await objects.createGadget(ns, 'g1');
    assert.deepEqual(summary(await collect(broker.sqs(), queueA, { quietMs: 1500 })), [`Added Gadget/${ns}/g1`], 'queue A is not held up by queue B');
    for (let i = 0; i < 100 && forwarder.readiness().ok; i++) await new Promise((r) => setTimeout(r, 100));
    const reasons = forwarder.readiness().reasons.join('\n');
    assert.ok(reasons.includes('queue unreachable: nowhere'), reasons);
    assert.doesNotMatch(reasons, new RegExp(`queue unreachable: ${queueA.split('/').at(-1)} `));
    assert.equal(forwarder.pendingByQueue().get(queueA), 0);
    assert.equal(forwarder.pendingByQueue().get(dead), 1, 'the Widget message waits for its queue');
  } finally {
    const { unsent } = await forwarder.stop({ graceMs: 200 });
    assert.equal(unsent, 1);
    await objects.deleteWidget(widget).catch(() => {});
  }
});
