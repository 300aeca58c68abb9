/**
 * Per-item exponential failure backoff, as client-go's `ItemExponentialFailureRateLimiter`
 * (the per-item half of controller-runtime's default rate limiter): the n-th consecutive
 * failure of one key waits `base × 2^(n-1)`, capped; `forget(key)` after a success starts
 * the key over at `base`.
 *
 * The delay is the shared exponential formula (src/retry/backoff.ts) without jitter, as
 * client-go's has none.
 *
 * Guarantees: pure bookkeeping (no timers); delays never exceed `capMs`; keys are
 * independent (one failing key does not slow any other).
 */
import { exponentialDelay } from '../../src/retry/backoff.ts';

/** controller-runtime's defaults: 5 ms doubling up to 1000 s. */
export const DEFAULT_BASE_MS = 5;
export const DEFAULT_CAP_MS = 1_000_000;

export class ItemExponentialBackoff {
  readonly #baseMs: number;
  readonly #capMs: number;
  readonly #failures = new Map<string, number>();

  constructor(options: { baseMs?: number; capMs?: number } = {}) {
    this.#baseMs = options.baseMs ?? DEFAULT_BASE_MS;
    this.#capMs = options.capMs ?? DEFAULT_CAP_MS;
    if (!(this.#baseMs > 0) || !(this.#capMs >= this.#baseMs)) {
      throw new RangeError(`backoff needs 0 < baseMs <= capMs, got baseMs=${this.#baseMs} capMs=${this.#capMs}`);
    }
  }

  /** Records one more failure of `key` and returns how long to wait before retrying it (ms). */
  when(key: string): number {
    const n = this.#failures.get(key) ?? 0;
    this.#failures.set(key, n + 1);
    return backoffDelayMs(n, this.#baseMs, this.#capMs);
  }

  /** Failures recorded for `key` since the last `forget`. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** The key succeeded: its next failure starts at `base` again. */
  forget(key: string): void {
    this.#failures.delete(key);
  }
}

/** Delay after `previousFailures` earlier failures: base × 2^previousFailures, capped. Pure. */
export function backoffDelayMs(previousFailures: number, baseMs: number, capMs: number): number {
  return exponentialDelay(previousFailures, baseMs, capMs);
}
