/**
 * The raw-path API (src/kube/api.ts) and Leases (src/kube/lease.ts) against a REAL
 * kube-apiserver — what the forwarder will reach the cluster through once it uses kube/:
 * lists and watches on `collectionPath`s (in order, with a label selector, ended by an abort),
 * the shared `KubeApiError` for a missing object, discovery on `groupVersionPrefix`, and a
 * Lease's get / create / update with the resourceVersion guard (a stale update and a second
 * create fail with 409) and MicroTimes the API server keeps as written.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, type ControlPlane } from '../../src/testing/index.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { createKubeApi, KubeApiError, type KubeApi } from '../../src/kube/api.ts';
import { isConflict } from '../../src/kube/errors.ts';
import { leaseClient, leasePath, type Lease } from '../../src/kube/lease.ts';
import { LEASES } from '../../src/kube/kinds.ts';
import { collectionPath, groupVersionPrefix, resourcePath } from '../../src/kube/paths.ts';
import { microTime } from '../../src/kube/time.ts';
import type { WatchEvent } from '../../src/kube/transport.ts';
import type { KindRef } from '../../src/kube/types.ts';

const CONFIGMAP: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const NS = 'kube-lease-it';

let cp: ControlPlane;
let api: KubeApi;

before(async () => {
  cp = await startControlPlane();
  api = createKubeApi(cp.kubeConfig, { userAgent: 'operless-test' });
  await api.requestJson('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
});

after(async () => {
  await api?.close?.();
  await cp?.stop();
});

const configMap = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels } });

test('requestJson: create and list on collectionPath with a label selector; a missing object is a 404 KubeApiError', async () => {
  await api.requestJson('POST', collectionPath(CONFIGMAP, NS), { body: configMap('red', { colour: 'red' }) });
  await api.requestJson('POST', collectionPath(CONFIGMAP, NS), { body: configMap('blue', { colour: 'blue' }) });
  const list = await api.requestJson<{ items: { metadata: { name: string } }[]; metadata: { resourceVersion: string } }>('GET', collectionPath(CONFIGMAP, NS), {
    query: { labelSelector: 'colour=red' },
  });
  assert.deepEqual(
    list.items.map((i) => i.metadata.name),
    ['red'],
  );
  assert.match(list.metadata.resourceVersion, /^\d+$/);
  const inAll = await api.requestJson<{ items: { metadata: { name: string; namespace: string } }[] }>(
    'GET',
    `${collectionPath(CONFIGMAP)}?labelSelector=colour%3Dblue`,
  );
  assert.deepEqual(
    inAll.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`),
    [`${NS}/blue`],
  );
  await assert.rejects(
    api.requestJson('GET', resourcePath(CONFIGMAP, { namespace: NS, name: 'absent' })),
    (err: unknown) => err instanceof KubeApiError && err.status === 404 && err.reason === 'NotFound',
  );
});

test('discovery on groupVersionPrefix names the Lease resource as lease.ts addresses it', async () => {
  const doc = await api.requestJson<{ resources: { name: string; kind: string; namespaced: boolean }[] }>('GET', groupVersionPrefix(LEASES.apiVersion));
  const lease = doc.resources.find((r) => r.kind === 'Lease');
  assert.deepEqual(lease && { name: lease.name, namespaced: lease.namespaced }, { name: LEASES.plural, namespaced: true });
});

test('watch: events of a collection arrive in order from a resourceVersion; an abort ends the stream cleanly', async () => {
  const start = await api.requestJson<{ metadata: { resourceVersion: string } }>('GET', collectionPath(CONFIGMAP, NS));
  const seen: string[] = [];
  const stop = new AbortController();
  const stream = await api.watch(
    `${collectionPath(CONFIGMAP, NS)}?resourceVersion=${start.metadata.resourceVersion}&labelSelector=watched%3Dyes`,
    (event: WatchEvent) => {
      const meta = event.object.metadata as { name?: string } | undefined;
      seen.push(`${event.type} ${meta?.name ?? ''}`);
    },
    stop.signal,
  );
  for (const name of ['w1', 'w2', 'w3']) await api.requestJson('POST', collectionPath(CONFIGMAP, NS), { body: configMap(name, { watched: 'yes' }) });
  await api.requestJson('DELETE', resourcePath(CONFIGMAP, { namespace: NS, name: 'w2' }));
  await waitUntil('the watch delivered four events', () => seen.length >= 4);
  assert.deepEqual(seen, ['ADDED w1', 'ADDED w2', 'ADDED w3', 'DELETED w2']);
  stop.abort();
  await stream.ended;
});

test('Lease: get of none is undefined; create, update guarded by resourceVersion (stale → 409), second create → 409', async () => {
  const leases = leaseClient(api);
  assert.equal(await leases.get(NS, 'leader'), undefined);
  const now = Date.UTC(2026, 0, 2, 3, 4, 5, 67);
  const created = await leases.create({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'leader', namespace: NS },
    spec: { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
  });
  assert.ok(created.metadata.resourceVersion);
  assert.equal(created.spec?.renewTime, '2026-01-02T03:04:05.067000Z', 'the API server keeps a MicroTime as written');
  const read = await leases.get(NS, 'leader', { timeoutMs: 5_000 });
  assert.deepEqual(read?.spec, created.spec);

  const renewed = await leases.update({ ...created, spec: { ...created.spec, renewTime: microTime(now + 2_000) } });
  assert.equal(renewed.spec?.renewTime, '2026-01-02T03:04:07.067000Z');
  assert.notEqual(renewed.metadata.resourceVersion, created.metadata.resourceVersion);

  const stale: Lease = { ...created, spec: { ...created.spec, holderIdentity: 'b' } };
  await assert.rejects(leases.update(stale), (err: unknown) => isConflict(err));
  await assert.rejects(
    leases.create({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'leader', namespace: NS }, spec: { holderIdentity: 'b' } }),
    (err: unknown) => isConflict(err),
  );
  assert.equal((await leases.get(NS, 'leader'))?.spec?.holderIdentity, 'a', 'neither failed write changed the holder');

  const listed = await api.requestJson<{ items: Lease[] }>('GET', leasePath(NS));
  assert.deepEqual(
    listed.items.map((l) => l.metadata.name),
    ['leader'],
  );
});
