/**
 * The Kubernetes access layer of the runtime (src/kube) against a REAL kube-apiserver:
 * the node:https transport with each credential kind the test environment issues (admin
 * token, client certificate, service-account token), CRUD and server-side apply, the status
 * subresource, list pagination, typed errors (404, 409, 403, 422), Events with series, the
 * least-privilege identity a reconcile function runs under, request deadlines, and watch
 * streams (order, clean close, abort, a cut connection, a server that never answers).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { closedPort, startControlPlane, testCrd, type ControlPlane } from '../../src/testing/index.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { createKubeClient, type BoundKubeClient } from '../../src/kube/client.ts';
import { createTransport, type WatchEvent } from '../../src/kube/transport.ts';
import { kubeConfigAuth } from '../../src/kube/kubeconfig.ts';
import { isKubeApiError, KubeApiError } from '../../src/kube/errors.ts';
import { ensureFinalizer, removeFinalizer } from '../../src/kube/finalizers.ts';
import { updateStatus } from '../../src/kube/status.ts';
import { applyOwned } from '../../src/kube/owned.ts';
import { createEventRecorder, resetEventMemory } from '../../src/kube/events.ts';
import { EVENTS } from '../../src/kube/kinds.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';

const GADGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Gadget', plural: 'gadgets', namespaced: true };
const CONFIGMAP: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const NAMESPACE: KindRef = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
const NS = 'kube-it';

const GADGET_CRD = testCrd({
  group: 'test.operless.dev',
  kind: 'Gadget',
  specSchema: { type: 'object', properties: { size: { type: 'integer', minimum: 0 } } },
});

let cp: ControlPlane;
let client: BoundKubeClient;

const gadget = (name: string, size = 1): KubeObject => ({ apiVersion: GADGET.apiVersion, kind: 'Gadget', metadata: { name, namespace: NS }, spec: { size } });

before(async () => {
  cp = await startControlPlane({ crds: [GADGET_CRD] });
  client = await createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath }, fieldManager: 'it-manager' })('any');
  await client.create(NAMESPACE, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
});

after(async () => {
  await cp?.stop();
});

test('create, get, merge patch, delete; a missing object reads as undefined and deletes idempotently', async () => {
  const created = await client.create(GADGET, gadget('g1'));
  assert.ok(created.metadata.uid);
  const read = await client.get(GADGET, 'g1', NS);
  assert.equal(read?.metadata.uid, created.metadata.uid);
  const patched = await client.mergePatch(GADGET, 'g1', NS, { metadata: { labels: { a: 'b' } } });
  assert.deepEqual(patched.metadata.labels, { a: 'b' });
  await client.delete(GADGET, 'g1', NS);
  assert.equal(await client.get(GADGET, 'g1', NS), undefined);
  await client.delete(GADGET, 'g1', NS);
});

test('server-side apply with the field manager; re-applying the same object changes nothing', async () => {
  const first = await client.apply(CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: NS }, data: { k: 'v' } });
  const managers = (first.metadata.managedFields as { manager: string; operation: string }[]).map((f) => [f.manager, f.operation]);
  assert.deepEqual(managers, [['it-manager', 'Apply']]);
  const again = await client.apply(CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: NS }, data: { k: 'v' } });
  assert.equal(again.metadata.resourceVersion, first.metadata.resourceVersion, 'a no-op apply does not write');
  // fields this manager stops applying are removed (it owns them)
  const dropped = await client.apply(CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: NS }, data: { other: 'x' } });
  assert.deepEqual(dropped.data, { other: 'x' });
});

test('owned children get a controller owner reference the API server accepts', async () => {
  const owner = await client.create(GADGET, gadget('owner'));
  const child = await applyOwned<KubeObject>(client, owner, CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owned' }, data: {} });
  assert.equal(child.metadata.namespace, NS);
  assert.deepEqual(child.metadata.ownerReferences, [
    { apiVersion: GADGET.apiVersion, kind: 'Gadget', name: 'owner', uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true },
  ]);
});

test('status goes through the subresource, only when changed; spec writes do not touch it', async () => {
  const g = await client.create(GADGET, gadget('st', 2));
  const written = await updateStatus(client, GADGET, g, { phase: 'Ready' });
  assert.deepEqual(written?.status, { phase: 'Ready', observedGeneration: 1 });
  assert.equal(written?.metadata.generation, 1, 'a status write does not bump the generation');
  assert.equal(await updateStatus(client, GADGET, written as KubeObject, { phase: 'Ready' }), undefined, 'unchanged: no write');
  const live = await client.get(GADGET, 'st', NS);
  assert.deepEqual(live?.status, { phase: 'Ready', observedGeneration: 1 });
});

test('finalizers: added and removed with a resourceVersion guard; a stale guard is a 409', async () => {
  const g = await client.create(GADGET, gadget('fin'));
  const withFinalizer = await ensureFinalizer(client, GADGET, g, 'test.operless.dev/finalizer');
  assert.deepEqual(withFinalizer.metadata.finalizers, ['test.operless.dev/finalizer']);
  await assert.rejects(
    removeFinalizer(
      client,
      GADGET,
      { ...withFinalizer, metadata: { ...withFinalizer.metadata, resourceVersion: g.metadata.resourceVersion } },
      'test.operless.dev/finalizer',
    ),
    (err: unknown) => isKubeApiError(err) && err.status === 409 && err.reason === 'Conflict',
  );
  const removed = await removeFinalizer(client, GADGET, withFinalizer, 'test.operless.dev/finalizer');
  assert.equal(removed.metadata.finalizers, undefined);
});

test('list paginates with continue tokens and fills in apiVersion/kind', async () => {
  for (let i = 0; i < 5; i++) await client.create(GADGET, gadget(`page-${i}`));
  const names: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const page = await client.list(GADGET, { namespace: NS, labelSelector: '', limit: 2, ...(token ? { continue: token } : {}) });
    pages++;
    for (const item of page.items) {
      assert.equal(item.kind, 'Gadget');
      assert.equal(item.apiVersion, GADGET.apiVersion);
      if (item.metadata.name.startsWith('page-')) names.push(item.metadata.name);
    }
    token = page.continue;
    assert.ok(page.resourceVersion);
  } while (token);
  assert.deepEqual(names.sort(), ['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
  assert.ok(pages >= 3);
});

test('validation failures are a 422 KubeApiError that says what the API server said', async () => {
  await assert.rejects(client.create(GADGET, gadget('bad', -1)), (err: unknown) => {
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.status, 422);
    assert.equal(err.reason, 'Invalid');
    assert.match(err.message, /^POST \/apis\/test\.operless\.dev\/v1\/namespaces\/kube-it\/gadgets failed: 422 Invalid: .*spec\.size/);
    return true;
  });
});

test('Events: recorded once, repeats bump series.count instead of creating new Events', async () => {
  resetEventMemory();
  const g = await client.create(GADGET, gadget('ev'));
  const events = createEventRecorder({ client, controller: 'operless/gadget', repeatWindowMs: 0 });
  const warning = { type: 'Warning' as const, reason: 'InvalidSpec', action: 'Reconcile', note: 'size must be even' };
  await events.record(g, warning);
  await events.record(g, warning);
  await events.record(g, warning);
  await events.record(g, { ...warning, type: 'Normal', reason: 'Scaled', note: 'scaled to 2' });
  const list = (await client.list(EVENTS, { namespace: NS })).items.filter((e) => (e.regarding as { uid: string }).uid === g.metadata.uid);
  assert.equal(list.length, 2);
  const w = list.find((e) => e.reason === 'InvalidSpec');
  assert.equal((w?.series as { count: number } | undefined)?.count, 3);
  assert.equal(w?.reportingController, 'operless/gadget');
  // The core/v1 view that `kubectl describe` shows
  const described = await cp.kubectl(['describe', 'gadget', 'ev', '-n', NS]);
  assert.match(described.stdout, /Warning\s+InvalidSpec/);
});

test('least privilege: a restricted identity gets 403 with a hint, and what RBAC grants works', async () => {
  const sa = await cp.serviceAccount(NS, 'reconciler');
  await client.apply(
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', plural: 'roles', namespaced: true },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'gadget-reader', namespace: NS },
      rules: [{ apiGroups: ['test.operless.dev'], resources: ['gadgets'], verbs: ['get', 'list'] }],
    },
  );
  await client.apply(
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', plural: 'rolebindings', namespaced: true },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'gadget-reader', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'gadget-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reconciler', namespace: NS }],
    },
  );
  const restricted = createKubeClient(createTransport(sa.kubeConfig), { fieldManager: 'restricted' });
  try {
    const g = await client.create(GADGET, gadget('rbac'));
    assert.equal((await restricted.get(GADGET, 'rbac', NS))?.metadata.uid, g.metadata.uid);
    await assert.rejects(restricted.get(CONFIGMAP, 'ssa', NS), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 403);
      assert.match(err.message, /grant this verb on this resource/);
      return true;
    });
    await assert.rejects(restricted.delete(GADGET, 'rbac', NS), (err: unknown) => isKubeApiError(err) && err.status === 403);
  } finally {
    await restricted.transport.close();
  }
});

test('client-certificate identities work through the same transport', async () => {
  const user = await cp.identity('cert-user', ['system:authenticated']);
  const c = createKubeClient(createTransport(user.kubeConfig), { fieldManager: 'cert' });
  try {
    await assert.rejects(c.get(GADGET, 'rbac', NS), (err: unknown) => isKubeApiError(err) && err.status === 403 && /cert-user/.test(err.message));
  } finally {
    await c.transport.close();
  }
});

test('an unreachable API server is a NetworkError naming the server', async () => {
  const port = await closedPort(); // free a moment ago, closed: nothing listens
  const dead = createKubeClient(createTransport({ server: `https://127.0.0.1:${port}`, credentials: async () => ({ headers: {} }) }), { fieldManager: 'x' });
  await assert.rejects(dead.get(GADGET, 'x', NS), (err: unknown) => {
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.status, 0);
    assert.match(err.message, new RegExp(`could not reach the API server at https://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    return true;
  });
});

test("an aborted signal stops a request with the signal's reason", async () => {
  const controller = new AbortController();
  controller.abort(new Error('budget ran out'));
  await assert.rejects(client.with({ signal: controller.signal }).get(GADGET, 'x', NS), /budget ran out/);
});

test('a live object read back can be applied as-is (managedFields are dropped)', async () => {
  const first = await client.apply(CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'roundtrip', namespace: NS }, data: { a: '1' } });
  assert.ok(first.metadata.managedFields);
  const again = await client.apply(CONFIGMAP, { ...first, data: { a: '2' } });
  assert.deepEqual(again.data, { a: '2' });
});

const CM_PATH = `/api/v1/namespaces/${NS}/configmaps`;
const cmName = (e: WatchEvent) => (e.object.metadata as { name: string }).name;

/** A TCP listener on loopback; `forwardTo` relays to that port (a real server), else it accepts and never answers. */
async function tcpRelay(forwardTo?: { host: string; port: number }): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  };
  const server = net.createServer((client) => {
    track(client);
    if (!forwardTo) return;
    const upstream = net.connect(forwardTo.port, forwardTo.host);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const cut = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    url: `https://127.0.0.1:${port}`,
    cut,
    close: () => {
      cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

test('watch: events arrive in the order of the changes; abort ends the stream and resolves ended', async () => {
  const t = client.transport;
  const selector = 'transport-watch=order';
  const listed = await t.request({ method: 'GET', path: CM_PATH, query: { labelSelector: selector } });
  const controller = new AbortController();
  const seen: string[] = [];
  let deleted!: () => void;
  const sawDelete = new Promise<void>((resolve) => (deleted = resolve));
  const { ended } = await t.watch(
    {
      path: CM_PATH,
      query: { labelSelector: selector, resourceVersion: (listed.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion },
      signal: controller.signal,
    },
    (e) => {
      seen.push(`${e.type} ${cmName(e)} ${(e.object.data as { v: string }).v}`);
      if (e.type === 'DELETED') deleted();
    },
  );
  const metadata = { name: 'watched', namespace: NS, labels: { 'transport-watch': 'order' } };
  await t.request({ method: 'POST', path: CM_PATH, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { v: '1' } } });
  await t.request({ method: 'PATCH', path: `${CM_PATH}/watched`, body: { data: { v: '2' } }, contentType: 'application/merge-patch+json' });
  await t.request({ method: 'PATCH', path: `${CM_PATH}/watched`, body: { data: { v: '3' } }, contentType: 'application/merge-patch+json' });
  await t.request({ method: 'DELETE', path: `${CM_PATH}/watched` });
  await Promise.race([
    sawDelete,
    ended.then(() => {
      throw new Error(`the watch ended before the DELETED event; saw ${seen.join(', ')}`);
    }),
  ]);
  controller.abort();
  await ended;
  assert.deepEqual(seen, ['ADDED watched 1', 'MODIFIED watched 2', 'MODIFIED watched 3', 'DELETED watched 3']);
});

test('watch: the server closing the stream (timeoutSeconds) resolves ended', async () => {
  // An object there before the watch starts: without a resourceVersion the server opens the
  // stream with its ADDED event, so the stream is seen working before the server closes it.
  await client.apply(CONFIGMAP, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'timeout', namespace: NS, labels: { 'transport-watch': 'timeout' } },
    data: { v: '1' },
  });
  const controller = new AbortController();
  const seen: string[] = [];
  const { ended } = await client.transport.watch(
    { path: CM_PATH, query: { labelSelector: 'transport-watch=timeout', timeoutSeconds: 1 }, signal: controller.signal },
    (e) => {
      seen.push(`${e.type} ${cmName(e)}`);
    },
  );
  await ended;
  // It ended because the server closed it: nobody aborted, and it had delivered the stream's event first.
  assert.equal(controller.signal.aborted, false);
  assert.deepEqual(seen, ['ADDED timeout'], 'ended resolved after the stream delivered its event, not before');
});

test('watch: a non-200 answer rejects with the shared KubeApiError (404 unknown resource, 403 without RBAC)', async () => {
  const signal = new AbortController().signal;
  await assert.rejects(
    client.transport.watch({ path: `/apis/test.operless.dev/v1/namespaces/${NS}/nothings`, signal }, () => {}),
    (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 404);
      assert.equal(err.request, `GET /apis/test.operless.dev/v1/namespaces/${NS}/nothings`);
      return true;
    },
  );
  const user = await cp.identity('watch-user');
  const t = createTransport(user.kubeConfig);
  try {
    await assert.rejects(
      t.watch({ path: `/apis/test.operless.dev/v1/namespaces/${NS}/gadgets`, signal }, () => {}),
      (err: unknown) => {
        assert.ok(err instanceof KubeApiError);
        assert.equal(err.status, 403);
        assert.equal(err.reason, 'Forbidden');
        assert.match(err.message, /watch-user.*\(grant this verb/);
        return true;
      },
    );
  } finally {
    await t.close();
  }
});

test('watch: an onEvent that throws closes the stream and rejects ended with its error', async () => {
  await client.apply(CONFIGMAP, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'throw', namespace: NS, labels: { 'transport-watch': 'throw' } },
    data: { a: '1' },
  });
  let calls = 0;
  // Without a resourceVersion the server starts with an ADDED event per existing object.
  const { ended } = await client.transport.watch(
    { path: CM_PATH, query: { labelSelector: 'transport-watch=throw' }, signal: new AbortController().signal },
    () => {
      calls++;
      throw new Error('handler failed');
    },
  );
  await assert.rejects(ended, /handler failed/);
  assert.equal(calls, 1);
});

