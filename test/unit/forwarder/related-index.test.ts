import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RelatedIndex, labelRef, type IndexedPrimary } from '../../../src/forwarder/route/related-index.ts';
import { routeChange } from '../../../src/forwarder/route/router.ts';
import { withRelatedFields, type ResolvedWatch } from '../../../src/forwarder/source/watches.ts';
import { snapshotOf, type ObjectSnapshot } from '../../../src/forwarder/source/snapshot.ts';
import type { Change } from '../../../src/forwarder/source/store.ts';
import type { RelatedMapping } from '../../../src/contract/related.ts';
import { DEFAULT_PRIMARY_TRIGGERS, DEFAULT_RELATED_TRIGGERS } from '../../../src/forwarder/config/config.ts';
import { fcParameters } from '../../support/fast-check.ts';

const KIND = 'cache.example.com/Memcached';
const FIELD = 'spec.configMapRef.name';

interface Live {
  uid: string;
  name: string;
  namespace: string;
  stream: string;
  ref?: string;
}

function snapshot(p: Live): ObjectSnapshot {
  return snapshotOf(
    {
      metadata: { uid: p.uid, name: p.name, namespace: p.namespace, resourceVersion: '1' },
      spec: p.ref === undefined ? {} : { configMapRef: { name: p.ref } },
    },
    [FIELD],
  )!;
}

/** What a scan of every live primary finds for one related object. */
function scan(live: ReadonlyMap<string, Live>, map: RelatedMapping, related: { name: string; namespace: string; label?: string }): string[] {
  return [...live.values()]
    .filter((p) => {
      if (p.namespace !== related.namespace) return false;
      if ('field' in map) return p.ref === related.name;
      if ('label' in map) return related.label !== undefined && p.name === related.label;
      return true;
    })
    .map((p) => p.uid)
    .sort();
}

const uids = (found: readonly IndexedPrimary[]) => found.map((p) => p.uid).sort();

const names = fc.constantFrom('a', 'b', 'c');
const namespaces = fc.constantFrom('ns1', 'ns2');
const primary = fc.record({
  uid: fc.constantFrom('u1', 'u2', 'u3', 'u4', 'u5', 'u6'),
  name: names,
  namespace: namespaces,
  ref: fc.option(fc.constantFrom('cm1', 'cm2'), { nil: undefined }),
});
const op = fc.oneof(
  fc.record({ op: fc.constant('upsert' as const), p: primary }),
  fc.record({ op: fc.constant('delete' as const), uid: fc.constantFrom('u1', 'u2', 'u3', 'u4', 'u5', 'u6') }),
  fc.record({ op: fc.constant('relist' as const), ns: namespaces, keep: fc.array(primary, { maxLength: 4 }) }),
);

test('property: after any sequence of primary adds, updates, deletes and relists, every lookup equals a brute-force scan', () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const index = new RelatedIndex();
      const live = new Map<string, Live>();
      for (const o of ops) {
        if (o.op === 'upsert') {
          // One stream per namespace: a uid keeps its namespace (objects do not move).
          const p: Live = { ...o.p, namespace: live.get(o.p.uid)?.namespace ?? o.p.namespace, stream: '' };
          p.stream = `s/${p.namespace}`;
          const old = live.get(p.uid);
          live.set(p.uid, p);
          const change: Change = old ? { type: 'MODIFIED', old: snapshot(old), current: snapshot(p) } : { type: 'ADDED', current: snapshot(p) };
          index.apply(KIND, p.stream, change);
        } else if (o.op === 'delete') {
          const old = live.get(o.uid);
          if (!old) continue;
          live.delete(o.uid);
          index.apply(KIND, old.stream, { type: 'DELETED', old: snapshot(old), current: snapshot(old) });
        } else {
          const stream = `s/${o.ns}`;
          for (const [uid, p] of live) if (p.stream === stream) live.delete(uid);
          const listed = new Map<string, Live>();
          for (const k of o.keep) if (!live.has(k.uid)) listed.set(k.uid, { ...k, namespace: o.ns, stream });
          for (const p of listed.values()) live.set(p.uid, p);
          index.replace(KIND, stream, [...listed.values()].map(snapshot));
        }
      }
      assert.equal(index.size, live.size);
      for (const namespace of ['ns1', 'ns2']) {
        for (const name of ['cm1', 'cm2', 'a', 'b', 'c']) {
          assert.deepEqual(uids(index.primariesFor(KIND, { field: FIELD }, { name, namespace })), scan(live, { field: FIELD }, { name, namespace }));
          const refs = { [labelRef('owner')]: name };
          assert.deepEqual(
            uids(index.primariesFor(KIND, { label: 'owner' }, { name: 'x', namespace, refs })),
            scan(live, { label: 'owner' }, { name: 'x', namespace, label: name }),
          );
        }
        assert.deepEqual(
          uids(index.primariesFor(KIND, { namespace: true }, { name: 'x', namespace })),
          scan(live, { namespace: true }, { name: 'x', namespace }),
        );
      }
      assert.deepEqual(index.primariesFor(KIND, { namespace: true }, { name: 'x' }), [], 'a cluster-scoped related object maps to nothing');
    }),
    fcParameters(),
  );
});

