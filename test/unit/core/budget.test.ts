import { test } from 'node:test';
import assert from 'node:assert/strict';
import { abandonAfterMs, answerAfterMs, canStart, reconcileAllowanceMs, resolveReserveMs } from '../../../src/core/budget.ts';

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

test('a reconcile ignoring its aborted signal is abandoned at a quarter of the reserve; the handler answers at a tenth', () => {
  // A 4 s invocation with a 2 s reserve: abort at 1 s left, abandon at 500 ms, answer at 200 ms.
  assert.equal(reconcileAllowanceMs(4000, 2000), 3000);
  assert.equal(abandonAfterMs(4000, 2000), 3500);
  assert.equal(answerAfterMs(4000, 2000), 3800);
  assert.ok(reconcileAllowanceMs(4000, 2000) < abandonAfterMs(4000, 2000) && abandonAfterMs(4000, 2000) < answerAfterMs(4000, 2000), 'abort, then abandon, then answer');
  assert.equal(abandonAfterMs(100, 2000), 0);
  assert.equal(answerAfterMs(100, 2000), 0);
});
