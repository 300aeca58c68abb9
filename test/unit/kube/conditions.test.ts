import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findCondition, isConditionTrue, kubeTime, removeCondition, setCondition } from '../../../src/kube/conditions.ts';

const t0 = new Date('2026-01-01T00:00:00.123Z');
const t1 = new Date('2026-01-01T01:00:00Z');

test('a new condition gets lastTransitionTime now (seconds precision)', () => {
  const cs = setCondition(undefined, { type: 'Available', status: 'False', reason: 'Scaling', message: '0/3', observedGeneration: 1 }, t0);
  assert.deepEqual(cs, [
    { type: 'Available', status: 'False', reason: 'Scaling', message: '0/3', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 },
  ]);
});

test('same status, new reason/message: lastTransitionTime is kept', () => {
  const c0 = setCondition(undefined, { type: 'Available', status: 'False', reason: 'Scaling', message: '0/3' }, t0);
  const c1 = setCondition(c0, { type: 'Available', status: 'False', reason: 'Scaling', message: '2/3', observedGeneration: 2 }, t1);
  assert.equal(c1[0]?.lastTransitionTime, kubeTime(t0));
  assert.equal(c1[0]?.message, '2/3');
  assert.equal(c1[0]?.observedGeneration, 2);
});

test('status change: lastTransitionTime moves', () => {
  const c0 = setCondition(undefined, { type: 'Available', status: 'False', reason: 'Scaling', message: '' }, t0);
  const c1 = setCondition(c0, { type: 'Available', status: 'True', reason: 'Ready', message: '' }, t1);
  assert.equal(c1[0]?.lastTransitionTime, kubeTime(t1));
});

test('other conditions are untouched, order kept, input not mutated', () => {
  const c0 = Object.freeze([
    Object.freeze({ type: 'A', status: 'True' as const, reason: 'r', message: '', lastTransitionTime: 'x' }),
    Object.freeze({ type: 'B', status: 'True' as const, reason: 'r', message: '', lastTransitionTime: 'y' }),
  ]);
  const c1 = setCondition(c0, { type: 'A', status: 'False', reason: 'r2', message: '' }, t1);
  assert.deepEqual(
    c1.map((c) => c.type),
    ['A', 'B'],
  );
  assert.equal(c1[1], c0[1]);
  assert.equal(isConditionTrue(c1, 'B'), true);
  assert.equal(isConditionTrue(c1, 'A'), false);
  assert.equal(findCondition(c1, 'C'), undefined);
  assert.deepEqual(
    removeCondition(c1, 'A').map((c) => c.type),
    ['B'],
  );
});
