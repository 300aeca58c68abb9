/**
 * WatchStream, directly, against a REAL kube-apiserver + etcd — through a loopback fault
 * proxy (test/support/kube-fault-proxy.ts) where a fault must be injected: a silent
 * (half-open) watch, bookmarks, 410 Gone after compaction, a server behind our
 * resourceVersion (504 Too large resource version, or the silent watch kube-apiserver
 * really gives), a resync requested during a LIST, stop() during backoff, and an idle
 * healthy watch that must never log a WARN; and what a stream asks the server for (metadata
 * only, unless its watch reads more).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, waitUntil, type ControlPlane } from '../../src/testing/index.ts';
import { createKubeApi, PARTIAL_METADATA_LIST } from '../../src/kube/api.ts';
import { snapshotOf } from '../../src/forwarder/source/snapshot.ts';
import { createForwarderMetrics, type ForwarderMetrics } from '../../src/forwarder/metrics.ts';
import type { ResolvedWatch } from '../../src/forwarder/source/watches.ts';
import { WatchStream, type ListResult, type WatchStreamOptions } from '../../src/forwarder/source/watcher.ts';
import { createLogger } from '../../src/observability/log.ts';
import type { Change } from '../../src/forwarder/source/store.ts';
import { startKubeFaultProxy, type KubeFaultProxy } from '../support/kube-fault-proxy.ts';
import { API_VERSION, GADGET_CRD, GROUP, Objects } from './forwarder-env.ts';

let cp: ControlPlane;
let proxy: KubeFaultProxy;
let objects: Objects;
let counter = 0;

before(async () => {
  cp = await startControlPlane({ crds: [GADGET_CRD] });
  proxy = await startKubeFaultProxy(cp);
  objects = new Objects(cp.kubeConfig);
});
after(async () => {
  await proxy?.close();
  await cp?.stop();
});

interface Harness {
  readonly ns: string;
  readonly stream: WatchStream;
  readonly lists: ListResult[];
  readonly changes: Change[];
  readonly lines: Record<string, unknown>[];
  readonly warnings: () => Record<string, unknown>[];
  readonly metrics: ForwarderMetrics;
  /** The proxy's record of this stream's requests (its namespace only). */
  readonly requests: (kind: 'watch' | 'list') => typeof proxy.requests;
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A fresh namespace and a WatchStream on its Gadgets through the proxy (not started). */
async function harness(overrides: Partial<WatchStreamOptions> = {}): Promise<Harness> {
  counter += 1;
  const ns = `ws-${counter}`;
  await objects.createNamespace(ns);
  const lists: ListResult[] = [];
  const changes: Change[] = [];
  const lines: Record<string, unknown>[] = [];
  const metrics = createForwarderMetrics();
  const watch: ResolvedWatch = {
    role: 'primary',
    apiVersion: API_VERSION,
    kind: 'Gadget',
    plural: 'gadgets',
    namespaced: true,
    namespaces: [ns],
    triggers: ['generation'],
    objectFields: [],
  } as unknown as ResolvedWatch;
  const stream = new WatchStream({
    api: createKubeApi(proxy.kubeConfig()),
    watch,
    namespace: ns,
    silenceTimeoutMs: 75_000,
    serverTimeoutSeconds: 60,
    backoffInitialMs: 100,
    backoffMaxMs: 1000,
    listPageSize: 500,
    resyncFirstList: false,
    metrics,
    log: createLogger({ level: 'debug', write: (l) => lines.push(JSON.parse(l)) }),
    onList: (r) => lists.push(r),
    onChange: (c) => changes.push(c),
    ...overrides,
  });
  const path = `/apis/${API_VERSION}/namespaces/${ns}/gadgets`;
  return {
    ns,
    stream,
    lists,
    changes,
    lines,
    metrics,
    warnings: () => lines.filter((l) => l.level === 'warn'),
    requests: (kind) =>
      proxy.requests.filter((r) => r.path === path && (r.query.get('watch') === 'true') === (kind === 'watch') && r.query.get('limit') !== '1'),
    async metric(name, labels = {}) {
      const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
      return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((n, v) => n + v.value, 0);
    },
    async [Symbol.asyncDispose]() {
      await stream.stop();
    },
  };
}

const watchPath = (ns: string) => new RegExp(`^/apis/${API_VERSION.replace(/\./g, '\\.')}/namespaces/${ns}/gadgets$`);

