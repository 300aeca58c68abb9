import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  abandonAfterMs,
  answerAfterMs,
  canStart,
  packagedReserveProblem,
  packagedReserveProblems,
  reconcileAllowanceMs,
  reserveProblem,
  resolveReserveMs,
} from '../../../../src/core/invocation/budget.ts';

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
  assert.ok(
    reconcileAllowanceMs(4000, 2000) < abandonAfterMs(4000, 2000) && abandonAfterMs(4000, 2000) < answerAfterMs(4000, 2000),
    'abort, then abandon, then answer',
  );
  assert.equal(abandonAfterMs(100, 2000), 0);
  assert.equal(answerAfterMs(100, 2000), 0);
});

test('package time: a reserve at or above the function timeout is refused, naming the function and both values', () => {
  const problem = packagedReserveProblem({ name: 'memcached', timeout: 60, reserve: '60000' });
  assert.match(String(problem), /function "memcached": OPERLESS_BUDGET_RESERVE_MS is 60000 ms, at or above its timeout of 60 s/);
  assert.match(String(problem), /well below 60000 ms/);
  assert.ok(packagedReserveProblem({ name: 'f', timeout: '3', reserve: '5000' }), 'a timeout written as a string is still a number');
  assert.equal(packagedReserveProblem({ name: 'f', timeout: 60, reserve: '59999' }), undefined, 'below the timeout is accepted, as at invocation');
  assert.equal(packagedReserveProblem({ name: 'f', timeout: 60, reserve: undefined }), undefined, 'the default always fits');
  assert.equal(packagedReserveProblem({ name: 'f', timeout: 60, reserve: '' }), undefined);
  assert.equal(packagedReserveProblem({ name: 'f', timeout: 60, reserve: '${param:reserve}' }), undefined, 'a variable is resolved only at deploy time');
  assert.equal(packagedReserveProblem({ name: 'f', timeout: '${param:timeout}', reserve: '90000' }), undefined);
  assert.match(String(packagedReserveProblem({ name: 'f', timeout: 60, reserve: 'ten' })), /must be a non-negative number of milliseconds, got "ten"/);
});

test('package time agrees with invocation time: refused exactly when every invocation of that timeout refuses it', () => {
  for (const timeout of [1, 3, 60, 900]) {
    for (const reserve of [0, 500, timeout * 1000 - 1, timeout * 1000, timeout * 1000 + 1, 1_000_000]) {
      const packaged = packagedReserveProblem({ name: 'f', timeout, reserve: String(reserve) }) !== undefined;
      const invoked = reserveProblem(timeout * 1000, reserve, 'OPERLESS_BUDGET_RESERVE_MS') !== undefined;
      assert.equal(packaged, invoked, `timeout ${timeout} s, reserve ${reserve} ms`);
    }
  }
});

test("a serverless.yml's reconcile functions only: the resync function's environment is not checked", () => {
  const fns = [
    { name: 'memcached', sqs: true, timeout: 10, environment: { OPERLESS_BUDGET_RESERVE_MS: '10000' } },
    { name: 'resync', sqs: false, timeout: 5, environment: { OPERLESS_BUDGET_RESERVE_MS: '10000' } },
    { name: 'other', sqs: true, timeout: 60, environment: { OPERLESS_BUDGET_RESERVE_MS: '10000' } },
  ];
  const problems = packagedReserveProblems(fns);
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^function "memcached": OPERLESS_BUDGET_RESERVE_MS is 10000 ms, at or above its timeout of 10 s/);
});
