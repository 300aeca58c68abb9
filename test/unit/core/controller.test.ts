import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineController } from '../../../src/core/controller.ts';
import { done } from '../../../src/core/result.ts';
import type { ControllerSpec } from '../../../src/core/types.ts';

const spec: ControllerSpec = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true, reconcile: async () => done() };

test('defaults: field manager, no finalizer without finalize, default retry policy', () => {
  const c = defineController(spec);
  assert.equal(c.name, 'memcached');
  assert.equal(c.fieldManager, 'operless-memcached');
  assert.equal(c.finalizer, undefined);
  assert.deepEqual(c.retry, { baseSeconds: 1, capSeconds: 900, maxAttempts: 10 });
  assert.deepEqual(c.kind, { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true });
});

test('with finalize the finalizer defaults to <group>/finalizer (core kinds: operless.dev)', () => {
  assert.equal(defineController({ ...spec, finalize: async () => done() }).finalizer, 'cache.example.com/finalizer');
  assert.equal(defineController({ ...spec, apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', finalize: async () => done() }).finalizer, 'operless.dev/finalizer');
  assert.equal(defineController({ ...spec, finalizer: 'x.io/cleanup', finalize: async () => done() }).finalizer, 'x.io/cleanup');
});

test('handles messages of its group and kind, in any version', () => {
  const c = defineController(spec);
  assert.equal(c.handles({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' }), true);
  assert.equal(c.handles({ apiVersion: 'cache.example.com/v1', kind: 'Memcached' }), true);
  assert.equal(c.handles({ apiVersion: 'other.example.com/v1alpha1', kind: 'Memcached' }), false);
  assert.equal(c.handles({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Redis' }), false);
});

test('mistakes fail at definition time with what to fix', () => {
  assert.throws(() => defineController({ ...spec, plural: 'Memcacheds' }), /plural must be the lower-case resource name/);
  assert.throws(() => defineController({ ...spec, apiVersion: 'cache.example.com' }), /apiVersion must look like/);
  assert.throws(() => defineController({ ...spec, kind: 'memcached' }), /kind must be PascalCase/);
  assert.throws(() => defineController({ ...spec, namespaced: undefined as unknown as boolean }), /namespaced must be true or false/);
  assert.throws(() => defineController({ ...spec, reconcile: undefined as unknown as ControllerSpec['reconcile'] }), /reconcile\(object, ctx\) is required/);
  assert.throws(() => defineController({ ...spec, retry: { maxAttempts: 0 } }), /defineController\(Memcached\): retry\.maxAttempts/);
  assert.throws(() => defineController({ ...spec, finalizer: 'nofinalizerdomain', finalize: async () => done() }), /domain-qualified/);
});