test('a watch that goes silent (a half-open connection) is restarted from the same resourceVersion, with one WARN', async () => {
  await using h = await harness({ silenceTimeoutMs: 2_000 });
  const remove = proxy.inject({ path: watchPath(h.ns), watch: true, times: 1, action: { stall: true } });
  try {
    h.stream.start();
    await h.stream.whenSynced;
    await waitUntil('the silent watch was replaced by a second one', () => h.requests('watch').length >= 2);
    const [first, second] = h.requests('watch');
    assert.equal(first!.handled, 'stall');
    assert.equal(second!.query.get('resourceVersion'), first!.query.get('resourceVersion'), 'resumed, not relisted');
    assert.equal(h.requests('list').length, 1);
    assert.equal(await h.metric('operless_forwarder_watch_restarts_total', { cause: 'silence' }), 1);
    assert.equal(h.warnings().filter((w) => /silent/.test(String(w.msg))).length, 1);
    await objects.createGadget(h.ns, 'after-silence');
    await waitUntil('the new watch delivers events', () => h.changes.some((c) => c.current.name === 'after-silence'));
  } finally {
    remove();
  }
});

test('an idle, healthy watch is closed by the server inside the silence timeout: restarts, no WARN', async () => {
  // The old defaults in small: a server timeout far above the silence timeout. kube-apiserver
  // sends no bookmark on a watch of a kind it saw no event of, so asking it for 300 s made
  // every idle watch look dead after 4 s (main: a WARN "watch silent for too long" each time).
  await using h = await harness({ silenceTimeoutMs: 4_000, serverTimeoutSeconds: 300 });
  h.stream.start();
  await h.stream.whenSynced;
  await waitUntil('the idle watch was restarted twice', async () => (await h.metric('operless_forwarder_watch_restarts_total')) >= 2, { timeoutMs: 30_000 });
  assert.deepEqual(h.warnings(), [], 'no WARN for a healthy idle watch');
  assert.equal(await h.metric('operless_forwarder_watch_restarts_total', { cause: 'silence' }), 0);
  assert.ok((await h.metric('operless_forwarder_watch_restarts_total', { cause: 'closed' })) >= 2, 'closed by the server at its timeout');
  assert.ok(
    h.requests('watch').every((r) => Number(r.query.get('timeoutSeconds')) < 4),
    'every watch asked the server to close it inside the silence timeout',
  );
});

test('a metadata-only stream lists and watches PartialObjectMetadata: no spec or status crosses the wire, the snapshots are those of the whole objects', async () => {
  await using h = await harness();
  await objects.createGadget(h.ns, 'listed', { size: 1, payload: 'x'.repeat(2000) });
  await objects.patchGadget(h.ns, 'listed', { status: { ready: true } }, 'status');
  // What kube-apiserver answers for a custom resource's LIST under that media type.
  const list = await objects.api.requestJson<{ kind: string; items: Record<string, unknown>[] }>('GET', `/apis/${API_VERSION}/namespaces/${h.ns}/gadgets`, {
    accept: PARTIAL_METADATA_LIST,
  });
  assert.equal(list.kind, 'PartialObjectMetadataList');
  assert.deepEqual(Object.keys(list.items[0]!).sort(), ['apiVersion', 'kind', 'metadata']);
  h.stream.start();
  await h.stream.whenSynced;
  await objects.createGadget(h.ns, 'watched', { size: 2, payload: 'y'.repeat(2000) });
  await objects.patchGadget(h.ns, 'watched', { metadata: { labels: { a: 'b' } } });
  await waitUntil('the watch delivered both events', () => h.changes.filter((c) => c.current.name === 'watched').length === 2);
  assert.match(h.requests('list')[0]!.accept, /^application\/json;as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1/);
  const watchRequest = h.requests('watch')[0]!;
  assert.match(watchRequest.accept, /^application\/json;as=PartialObjectMetadata;g=meta\.k8s\.io;v=v1/);
  const events = watchRequest.lines
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { type: string; object: Record<string, unknown> })
    .filter((e) => e.type !== 'BOOKMARK');
  assert.ok(events.length >= 2);
  for (const e of events) {
    assert.equal(e.object.kind, 'PartialObjectMetadata', 'the server sent metadata only');
    assert.deepEqual(Object.keys(e.object).sort(), ['apiVersion', 'kind', 'metadata']);
  }
  // The snapshots equal those of the whole objects, but for the status this watch does not read.
  for (const name of ['listed', 'watched']) {
    const whole = await objects.api.requestJson<Record<string, unknown>>('GET', `/apis/${API_VERSION}/namespaces/${h.ns}/gadgets/${name}`);
    const held = [...h.lists[0]!.listed, ...h.changes.map((c) => c.current)].filter((s) => s.name === name).at(-1);
    assert.deepEqual(held, { ...snapshotOf(whole)!, status: '' }, name);
  }
});

