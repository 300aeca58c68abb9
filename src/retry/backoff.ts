/**
 * Backoff, written once: the exponential formula every retry in Operless shares, the jitter
 * that spreads many clients failing together, the stateful tracker the forwarder's watch
 * streams and senders use, and an abortable pause.
 *
 * Three policies are built on it, and they are genuinely different, so they stay apart:
 * - the forwarder's reconnect and retry backoff (`Backoff`, `backoffDelay`: milliseconds,
 *   client-go's reflector / kube-rs `DefaultBackoff`, 800 ms doubling to 30 s, reset after
 *   120 s of health);
 * - core's per-key retry policy for messages (src/core/controller/retry-policy.ts: whole seconds for SQS
 *   `DelaySeconds`, capped at 900 s, counted from attempt 1);
 * - the baseline's per-item rate limiter (bench/baseline/rate-limiter.ts: client-go's
 *   `ItemExponentialFailureRateLimiter`, no jitter).
 *
 * Guarantees: `exponentialDelay` and `equalJitter` are pure (randomness injected) and never
 * NaN for finite non-negative inputs; `exponentialDelay` never exceeds its cap and is
 * `initial × factor^failures` below it; `equalJitter(d)` lies in [d/2, d]; `backoffDelay` is an
 * integer in [1, max] (in [initial/2, max] for initial ≥ 2); the `Backoff` tracker never
 * grows past `max` and returns to `initial` once the caller has been healthy for
 * `resetAfterMs`; `pause` resolves (never rejects) after `ms` or as soon as its signal aborts.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * `initial × factor^failures`, capped at `cap`. Pure. The exponent is clamped at 1023 (the
 * largest with a finite power of two), so a huge failure count gives the cap, never NaN.
 */
export function exponentialDelay(failures: number, initial: number, cap: number, factor = 2): number {
  return Math.min(cap, initial * factor ** Math.min(Math.max(failures, 0), 1023));
}

/** Spreads `delay` over [delay/2, delay] ("equal jitter"); `random` in [0, 1), clamped to [0, 1]. Pure. */
export function equalJitter(delay: number, random: () => number = Math.random): number {
  const r = Math.min(Math.max(random(), 0), 1);
  return delay / 2 + (delay / 2) * r;
}

export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
  /** Growth per failure (default 2). */
  readonly factor?: number;
  /** A healthy streak this long resets the attempt count (default 120 s). */
  readonly resetAfterMs?: number;
}

/**
 * Delay before retry number `attempt` (0-based), in whole milliseconds: initial·factor^attempt,
 * capped at max, then jittered into [d/2, d] so that many clients restarted together spread out.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const jittered = equalJitter(exponentialDelay(attempt, policy.initialMs, policy.maxMs, policy.factor ?? 2), random);
  return Math.max(1, Math.min(policy.maxMs, Math.round(jittered)));
}

/** Tracks consecutive failures of one activity (a watch, the queue). */
export class Backoff {
  #attempt = 0;
  #healthySince: number | undefined;
  readonly #policy: BackoffPolicy;
  readonly #random: () => number;
  readonly #now: () => number;

  constructor(policy: BackoffPolicy, random: () => number = Math.random, now: () => number = Date.now) {
    this.#policy = policy;
    this.#random = random;
    this.#now = now;
  }

  /** Failures since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** Records a failure and returns how long to wait before trying again. */
  fail(): number {
    if (this.#healthySince !== undefined && this.#now() - this.#healthySince >= (this.#policy.resetAfterMs ?? 120_000)) {
      this.#attempt = 0;
    }
    this.#healthySince = undefined;
    const delay = backoffDelay(this.#attempt, this.#policy, this.#random);
    this.#attempt += 1;
    return delay;
  }

  /** Marks the activity as working; the attempt count resets after `resetAfterMs` of this. */
  healthy(): void {
    this.#healthySince ??= this.#now();
  }

  /** Forgets all failures immediately (e.g. a request fully succeeded). */
  reset(): void {
    this.#attempt = 0;
    this.#healthySince = undefined;
  }
}

/**
 * Waits `ms`, or less when `signal` aborts — node:timers/promises' abortable timer, with its
 * AbortError taken as "stop waiting": the caller's loop then sees its own signal.
 */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return sleep(ms, undefined, signal ? { signal } : undefined).catch((err: unknown) => {
    if (!(err instanceof Error && err.name === 'AbortError')) throw err;
  });
}
