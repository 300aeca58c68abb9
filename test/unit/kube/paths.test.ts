import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { apiGroup, collectionPath, groupVersionPrefix, resourcePath } from '../../../src/kube/paths.ts';
import { fcParameters } from '../../support/fast-check.ts';

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
const NS = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
const CM = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

test('named groups live under /apis, the core group under /api', () => {
  assert.equal(resourcePath(MC, { namespace: 'ns', name: 'm' }), '/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/m');
  assert.equal(resourcePath(CM, { namespace: 'ns', name: 'c' }), '/api/v1/namespaces/ns/configmaps/c');
  assert.equal(resourcePath(NS, { name: 'kube-system' }), '/api/v1/namespaces/kube-system');
});

test('collections, all-namespace lists and the status subresource', () => {
  assert.equal(resourcePath(MC, { namespace: 'ns' }), '/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds');
  assert.equal(resourcePath(MC), '/apis/cache.example.com/v1alpha1/memcacheds');
  assert.equal(resourcePath(MC, { namespace: 'ns', name: 'm', subresource: 'status' }), '/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/m/status');
});

test('scope mistakes are explained', () => {
  assert.throws(() => resourcePath(MC, { name: 'm' }), /Memcached is namespaced: a namespace is needed/);
  assert.throws(() => resourcePath(NS, { namespace: 'x', name: 'y' }), /Namespace is cluster-scoped/);
});

test('names are path-encoded', () => {
  assert.equal(resourcePath(CM, { namespace: 'ns', name: 'a b' }), '/api/v1/namespaces/ns/configmaps/a%20b');
});

test('apiGroup', () => {
  assert.equal(apiGroup('apps/v1'), 'apps');
  assert.equal(apiGroup('v1'), '');
});

test('collectionPath: the path to list or watch, in one namespace or all of them; a cluster-scoped kind ignores a namespace', () => {
  assert.equal(collectionPath(MC, 'ns'), '/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds');
  assert.equal(collectionPath(MC), '/apis/cache.example.com/v1alpha1/memcacheds');
  assert.equal(collectionPath(CM, 'a b'), '/api/v1/namespaces/a%20b/configmaps');
  assert.equal(collectionPath(NS, 'ignored'), '/api/v1/namespaces');
  assert.equal(collectionPath({ apiVersion: 'apps/v1', plural: 'deployments', namespaced: true }, ''), '/apis/apps/v1/deployments');
});

const apiVersions = fc.oneof(
  fc.constantFrom('v1', 'apps/v1', 'coordination.k8s.io/v1', 'cache.example.com/v1alpha1'),
  fc.tuple(fc.option(fc.domain(), { nil: undefined }), fc.stringMatching(/^v[1-9][a-z0-9]{0,6}$/)).map(([g, v]) => (g ? `${g}/${v}` : v)),
);
const coordinates = fc.record({ apiVersion: apiVersions, plural: fc.stringMatching(/^[a-z][a-z0-9]{0,20}$/), namespaced: fc.boolean() });

test('collectionPath is what resourcePath gives a collection', () => {
  fc.assert(
    fc.property(coordinates, fc.option(fc.string(), { nil: undefined }), (kind, namespace) => {
      if (kind.namespaced || !namespace) assert.equal(collectionPath(kind, namespace), resourcePath({ ...kind, kind: 'K' }, { namespace }));
    }),
    fcParameters({ numRuns: 300 }),
  );
});

test('apiGroup: the part before the first slash, the core group empty (the router and the queue routes group kinds by it)', () => {
  assert.equal(apiGroup('coordination.k8s.io/v1'), 'coordination.k8s.io');
  assert.equal(apiGroup('a/b/c'), 'a');
  assert.equal(apiGroup(''), '');
  assert.equal(apiGroup('/v1'), '');
});

test('groupVersionPrefix is the discovery document of a group version', () => {
  assert.equal(groupVersionPrefix('v1'), '/api/v1');
  assert.equal(groupVersionPrefix('apps/v1'), '/apis/apps/v1');
});