test('a stream whose watch reads the status gets whole objects', async () => {
  await using h = await harness({
    watch: {
      role: 'primary',
      apiVersion: API_VERSION,
      kind: 'Gadget',
      group: GROUP,
      plural: 'gadgets',
      namespaced: true,
      namespaces: [],
      triggers: ['status'],
      objectFields: ['status'],
    },
  });
  await objects.createGadget(h.ns, 'whole');
  h.stream.start();
  await h.stream.whenSynced;
  await objects.patchGadget(h.ns, 'whole', { status: { ready: true } }, 'status');
  await waitUntil('the status write arrived', () => h.changes.some((c) => c.current.name === 'whole' && c.current.status !== ''));
  assert.equal(h.requests('list')[0]!.accept, 'application/json');
  assert.equal(h.requests('watch')[0]!.accept, 'application/json');
});

test('bookmarks: the watch resumes from the resourceVersion of the last bookmark, and the server serves it', async () => {
  // kube-apiserver sends a bookmark about once a minute and 2 s before a watch's deadline, but
  // only with a resourceVersion newer than the watch's (measured on 1.34: none on a quiet
  // kind within 20 s; see docs/forwarder.md). The bookmark is therefore injected, with a
  // resourceVersion the real server has: what a bookmark after unrelated writes carries.
  await using h = await harness({ serverTimeoutSeconds: 3600, silenceTimeoutMs: 3_600_000 });
  h.stream.start();
  await h.stream.whenSynced;
  await objects.api.requestJson('POST', `/api/v1/namespaces/${h.ns}/configmaps`, {
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'moves-etcd-on' } },
  });
  const current = (await objects.api.requestJson<{ metadata: { resourceVersion: string } }>('GET', `/api/v1/namespaces/${h.ns}/configmaps`)).metadata
    .resourceVersion;
  const listedAt = h.requests('watch')[0]!.query.get('resourceVersion');
  assert.ok(BigInt(current) > BigInt(listedAt!));
  proxy.inject({
    path: watchPath(h.ns),
    watch: true,
    times: 1,
    action: { events: [{ type: 'BOOKMARK', object: { apiVersion: API_VERSION, kind: 'Gadget', metadata: { resourceVersion: current } } }] },
  });
  h.stream.requestResync();
  await waitUntil('the stream resumed after the bookmark', () =>
    h.requests('watch').some((r, i, all) => i > 0 && all[i - 1]!.handled === 'events' && r.handled === 'forwarded'),
  );
  const resumed = h.requests('watch').find((r, i, all) => i > 0 && all[i - 1]!.handled === 'events')!;
  assert.equal(resumed.query.get('resourceVersion'), current, 'resumed from the bookmark, not from the list');
  await objects.createGadget(h.ns, 'after-bookmark');
  await waitUntil('the resumed watch delivers events', () => h.changes.some((c) => c.current.name === 'after-bookmark'));
  assert.deepEqual(
    h.changes.map((c) => c.current.name),
    ['after-bookmark'],
    'bookmarks are not changes',
  );
});

test('410 Gone after etcd compaction: the stream relists and reports only what changed', async () => {
  await using h = await harness({ silenceTimeoutMs: 3_000 });
  await objects.createGadget(h.ns, 'kept');
  await objects.createGadget(h.ns, 'changed');
  await objects.createGadget(h.ns, 'deleted');
  h.stream.start();
  await h.stream.whenSynced;
  // The stream stops hearing the server (stalled watches) while objects change, etcd is
  // compacted and the API server restarts with a fresh watch cache: the resumed watch is Gone.
  const remove = proxy.inject({ path: watchPath(h.ns), watch: true, action: { stall: true } });
  try {
    await waitUntil('the stream watches through a stalled connection', () => h.requests('watch').at(-1)?.handled === 'stall');
    await objects.patchGadget(h.ns, 'changed', { spec: { size: 5 } });
    await objects.deleteGadget(h.ns, 'deleted');
    await objects.createGadget(h.ns, 'added');
    await cp.compactEtcd();
    await cp.restartApiServer();
  } finally {
    remove();
  }
  await waitUntil('the stream relisted after 410 Gone', async () => (await h.metric('operless_forwarder_relists_total', { cause: 'gone' })) >= 1, {
    timeoutMs: 60_000,
  });
  await waitUntil('the relist was reported', () => h.lists.length >= 2);
  const relist = h.lists.at(-1)!;
  assert.equal(relist.first, false);
  assert.deepEqual(relist.changes.map((c) => `${c.type} ${c.current.name}`).sort(), ['ADDED added', 'DELETED deleted', 'MODIFIED changed']);
});