const memcached: ResolvedWatch = {
  role: 'primary',
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  group: 'cache.example.com',
  plural: 'memcacheds',
  namespaced: true,
  namespaces: [],
  triggers: DEFAULT_PRIMARY_TRIGGERS,
  objectFields: [],
};
const configMaps: ResolvedWatch = {
  role: 'related',
  apiVersion: 'v1',
  kind: 'ConfigMap',
  group: '',
  plural: 'configmaps',
  namespaced: true,
  namespaces: [],
  triggers: DEFAULT_RELATED_TRIGGERS,
  objectFields: ['*'],
  targets: [
    { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', map: { field: FIELD } },
    { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', map: { label: 'cache.example.com/memcached' } },
  ],
};

test('withRelatedFields: a primary keeps the spec paths field mappings read, a related watch the label keys; others nothing', () => {
  const [m, c] = withRelatedFields([memcached, configMaps]);
  assert.deepEqual(m?.fields, [FIELD]);
  assert.deepEqual(c?.fields, ['label:cache.example.com/memcached']);
  assert.equal(withRelatedFields([memcached])[0]?.fields, undefined);
});

test('a snapshot keeps only the declared field values, not the spec', () => {
  const s = snapshotOf({ metadata: { uid: 'u', name: 'm', namespace: 'ns' }, spec: { configMapRef: { name: 'cm' }, size: 3, secret: 'x' } }, [
    FIELD,
    'spec.missing',
  ])!;
  assert.deepEqual(s.refs, { [FIELD]: 'cm' });
  assert.equal(JSON.stringify(s).includes('secret'), false);
  assert.equal(snapshotOf({ metadata: { uid: 'u', name: 'm' }, spec: { configMapRef: { name: 7 } } }, [FIELD])?.refs, undefined);
});

test('a related change routes a Related request to each referring primary (field or label), once per key; data-less edits filtered', () => {
  const [m, c] = withRelatedFields([memcached, configMaps]) as [ResolvedWatch, ResolvedWatch];
  const index = new RelatedIndex();
  const mc = (uid: string, name: string, ref?: string) =>
    snapshotOf({ metadata: { uid, name, namespace: 'ns', resourceVersion: '1', generation: 1 }, spec: ref ? { configMapRef: { name: ref } } : {} }, m.fields)!;
  index.replace(KIND, 's', [mc('u1', 'one', 'cm'), mc('u2', 'two', 'cm'), mc('u3', 'three', 'other'), mc('u4', 'four')]);
  const cm = (rv: string, data: Record<string, string>, labels: Record<string, string> = {}) =>
    snapshotOf({ metadata: { uid: 'c1', name: 'cm', namespace: 'ns', resourceVersion: rv, labels }, data }, c.fields)!;
  const before = cm('5', { a: '1' });
  const after = cm('6', { a: '2' }, { 'cache.example.com/memcached': 'four' });
  const routed = routeChange('k', c, { type: 'MODIFIED', old: before, current: after }, [m, c], index);
  assert.deepEqual(routed.forwards.map((f) => `${f.ref.name} ${f.uid} ${f.reason} ${f.ref.kind}`).sort(), [
    'four u4 Related Memcached',
    'one u1 Related Memcached',
    'two u2 Related Memcached',
  ]);
  assert.deepEqual(routeChange('k', c, { type: 'DELETED', old: after, current: after }, [m, c], index).forwards.length, 3);
  assert.deepEqual(
    routeChange('k', c, { type: 'ADDED', current: cm('7', {}, {}) }, [m, c], index)
      .forwards.map((f) => f.ref.name)
      .sort(),
    ['one', 'two'],
  );
  // a status-like write without data or label changes: nothing (ConfigMaps have no generation: the router sees any other change as data)
  const annotated = snapshotOf(
    { metadata: { uid: 'c1', name: 'cm', namespace: 'ns', resourceVersion: '8', annotations: { x: 'y' } }, data: { a: '1' } },
    c.fields,
  )!;
  assert.deepEqual(routeChange('k', c, { type: 'MODIFIED', old: before, current: annotated }, [m, c], index).forwards, []);
  assert.deepEqual(routeChange('k', c, { type: 'ADDED', current: after }, [m, c]).forwards, [], 'without an index a related change routes nowhere');
});

test('the intake: primary lists and events feed the index; a related relist (a ConfigMap changed while the watch was away) sends Related for its primaries; a first list sends nothing', async () => {
  const { Intake } = await import('../../../src/forwarder/intake.ts');
  const { createForwarderMetrics } = await import('../../../src/forwarder/metrics.ts');
  const { silentLogger } = await import('../../../src/observability/log.ts');
  const watches = withRelatedFields([memcached, configMaps]) as [ResolvedWatch, ResolvedWatch];
  const [m, c] = watches;
  const sent: string[] = [];
  const lanes = {
    forward: (messages: { reason: string; name: string }[]) => {
      for (const x of messages) sent.push(`${x.reason} ${x.name}`);
    },
  } as never;
  const intake = new Intake({
    clusterId: 'k',
    lanes,
    watches: () => watches,
    isLeading: () => true,
    metrics: createForwarderMetrics(),
    log: silentLogger,
    now: () => 0,
  });
  const mc = (uid: string, name: string, ref: string) =>
    snapshotOf({ metadata: { uid, name, namespace: 'ns', resourceVersion: '1', generation: 1 }, spec: { configMapRef: { name: ref } } }, m.fields)!;
  const cm = (rv: string, v: string) => snapshotOf({ metadata: { uid: 'c1', name: 'cm', namespace: 'ns', resourceVersion: rv }, data: { v } }, c.fields)!;
  intake.list(m, { changes: [], listed: [mc('u1', 'one', 'cm'), mc('u2', 'two', 'other')], first: true, resync: false, resourceVersion: '1' }, 's/m');
  intake.list(c, { changes: [{ type: 'ADDED', current: cm('1', 'a') }], listed: [cm('1', 'a')], first: true, resync: false, resourceVersion: '1' }, 's/c');
  assert.deepEqual(sent, [], 'first lists send nothing');
  intake.change(m, { type: 'ADDED', current: mc('u3', 'three', 'cm') }, 's/m');
  sent.length = 0;
  intake.list(
    c,
    { changes: [{ type: 'MODIFIED', old: cm('1', 'a'), current: cm('2', 'b') }], listed: [cm('2', 'b')], first: false, resync: false, resourceVersion: '1' },
    's/c',
  );
  assert.deepEqual(sent.sort(), ['Related one', 'Related three']);
  sent.length = 0;
  intake.list(m, { changes: [], listed: [mc('u3', 'three', 'cm')], first: false, resync: false, resourceVersion: '1' }, 's/m'); // one is gone
  intake.change(c, { type: 'DELETED', old: cm('2', 'b'), current: cm('2', 'b') }, 's/c');
  assert.deepEqual(sent, ['Related three']);
});

test('the intake indexes primaries only when a related watch is configured: without one the index stays empty, with one it holds every listed and added primary', async () => {
  const { Intake } = await import('../../../src/forwarder/intake.ts');
  const { createForwarderMetrics } = await import('../../../src/forwarder/metrics.ts');
  const { silentLogger } = await import('../../../src/observability/log.ts');
  const intakeOf = (watches: readonly ResolvedWatch[]) =>
    new Intake({
      clusterId: 'k',
      lanes: { forward: () => {} } as never,
      watches: () => watches,
      isLeading: () => true,
      metrics: createForwarderMetrics(),
      log: silentLogger,
      now: () => 0,
    });
  const [m] = withRelatedFields([memcached, configMaps]) as [ResolvedWatch, ResolvedWatch];
  const mc = (uid: string, name: string) => snapshotOf({ metadata: { uid, name, namespace: 'ns', resourceVersion: '1', generation: 1 }, spec: {} }, m.fields)!;
  const feed = (intake: InstanceType<typeof Intake>) => {
    intake.list(m, { changes: [], listed: [mc('u1', 'one'), mc('u2', 'two')], first: true, resync: false, resourceVersion: '1' }, 's/m');
    intake.change(m, { type: 'ADDED', current: mc('u3', 'three') }, 's/m');
  };
  const without = intakeOf([memcached]);
  feed(without);
  assert.equal(without.related.size, 0);
  const withRelated = intakeOf(withRelatedFields([memcached, configMaps]));
  feed(withRelated);
  assert.equal(withRelated.related.size, 3);
});
