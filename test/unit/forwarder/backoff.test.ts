import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Backoff, backoffDelay, pause } from '../../../src/retry/backoff.ts';
import { backoffDelayMs } from '../../../bench/baseline/rate-limiter.ts';
import { backoffSeconds, MAX_DELAY_SECONDS } from '../../../src/core/controller/retry-policy.ts';
import { fcParameters } from '../../support/fast-check.ts';

const policy = { initialMs: 800, maxMs: 30_000 };

test('delay doubles from the initial value and is capped', () => {
  assert.equal(
    backoffDelay(0, policy, () => 1),
    800,
  );
  assert.equal(
    backoffDelay(1, policy, () => 1),
    1600,
  );
  assert.equal(
    backoffDelay(5, policy, () => 1),
    25_600,
  );
  assert.equal(
    backoffDelay(6, policy, () => 1),
    30_000,
  );
  assert.equal(
    backoffDelay(1000, policy, () => 1),
    30_000,
  );
});

test('jitter spreads delays over [d/2, d]', () => {
  assert.equal(
    backoffDelay(0, policy, () => 0),
    400,
  );
  for (let i = 0; i < 200; i++) {
    const d = backoffDelay(3, policy);
    assert.ok(d >= 3200 && d <= 6400, `delay ${d}`);
  }
});

test('the tracker grows per failure and resets after a healthy period', () => {
  let now = 0;
  const b = new Backoff(
    { ...policy, resetAfterMs: 120_000 },
    () => 1,
    () => now,
  );
  assert.deepEqual([b.fail(), b.fail(), b.fail()], [800, 1600, 3200]);
  b.healthy();
  now += 60_000;
  assert.equal(b.fail(), 6400, 'a short healthy spell does not reset');
  b.healthy();
  now += 120_000;
  assert.equal(b.fail(), 800, 'a long healthy spell resets');
  b.reset();
  assert.equal(b.attempt, 0);
});

// The one backoff (src/retry/backoff.ts): the formula the three policies share gives what each
// of them computed before it was shared — the forwarder's (exponent clamped at 60), core's
// (seconds from attempt 1) and the baseline rate limiter's (no jitter).
const forwarderBefore = (attempt: number, initialMs: number, maxMs: number, r: number) => {
  const exp = Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(attempt, 0), 60));
  return Math.max(1, Math.min(maxMs, Math.round(exp / 2 + (exp / 2) * r)));
};
const coreBefore = (attempt: number, baseSeconds: number, capSeconds: number, r: number) => {
  const cap = Math.max(1, Math.min(capSeconds, MAX_DELAY_SECONDS));
  const full = Math.min(cap, baseSeconds * 2 ** Math.max(0, Math.floor(attempt) - 1));
  const seconds = Math.ceil(full / 2 + (full / 2) * Math.min(Math.max(r, 0), 1));
  return Number.isFinite(seconds) ? Math.min(cap, Math.max(1, seconds)) : cap;
};
const baselineBefore = (failures: number, baseMs: number, capMs: number) => Math.min(capMs, baseMs * 2 ** Math.min(failures, 60));

test('property: the shared formula gives what the forwarder, core and the baseline computed before', () => {
  const random = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 2_000 }),
      fc.integer({ min: 1, max: 60_000 }),
      fc.integer({ min: 1, max: 3_600_000 }),
      random,
      (attempt, initialMs, extraMs, r) => {
        const maxMs = initialMs + extraMs;
        assert.equal(
          backoffDelay(attempt, { initialMs, maxMs }, () => r),
          forwarderBefore(attempt, initialMs, maxMs, r),
        );
        assert.equal(backoffDelayMs(attempt, initialMs, maxMs), baselineBefore(attempt, initialMs, maxMs));
      },
    ),
    fcParameters({ numRuns: 500 }),
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 2_000 }),
      fc.double({ min: 0.001, max: 120, noNaN: true }),
      fc.integer({ min: 1, max: 900 }),
      random,
      (attempt, baseSeconds, capSeconds, r) => {
        const policy = { baseSeconds, capSeconds, maxAttempts: 10 };
        assert.equal(
          backoffSeconds(attempt, policy, () => r),
          coreBefore(attempt, baseSeconds, capSeconds, r),
        );
      },
    ),
    fcParameters({ numRuns: 500 }),
  );
});

test('pause resolves after its time, or at once when its signal aborts, and never rejects', async () => {
  await pause(1);
  const aborted = new AbortController();
  aborted.abort();
  await pause(60_000, aborted.signal);
  const later = new AbortController();
  const waiting = pause(60_000, later.signal);
  later.abort();
  await waiting;
});
