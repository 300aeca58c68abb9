/**
 * Per-key retry backoff: how long to wait before retry number `attempt` of one object.
 *
 * Like client-go's `ItemExponentialFailureRateLimiter` (doubling from a base up to a cap),
 * adapted to SQS: delays are whole seconds (SQS `DelaySeconds` is an integer) and never
 * exceed 900 s (the SQS maximum; longer waits use `notBefore`, see invocation/schedule.ts). Jitter
 * spreads retries of many keys that failed together (an API server outage, say) so they do
 * not come back as one thundering herd.
 *
 * The exponential formula and the jitter are the ones every retry in Operless shares
 * (src/retry/backoff.ts); this module is core's policy on top of them: seconds, SQS's cap,
 * validation of the user's `retry` options.
 *
 * Guarantees (unit-tested): the result is an integer in [1, capSeconds] (capSeconds itself
 * clamped to [1, 900]); without jitter it is `min(cap, ceil(base * 2^(attempt-1)))`; with
 * jitter it lies in [ceil(d/2), ceil(d)] of that un-jittered delay `d`, so it never grows
 * past the cap and never collapses to zero.
 */
import { equalJitter, exponentialDelay } from '../../retry/backoff.ts';
import type { RetryPolicy } from './types.ts';

/** The largest `DelaySeconds` SQS accepts. */
export const MAX_DELAY_SECONDS = 900;

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  baseSeconds: 1,
  capSeconds: MAX_DELAY_SECONDS,
  maxAttempts: 10,
});

/** Fills in defaults and rejects nonsense with a message naming the field. */
export function resolveRetryPolicy(partial: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(partial) };
  if (!Number.isFinite(policy.baseSeconds) || policy.baseSeconds <= 0) {
    throw new RangeError(`retry.baseSeconds must be a positive number of seconds, got ${policy.baseSeconds}`);
  }
  if (!Number.isFinite(policy.capSeconds) || policy.capSeconds < 1) {
    throw new RangeError(`retry.capSeconds must be at least 1 second, got ${policy.capSeconds}`);
  }
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError(`retry.maxAttempts must be a positive integer, got ${policy.maxAttempts}`);
  }
  return Object.freeze({ ...policy, capSeconds: Math.min(policy.capSeconds, MAX_DELAY_SECONDS) });
}

/**
 * Delay in whole seconds before retry number `attempt` (1 = first retry).
 * `random` returns a number in [0, 1); pass `() => 1 - Number.EPSILON` for "no jitter".
 */
export function backoffSeconds(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const cap = Math.max(1, Math.min(policy.capSeconds, MAX_DELAY_SECONDS));
  // The shared formula (src/retry/backoff.ts), counted from attempt 1 and rounded up to seconds.
  const full = exponentialDelay(Math.floor(attempt) - 1, policy.baseSeconds, cap);
  return clampSeconds(Math.ceil(equalJitter(full, random)), cap);
}

function clampSeconds(seconds: number, cap: number): number {
  if (!Number.isFinite(seconds)) return cap;
  return Math.min(cap, Math.max(1, seconds));
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
