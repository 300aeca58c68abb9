import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../../support/fast-check.ts';
import { backoffSeconds, DEFAULT_RETRY_POLICY, MAX_DELAY_SECONDS, resolveRetryPolicy } from '../../../../src/core/controller/retry-policy.ts';

const noJitter = () => 1 - Number.EPSILON;

test('without jitter the delay doubles from the base and stops at the cap', () => {
  const policy = resolveRetryPolicy({ baseSeconds: 1, capSeconds: 60 });
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 8].map((a) => backoffSeconds(a, policy, noJitter)),
    [1, 2, 4, 8, 16, 32, 60, 60],
  );
});

test('fractional bases are quantized up to whole seconds (SQS DelaySeconds is an integer)', () => {
  const policy = resolveRetryPolicy({ baseSeconds: 0.005 });
  assert.equal(backoffSeconds(1, policy, noJitter), 1);
  assert.equal(backoffSeconds(12, policy, noJitter), Math.ceil(0.005 * 2 ** 11));
});

test('the cap is clamped to the SQS maximum of 900 s', () => {
  const policy = resolveRetryPolicy({ capSeconds: 5000 });
  assert.equal(policy.capSeconds, MAX_DELAY_SECONDS);
  assert.equal(backoffSeconds(40, policy, noJitter), 900);
});

test('huge attempts do not overflow to NaN or Infinity', () => {
  assert.equal(backoffSeconds(10_000, DEFAULT_RETRY_POLICY, noJitter), 900);
  assert.equal(
    backoffSeconds(10_000, DEFAULT_RETRY_POLICY, () => 0),
    450,
  );
});

test('property: with jitter the delay is an integer within [ceil(d/2), ceil(d)] and [1, cap]', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 200 }),
      fc.double({ min: 0.001, max: 100, noNaN: true }),
      fc.integer({ min: 1, max: 2000 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (attempt, base, cap, r) => {
        const policy = resolveRetryPolicy({ baseSeconds: base, capSeconds: cap });
        const d = Math.min(policy.capSeconds, base * 2 ** Math.max(0, attempt - 1));
        const got = backoffSeconds(attempt, policy, () => r);
        assert.ok(Number.isInteger(got));
        assert.ok(got >= 1 && got <= policy.capSeconds, `got ${got}`);
        assert.ok(got <= Math.max(1, Math.ceil(d)), `got ${got} > ceil(${d})`);
        assert.ok(got >= Math.min(policy.capSeconds, Math.max(1, Math.ceil(d / 2))), `got ${got} < ceil(${d}/2)`);
      },
    ),
    fcParameters(),
  );
});

test('property: without jitter the delay never decreases as attempts grow', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 60 }), (attempt) => {
      assert.ok(backoffSeconds(attempt + 1, DEFAULT_RETRY_POLICY, noJitter) >= backoffSeconds(attempt, DEFAULT_RETRY_POLICY, noJitter));
    }),
    fcParameters(),
  );
});

test('bad policies are rejected naming the field', () => {
  assert.throws(() => resolveRetryPolicy({ baseSeconds: 0 }), /retry\.baseSeconds/);
  assert.throws(() => resolveRetryPolicy({ capSeconds: 0.5 }), /retry\.capSeconds/);
  assert.throws(() => resolveRetryPolicy({ maxAttempts: 1.5 }), /retry\.maxAttempts/);
  assert.deepEqual(resolveRetryPolicy({ maxAttempts: undefined }), DEFAULT_RETRY_POLICY);
});
