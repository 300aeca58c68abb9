import { test } from 'node:test';
import assert from 'node:assert/strict';
import { changedAspects, shouldForwardUpdate } from '../../../src/forwarder/route/predicates.ts';
import { snapshotOf, type ObjectSnapshot } from '../../../src/forwarder/source/snapshot.ts';
import { DEFAULT_OWNED_TRIGGERS, DEFAULT_PRIMARY_TRIGGERS } from '../../../src/forwarder/config/config.ts';
import { REQUEUE_MARK_ANNOTATION } from '../../../src/contract/requeue-mark.ts';
import { timerMarkAnnotation } from '../../../src/contract/timer-mark.ts';

function obj(meta: Record<string, unknown>, rest: Record<string, unknown> = {}): ObjectSnapshot {
  const s = snapshotOf({ metadata: { uid: 'u1', name: 'a', namespace: 'ns', resourceVersion: '1', generation: 1, ...meta }, ...rest });
  assert.ok(s);
  return s;
}

test('snapshotOf needs uid and name, and finds the controller owner reference', () => {
  assert.equal(snapshotOf({ metadata: { name: 'x' } }), undefined);
  assert.equal(snapshotOf({}), undefined);
  const s = obj({
    ownerReferences: [
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'not-controller', uid: 'o0' },
      { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'owner', uid: 'o1', controller: true },
    ],
  });
  assert.deepEqual(s.controller, { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'owner', uid: 'o1' });
});

test('a status-only update of a primary is dropped by default', () => {
  const before = obj({}, { status: { ready: false } });
  const after = obj({ resourceVersion: '2' }, { status: { ready: true } });
  assert.deepEqual([...changedAspects(before, after)].sort(), ['any', 'status']);
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, before, after), false);
  assert.equal(shouldForwardUpdate(DEFAULT_OWNED_TRIGGERS, before, after), true, 'owned objects forward status changes');
  assert.equal(shouldForwardUpdate(['status'], before, after), true, 'configurable');
});

test('the function writing its pending-requeue mark changes no aspect but the resourceVersion: no reconcile by default', () => {
  const before = obj({ annotations: { keep: 'x' } });
  const marked = obj({ resourceVersion: '2', annotations: { keep: 'x', [REQUEUE_MARK_ANNOTATION]: '1700000000000' } });
  const moved = obj({ resourceVersion: '3', annotations: { keep: 'x', [REQUEUE_MARK_ANNOTATION]: '1700000030000' } });
  assert.deepEqual([...changedAspects(before, marked)], ['any']);
  assert.deepEqual([...changedAspects(marked, moved)], ['any']);
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, before, marked), false);
  const edited = obj({ resourceVersion: '4', annotations: { keep: 'y', [REQUEUE_MARK_ANNOTATION]: '1700000030000' } });
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, moved, edited), true, 'another annotation still counts');
});

test('the function writing a timer mark (core/controller/timer.ts) changes no aspect but the resourceVersion: a tick does not cause a reconcile', () => {
  const before = obj({ annotations: { keep: 'x' } });
  const marked = obj({ resourceVersion: '2', annotations: { keep: 'x', [timerMarkAnnotation('health')]: '1700000000000' } });
  const moved = obj({
    resourceVersion: '3',
    annotations: { keep: 'x', [timerMarkAnnotation('health')]: '1700000300000', [timerMarkAnnotation('backup')]: '1700000060000' },
  });
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, before, marked), false);
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, marked, moved), false);
  const unmarked = obj({ resourceVersion: '4', annotations: { keep: 'x' } });
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, moved, unmarked), false, "removing the mark (a paused object's tick) causes none either");
});

test('generation, labels, annotations and deletion each pass the primary predicate; a finalizer change only when asked for', () => {
  const base = obj({});
  const cases: [string, ObjectSnapshot][] = [
    ['generation', obj({ resourceVersion: '2', generation: 2 })],
    ['labels', obj({ resourceVersion: '2', labels: { a: 'b' } })],
    ['annotations', obj({ resourceVersion: '2', annotations: { a: 'b' } })],
    ['finalizers', obj({ resourceVersion: '2', finalizers: ['x/y'] })],
    ['deletion', obj({ resourceVersion: '2', deletionTimestamp: '2026-01-01T00:00:00Z' })],
  ];
  for (const [aspect, after] of cases) {
    assert.ok(changedAspects(base, after).has(aspect as never), aspect);
    assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, base, after), aspect !== 'finalizers', aspect);
    assert.equal(shouldForwardUpdate([...DEFAULT_PRIMARY_TRIGGERS, 'finalizers'], base, after), true, `opted in: ${aspect}`);
    assert.equal(shouldForwardUpdate(['generation'], base, after), aspect === 'generation', `only generation: ${aspect}`);
  }
});

test('a bare resourceVersion bump (e.g. managedFields) is dropped for primaries', () => {
  const before = obj({});
  const after = obj({ resourceVersion: '9', managedFields: [{ manager: 'x' }] });
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, before, after), false);
  assert.equal(shouldForwardUpdate(['any'], before, after), true);
});

test('identical snapshots change nothing', () => {
  const a = obj({ labels: { x: '1' } }, { status: { s: 1 } });
  assert.equal(changedAspects(a, a).size, 0);
  assert.equal(shouldForwardUpdate(['any'], a, a), false);
});

test('kinds without generation (ConfigMap) forward data changes but not status-only ones', () => {
  const before = snapshotOf({ metadata: { uid: 'u', name: 'c', resourceVersion: '1' }, data: { a: '1' } })!;
  const after = snapshotOf({ metadata: { uid: 'u', name: 'c', resourceVersion: '2' }, data: { a: '2' } })!;
  assert.ok(changedAspects(before, after).has('generation'));
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, before, after), true);
  const statusOnly = snapshotOf({ metadata: { uid: 'u', name: 'c', resourceVersion: '3' }, data: { a: '1' }, status: { x: 1 } })!;
  assert.equal(shouldForwardUpdate(DEFAULT_PRIMARY_TRIGGERS, before, statusOnly), false);
});

test('large annotations are compared by digest and still detect a change', () => {
  const big = 'x'.repeat(100_000);
  const a = obj({ annotations: { big } });
  const b = obj({ resourceVersion: '2', annotations: { big: `${big}y` } });
  assert.ok(a.annotations.length < 100);
  assert.ok(changedAspects(a, b).has('annotations'));
});

test('a kind without generation: a data change is a generation change even with an annotation change in the same write; a metadata-only write is not', () => {
  const aspects = changedAspects;
  const cm = (rv: string, data: Record<string, string>, annotations: Record<string, string>) =>
    snapshotOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { uid: 'u', name: 'c', resourceVersion: rv, annotations }, data })!;
  const before = cm('1', { a: '1' }, { applied: 'x' });
  assert.ok(aspects(before, cm('2', { a: '2' }, { applied: 'y' })).has('generation'), 'kubectl apply: data and annotation together');
  assert.ok(!aspects(before, cm('2', { a: '1' }, { applied: 'y' })).has('generation'), 'an annotation alone');
  assert.equal(JSON.stringify(cm('1', { secret: 'hunter2' }, {})).includes('hunter2'), false, 'the content is hashed, never kept');
});