test('watch: a connection cut mid-stream rejects ended with a NetworkError', async () => {
  const api = new URL(cp.server);
  const relay = await tcpRelay({ host: api.hostname, port: Number(api.port) });
  const t = createTransport({ server: relay.url, credentials: kubeConfigAuth(cp.kubeConfig).credentials });
  try {
    const { ended } = await t.watch({ path: CM_PATH, query: { labelSelector: 'transport-watch=none' }, signal: new AbortController().signal }, () => {});
    relay.cut();
    await assert.rejects(ended, (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 0);
      assert.equal(err.reason, 'NetworkError');
      assert.match(err.message, /watch stream from the API server at https:\/\/127\.0\.0\.1:\d+ broke off/);
      return true;
    });
  } finally {
    await t.close();
    await relay.close();
  }
});

test('a request deadline covers the whole response: an endless body fails with a Timeout KubeApiError', async () => {
  // A watch never completes its body: the headers arrive at once, then the deadline passes.
  await assert.rejects(
    client.transport.request({
      method: 'GET',
      path: CM_PATH,
      query: { watch: true, labelSelector: 'transport-watch=none', timeoutSeconds: 120 },
      timeoutMs: 500,
    }),
    (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 0);
      assert.equal(err.reason, 'Timeout');
      assert.match(err.message, /got no response from the API server at .* within 500 ms/);
      return true;
    },
  );
});

test('a server that accepts connections but never answers: request and watch fail with Timeout', async () => {
  const hole = await tcpRelay();
  const t = createTransport({ server: hole.url, credentials: async () => ({ headers: {} }) });
  const isTimeout = (err: unknown) => err instanceof KubeApiError && err.status === 0 && err.reason === 'Timeout' && /within 300 ms/.test(err.message);
  try {
    await assert.rejects(t.request({ method: 'GET', path: CM_PATH, timeoutMs: 300 }), isTimeout);
    await assert.rejects(
      t.watch({ path: CM_PATH, signal: new AbortController().signal, timeoutMs: 300 }, () => {}),
      isTimeout,
    );
  } finally {
    await t.close();
    await hole.close();
  }
});