test('504 Too large resource version on a resumed watch: relist, not resume forever', async () => {
  await using h = await harness();
  h.stream.start();
  await h.stream.whenSynced;
  // The next watch is answered with the Status kube-apiserver uses for a resourceVersion it does not have yet.
  proxy.inject({
    path: watchPath(h.ns),
    watch: true,
    times: 1,
    action: {
      respond: 504,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        code: 504,
        reason: 'Timeout',
        message: 'Timeout: Too large resource version: 99999999, current: 512',
        details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
      },
    },
  });
  h.stream.requestResync(); // ends the current watch: resync LIST, then the watch that gets the 504
  await waitUntil('the watch after the resync got the 504', () => h.requests('watch').some((r) => r.handled === 'respond'));
  const answered = h.requests('watch').findIndex((r) => r.handled === 'respond');
  await waitUntil('a 504 Too large made the stream relist', async () => (await h.metric('operless_forwarder_relists_total', { cause: 'too-large' })) >= 1, {
    timeoutMs: 30_000,
  });
  await waitUntil('the relist was reported', () => h.lists.length >= 3);
  assert.equal(h.lists.at(-1)!.resync, false, 'a relist, not a resync: only changes are forwarded');
  assert.ok(h.requests('watch').length >= answered + 1);
});

test('a server behind our resourceVersion (etcd restored): kube-apiserver keeps the watch silent; the stream notices and relists', async () => {
  await using h = await harness({ serverTimeoutSeconds: 2, silenceTimeoutMs: 10_000 });
  await objects.createGadget(h.ns, 'present');
  h.stream.start();
  await h.stream.whenSynced;
  // What the stream saw before the restore: a bookmark far ahead of what etcd has now.
  proxy.inject({
    path: watchPath(h.ns),
    watch: true,
    times: 1,
    action: { events: [{ type: 'BOOKMARK', object: { apiVersion: API_VERSION, kind: 'Gadget', metadata: { resourceVersion: '99999999' } } }] },
  });
  h.stream.requestResync();
  await waitUntil('the stream resumed from the restored-away resourceVersion', () =>
    h.requests('watch').some((r) => r.query.get('resourceVersion') === '99999999'),
  );
  await waitUntil(
    'the stream relisted because the server is behind',
    async () => (await h.metric('operless_forwarder_relists_total', { cause: 'too-large' })) >= 1,
    { timeoutMs: 30_000 },
  );
  await objects.createGadget(h.ns, 'after-restore');
  // Created while the relist's LIST may still run: it arrives as a watch event or in that list's changes.
  const seen = () =>
    h.changes.some((c) => c.current.name === 'after-restore') || h.lists.some((l) => l.changes.some((c) => c.current.name === 'after-restore'));
  await waitUntil('events flow again after the relist', seen, { timeoutMs: 30_000 });
});

test('a resync requested during a LIST lists again right after it, not at the next watch timeout', async () => {
  await using h = await harness({ serverTimeoutSeconds: 3600, silenceTimeoutMs: 3_600_000 });
  await objects.createGadget(h.ns, 'g');
  const release = Promise.withResolvers<void>();
  const remove = proxy.inject({ path: watchPath(h.ns), watch: false, times: 1, action: { hold: () => release.promise } });
  try {
    h.stream.start();
    await waitUntil('the first LIST is in flight', () => h.requests('list').length === 1);
    h.stream.requestResync();
    release.resolve();
    await waitUntil('the resync LIST followed the first one', () => h.lists.length >= 2);
  } finally {
    remove();
  }
  assert.equal(h.lists[0]!.resync, false);
  assert.equal(h.lists[1]!.resync, true, 'the second list is the resync (every primary forwarded)');
  assert.deepEqual(
    h.lists[1]!.listed.map((o) => o.name),
    ['g'],
  );
});

test('a resync whose LIST fails stays requested: the LIST that succeeds is the resync', async () => {
  await using h = await harness({ serverTimeoutSeconds: 3600, silenceTimeoutMs: 3_600_000 });
  await objects.createGadget(h.ns, 'g');
  h.stream.start();
  await h.stream.whenSynced;
  proxy.inject({ path: watchPath(h.ns), watch: false, times: 1, action: { respond: 500 } });
  h.stream.requestResync();
  await waitUntil('the failed LIST was retried and succeeded', () => h.lists.length >= 2);
  assert.equal(h.lists[1]!.resync, true);
});

test('stop() during a long backoff returns at once', async () => {
  await using h = await harness({ backoffInitialMs: 600_000, backoffMaxMs: 600_000 });
  const remove = proxy.inject({ path: watchPath(h.ns), watch: false, action: { respond: 500 } });
  try {
    h.stream.start();
    await waitUntil('the LIST failed and the stream backs off', () =>
      h.warnings().some((w) => /LIST .* failed/.test(String(w.msg)) && Number(w.retryInMs) >= 300_000),
    );
    await h.stream.stop();
    assert.equal(h.stream.synced, false);
  } finally {
    remove();
  }
});
