import { test } from 'node:test';
import assert from 'node:assert/strict';
import { finalizersPatch, hasFinalizer } from '../../../src/kube/finalizers.ts';
import { controllerReference, withControllerReference } from '../../../src/kube/owned.ts';
import { desiredStatus, jsonEqual } from '../../../src/kube/status.ts';
import { buildEvent, eventName, microTime } from '../../../src/kube/events.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const owner: KubeObject = {
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  metadata: { name: 'm', namespace: 'ns', uid: 'u-1', generation: 4, resourceVersion: '77', finalizers: ['a.io/x'] },
};
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
const PV = { apiVersion: 'v1', kind: 'PersistentVolume', plural: 'persistentvolumes', namespaced: false };

test('finalizer patch carries the resourceVersion guard', () => {
  assert.equal(hasFinalizer(owner, 'a.io/x'), true);
  assert.deepEqual(finalizersPatch(owner, ['a.io/x', 'b.io/y']), { metadata: { finalizers: ['a.io/x', 'b.io/y'], resourceVersion: '77' } });
});

test('controller reference: controller and blockOwnerDeletion set; owner namespace inherited', () => {
  assert.deepEqual(controllerReference(owner), {
    apiVersion: owner.apiVersion,
    kind: 'Memcached',
    name: 'm',
    uid: 'u-1',
    controller: true,
    blockOwnerDeletion: true,
  });
  const child = withControllerReference<KubeObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'm' } }, owner, DEPLOY);
  assert.equal(child.metadata.namespace, 'ns');
  assert.deepEqual(child.metadata.ownerReferences, [controllerReference(owner)]);
});

test('controller reference: replaces a stale ref to the same owner, keeps others', () => {
  const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: 'u-2' };
  const child = withControllerReference(
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'm', ownerReferences: [other, { ...controllerReference(owner), name: 'old' }] } },
    owner,
    DEPLOY,
  );
  assert.deepEqual(child.metadata.ownerReferences, [other, controllerReference(owner)]);
});

test('controller reference: impossible ownership is refused with a reason', () => {
  assert.throws(
    () => withControllerReference({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'm', namespace: 'elsewhere' } }, owner, DEPLOY),
    /cannot cross namespaces/,
  );
  assert.throws(
    () => withControllerReference({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'p' } }, owner, PV),
    /cluster-scoped PersistentVolume cannot be owned/,
  );
  assert.throws(() => controllerReference({ ...owner, metadata: { name: 'm' } }), /has no metadata.uid/);
});

test('jsonEqual ignores key order and undefined, not array order', () => {
  assert.equal(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), true);
  assert.equal(jsonEqual({ a: 1, x: undefined }, { a: 1 }), true);
  assert.equal(jsonEqual([1, 2], [2, 1]), false);
  assert.equal(jsonEqual({ a: 1 }, { a: 1, b: 2 }), false);
  assert.equal(jsonEqual(null, {}), false);
});

test('desiredStatus sets observedGeneration unless given', () => {
  assert.deepEqual(desiredStatus(owner, { nodes: [] }), { nodes: [], observedGeneration: 4 });
  assert.deepEqual(desiredStatus(owner, { observedGeneration: 3 }), { observedGeneration: 3 });
});

test('Event: deterministic name per occurrence, events.k8s.io/v1 shape', () => {
  const e = { type: 'Warning' as const, reason: 'InvalidSpec', action: 'Reconcile', note: 'bad' };
  assert.equal(eventName(owner, e), eventName(owner, e));
  assert.notEqual(eventName(owner, e), eventName(owner, { ...e, note: 'other' }));
  assert.notEqual(eventName(owner, e), eventName({ ...owner, metadata: { ...owner.metadata, uid: 'u-9' } }, e));
  assert.match(eventName(owner, e), /^m\.[0-9a-f]{16}$/);
  const now = new Date('2026-01-02T03:04:05.678Z');
  const ev = buildEvent(owner, e, { controller: 'operless/memcached', instance: 'fn-1', now });
  assert.equal(ev.eventTime, '2026-01-02T03:04:05.678000Z');
  assert.equal(microTime(now), '2026-01-02T03:04:05.678000Z');
  assert.deepEqual(ev.regarding, { apiVersion: owner.apiVersion, kind: 'Memcached', name: 'm', namespace: 'ns', uid: 'u-1', resourceVersion: '77' });
  assert.equal(ev.metadata.namespace, 'ns');
  assert.equal(buildEvent({ ...owner, metadata: { name: 'c', uid: 'x' } }, e, { controller: 'c', instance: 'i', now }).metadata.namespace, 'default');
  const long = buildEvent(owner, { ...e, note: 'x'.repeat(5000) }, { controller: 'c', instance: 'i', now });
  assert.equal((long.note as string).length, 1024);
});
