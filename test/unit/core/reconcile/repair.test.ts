import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectPathOf, watchWrites, writeChanged, WriteWatch } from '../../../../src/core/reconcile/repair.ts';
import { createKubeClient } from '../../../../src/kube/client.ts';
import type { KubeRequest, KubeResponse, KubeTransport } from '../../../../src/kube/transport.ts';
import { createEmfMetrics } from '../../../../src/core/reconcile/metrics.ts';

const PATH = '/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/a';
const obj = (rv: string) => ({ metadata: { name: 'a', resourceVersion: rv } });

test('writeChanged: creates and deletes change; a patch changes when the version moved; reads, refusals and Events never', () => {
  assert.equal(writeChanged({ method: 'GET', path: PATH }, { status: 200, body: obj('5') }, undefined), false);
  assert.equal(writeChanged({ method: 'POST', path: '/api/v1/namespaces/ns/configmaps' }, { status: 201, body: obj('6') }, undefined), true);
  assert.equal(writeChanged({ method: 'DELETE', path: '/api/v1/namespaces/ns/configmaps/c' }, { status: 200, body: {} }, undefined), true);
  assert.equal(
    writeChanged({ method: 'POST', path: '/api/v1/namespaces/ns/events' }, { status: 201, body: obj('7') }, undefined),
    false,
    'an Event records, it repairs nothing',
  );
  assert.equal(writeChanged({ method: 'POST', path: '/apis/events.k8s.io/v1/namespaces/ns/events' }, { status: 201, body: obj('7') }, undefined), false);
  assert.equal(writeChanged({ method: 'PATCH', path: `${PATH}/status` }, { status: 409, body: {} }, '5'), false);
  assert.equal(
    writeChanged({ method: 'PATCH', path: `${PATH}/status` }, { status: 200, body: obj('5') }, '5'),
    false,
    'an apply that changed nothing keeps the version',
  );
  assert.equal(writeChanged({ method: 'PATCH', path: `${PATH}/status` }, { status: 200, body: obj('9') }, '5'), true);
  assert.equal(
    writeChanged({ method: 'PATCH', path: PATH, body: obj('5') }, { status: 200, body: obj('5') }, '1'),
    false,
    'the precondition the request names wins over what was read',
  );
  assert.equal(writeChanged({ method: 'PUT', path: PATH, body: obj('5') }, { status: 200, body: obj('8') }, undefined), true);
  assert.equal(writeChanged({ method: 'PATCH', path: PATH }, { status: 200, body: obj('8') }, undefined), true, 'nothing known before: counted as a change');
  assert.equal(objectPathOf(`${PATH}/status?fieldManager=x`), PATH);
  assert.equal(objectPathOf(`${PATH}/scale`), PATH);
});

/** A transport answering each request from `answer`, recording nothing else. */
function transport(answer: (req: KubeRequest) => KubeResponse): KubeTransport {
  return {
    server: 'https://k',
    request: async (req) => answer(req),
    watch: async () => ({ ended: Promise.resolve() }),
    list: async () => ({}),
    close: async () => {},
  };
}

test('watchWrites: a reconcile that read the object and applied an unchanged status repaired nothing; one that wrote a child did', async () => {
  let statusRv = '5';
  const answer = (req: KubeRequest): KubeResponse => {
    if (req.method === 'GET') return { status: 200, body: obj('5') };
    if (req.path.endsWith('/status')) return { status: 200, body: obj(statusRv) };
    return { status: 201, body: obj('6') };
  };
  const kind = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
  const unchanged = new WriteWatch();
  const client = watchWrites(createKubeClient(transport(answer), { fieldManager: 'operless-memcached' }), unchanged);
  const live = await client.with({ fieldManager: 'x' }).get(kind, 'a', 'ns');
  assert.equal(live?.metadata.resourceVersion, '5', 'answers pass through unchanged');
  await client.applyStatus(kind, { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: 'a', namespace: 'ns' }, status: {} });
  await client.create(
    { apiVersion: 'v1', kind: 'Event', plural: 'events', namespaced: true },
    { apiVersion: 'v1', kind: 'Event', metadata: { name: 'e', namespace: 'ns' } },
  );
  assert.equal(unchanged.changed, false);

  statusRv = '9';
  const repaired = new WriteWatch();
  const again = watchWrites(createKubeClient(transport(answer), { fieldManager: 'operless-memcached' }), repaired);
  await again.get(kind, 'a', 'ns');
  await again.applyStatus(kind, { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: 'a', namespace: 'ns' }, status: { ready: true } });
  assert.equal(repaired.changed, true);
});

test('the EMF line of a Resync reconcile carries resync_repaired_total 1 or 0; other reconciles none', () => {
  const lines: string[] = [];
  const m = createEmfMetrics({ namespace: 'Test', write: (l) => lines.push(l), now: () => 1 });
  m.reconcile({ controller: 'memcached', label: 'success', durationSeconds: 0.1, resyncRepaired: true });
  m.reconcile({ controller: 'memcached', label: 'success', durationSeconds: 0.1, resyncRepaired: false });
  m.reconcile({ controller: 'memcached', label: 'success', durationSeconds: 0.1 });
  const docs = lines.map((l) => JSON.parse(l));
  assert.deepEqual(
    docs.map((d) => d.resync_repaired_total),
    [1, 0, undefined],
  );
  const names = (d: { _aws: { CloudWatchMetrics: { Metrics: { Name: string }[] }[] } }) =>
    d._aws.CloudWatchMetrics.flatMap((x) => x.Metrics.map((y) => y.Name));
  assert.ok(names(docs[0]).includes('resync_repaired_total'));
  assert.ok(!names(docs[2]).includes('resync_repaired_total'));
  for (const d of docs) for (const name of names(d)) assert.equal(typeof d[name], 'number', name);
});
