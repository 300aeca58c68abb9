import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectFieldsOf, resolveFromDiscovery, withRelatedFields, type ResolvedWatch } from '../../../src/forwarder/source/watches.ts';
import { DEFAULT_OWNED_TRIGGERS, DEFAULT_PRIMARY_TRIGGERS, parseConfig, type Trigger } from '../../../src/forwarder/config/config.ts';

const discovery = {
  resources: [
    { name: 'deployments', kind: 'Deployment', namespaced: true },
    { name: 'deployments/status', kind: 'Deployment', namespaced: true },
    { name: 'clusterthings', kind: 'ClusterThing', namespaced: false },
  ],
};

function watch(extra: Record<string, unknown>) {
  return parseConfig({
    clusterId: 'c',
    queue: { url: 'https://sqs.eu-west-1.amazonaws.com/1/q' },
    primaries: [{ apiVersion: 'apps/v1', kind: 'Deployment', ...extra }],
  }).watches[0]!;
}

test('plural and scope from discovery, skipping subresources', () => {
  const r = resolveFromDiscovery(watch({}), discovery);
  assert.ok(typeof r !== 'string');
  assert.equal(r.plural, 'deployments');
  assert.equal(r.namespaced, true);
  assert.equal(r.group, 'apps');
});

test('explicit plural and scope need no discovery', () => {
  const r = resolveFromDiscovery(watch({ plural: 'deployments', namespaced: true }), undefined);
  assert.ok(typeof r !== 'string');
});

test('an unknown kind says to check the CRD and apiVersion', () => {
  const r = resolveFromDiscovery(watch({ kind: 'Nope' }), discovery);
  assert.equal(typeof r, 'string');
  assert.match(r as string, /Nope \(apps\/v1\) is not served.*CRD installed/);
});

test('namespaces on a kind discovery finds cluster-scoped is rejected', () => {
  const r = resolveFromDiscovery(watch({ kind: 'ClusterThing', namespaces: ['a'] }), discovery);
  assert.match(String(r), /cluster-scoped/);
});

test('a watch reads metadata only unless its triggers must tell a status write apart', () => {
  const fields = (apiVersion: string, triggers: string[]) => objectFieldsOf({ apiVersion, triggers: triggers as Trigger[] });
  assert.deepEqual(fields('cache.example.com/v1alpha1', [...DEFAULT_PRIMARY_TRIGGERS]), [], 'a custom primary with the default triggers (generation tracked)');
  assert.deepEqual(fields('apps/v1', [...DEFAULT_OWNED_TRIGGERS]), [], 'an owned kind with the default triggers (any)');
  assert.deepEqual(fields('v1', ['any', 'status']), [], '`any` forwards every change anyway');
  assert.deepEqual(fields('apps/v1', ['status']), ['status'], 'a status trigger reads the status');
  assert.deepEqual(fields('v1', [...DEFAULT_PRIMARY_TRIGGERS]), ['status'], 'a core kind (no generation) tells status writes from data changes by the status');
  assert.deepEqual(fields('v1', ['labels']), [], 'a core kind whose triggers read metadata only');
  const resolved = resolveFromDiscovery(watch({ triggers: ['status'] }), discovery);
  assert.ok(typeof resolved !== 'string');
  assert.deepEqual(resolved.objectFields, ['status'], 'resolving carries the choice');
});

test('related mappings widen only the watches they read: a related watch reads the whole object, a primary the spec paths of its field mappings', () => {
  assert.deepEqual(objectFieldsOf({ role: 'related', apiVersion: 'v1', triggers: ['any'] }), ['*'], 'a related watch tells data changes by its content digest');
  const base = { namespaced: true, namespaces: [], triggers: [...DEFAULT_PRIMARY_TRIGGERS] } as const;
  const memcached: ResolvedWatch = {
    ...base,
    role: 'primary',
    apiVersion: 'cache.example.com/v1alpha1',
    kind: 'Memcached',
    group: 'cache.example.com',
    plural: 'memcacheds',
    objectFields: [],
  };
  const other: ResolvedWatch = {
    ...base,
    role: 'primary',
    apiVersion: 'cache.example.com/v1alpha1',
    kind: 'Other',
    group: 'cache.example.com',
    plural: 'others',
    objectFields: [],
  };
  const configMaps: ResolvedWatch = {
    ...base,
    role: 'related',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    group: '',
    plural: 'configmaps',
    objectFields: ['*'],
    targets: [
      { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', map: { field: 'spec.configMapRef.name' } },
      { apiVersion: 'cache.example.com/v1alpha1', kind: 'Other', map: { label: 'example.com/other' } },
    ],
  };
  const [m, o, c] = withRelatedFields([memcached, other, configMaps]);
  assert.deepEqual(m?.objectFields, ['spec.configMapRef.name'], 'the primary a field mapping reads gets that path (and so whole objects)');
  assert.deepEqual(m?.fields, ['spec.configMapRef.name']);
  assert.deepEqual(o?.objectFields, [], 'a primary only a label mapping names stays metadata only');
  assert.deepEqual(c?.objectFields, ['*']);
  assert.deepEqual(c?.fields, ['label:example.com/other'], "a label mapping reads the related object's label");
});

test('namespace scope: a namespaced watch without namespaces of its own gets the scope; its own stay; a cluster-scoped kind stays cluster-wide', () => {
  const scoped = resolveFromDiscovery(watch({}), discovery, ['team-a', 'team-b']);
  assert.ok(typeof scoped !== 'string');
  assert.deepEqual(scoped.namespaces, ['team-a', 'team-b']);
  const own = resolveFromDiscovery(watch({ namespaces: ['team-a'] }), discovery, ['team-a', 'team-b']);
  assert.ok(typeof own !== 'string');
  assert.deepEqual(own.namespaces, ['team-a']);
  const declared = resolveFromDiscovery(watch({ plural: 'deployments', namespaced: true }), undefined, ['team-a']);
  assert.ok(typeof declared !== 'string');
  assert.deepEqual(declared.namespaces, ['team-a']);
  const cluster = resolveFromDiscovery(watch({ kind: 'ClusterThing' }), discovery, ['team-a']);
  assert.ok(typeof cluster !== 'string');
  assert.equal(cluster.namespaced, false);
  assert.deepEqual(cluster.namespaces, []);
  const unscoped = resolveFromDiscovery(watch({}), discovery);
  assert.ok(typeof unscoped !== 'string');
  assert.deepEqual(unscoped.namespaces, []);
});
