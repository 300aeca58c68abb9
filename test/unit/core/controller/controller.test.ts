import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkMessageField } from '../../../../src/contract/message.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { done } from '../../../../src/core/controller/result.ts';
import type { ControllerSpec } from '../../../../src/core/controller/types.ts';
import { fcParameters } from '../../../support/fast-check.ts';

const spec: ControllerSpec = {
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  plural: 'memcacheds',
  namespaced: true,
  reconcile: async () => done(),
};

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
  assert.equal(
    defineController({ ...spec, apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', finalize: async () => done() }).finalizer,
    'operless.dev/finalizer',
  );
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

test('defineController refuses what the message contract would refuse, naming the field', () => {
  // Each of these was accepted by defineController and then refused by every message naming the kind.
  for (const apiVersion of ['a..b/v1', '-cache.example.com/v1', '.x/v1', 'cache.example.com./v1alpha1', 'cache-.example.com/v1']) {
    assert.ok(checkMessageField('apiVersion', apiVersion), `the contract refuses ${apiVersion}`);
    assert.throws(() => defineController({ ...spec, apiVersion }), /defineController\(Memcached\): apiVersion must look like/);
  }
  const longKind = `M${'x'.repeat(63)}`;
  assert.ok(checkMessageField('kind', longKind), 'the contract refuses a kind of 64 characters');
  assert.throws(() => defineController({ ...spec, kind: longKind }), /kind must be PascalCase like "Memcached", at most 63 characters/);
  assert.throws(() => defineController({ ...spec, plural: 'p'.repeat(64) }), /plural must be the lower-case resource name/);
});

test('property: defineController accepts an apiVersion and a kind exactly when a message may carry them', () => {
  const piece = fc.constantFrom('a', 'z', '0', '9', '-', '.', '/', 'v', '1', 'alpha', 'beta', 'A', '_', 'cache', 'example', 'com');
  const apiVersion = fc.oneof(
    fc.array(piece, { maxLength: 12 }).map((p) => p.join('')),
    fc.tuple(fc.array(piece, { maxLength: 8 }), fc.constantFrom('v1', 'v1alpha1', 'v2beta3', 'v0')).map(([g, v]) => `${g.join('')}/${v}`),
  );
  const kind = fc.oneof(fc.constantFrom('Memcached', 'memcached', 'Mem_cached', '', 'M'.repeat(64), 'M'.repeat(63)), fc.string({ maxLength: 8 }));
  fc.assert(
    fc.property(apiVersion, kind, (av, k) => {
      const contractAccepts = checkMessageField('apiVersion', av) === undefined && checkMessageField('kind', k) === undefined;
      let defined = true;
      try {
        defineController({ ...spec, apiVersion: av, kind: k });
      } catch {
        defined = false;
      }
      assert.equal(defined, contractAccepts, `apiVersion ${JSON.stringify(av)}, kind ${JSON.stringify(k)}`);
    }),
    fcParameters({ numRuns: 500 }),
  );
});
