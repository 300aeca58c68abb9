import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiGroup, resourcePath } from '../../../src/kube/paths.ts';

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
