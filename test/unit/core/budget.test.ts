import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canStart, reconcileAllowanceMs, resolveReserveMs } from '../../../src/core/budget.ts';

test('the default reserve is 20% of the start budget, within [500 ms, 10 s]', () => {
  assert.equal(resolveReserveMs(3000), 600);
  assert.equal(resolveReserveMs(900_000), 10_000);
  assert.equal(resolveReserveMs(1000), 500);
  assert.equal(resolveReserveMs(60_000, 2500), 2500, 'a configured reserve wins');
});

test('keys start only while more than the reserve remains', () => {
  assert.equal(canStart(5001, 5000), true);
  assert.equal(canStart(5000, 5000), false);
  assert.equal(canStart(100, 5000), false);
});

test('a running reconcile is stopped when half the reserve is left', () => {
  assert.equal(reconcileAllowanceMs(30_000, 10_000), 25_000);
  assert.equal(reconcileAllowanceMs(1000, 10_000), 0);
});
