/**
 * Reconnect and retry backoff: exponential with full-range multiplicative jitter, capped,
 * reset after a healthy period (client-go's reflector / kube-rs `DefaultBackoff`:
 * 800 ms doubling to 30 s, reset after 120 s of health).
 *
 * Guarantees: `backoffDelay` is pure (randomness injected) and always within
 * [initial/2, max]; the `Backoff` tracker never grows past `max` and returns to `initial`
 * once the caller has been healthy for `resetAfterMs`.
 */

export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
  /** Growth per failure (default 2). */
  readonly factor?: number;
  /** A healthy streak this long resets the attempt count (default 120 s). */
  readonly resetAfterMs?: number;
}

/**
 * Delay before retry number `attempt` (0-based): initial·factor^attempt, capped at max,
 * then jittered into [d/2, d) so that many clients restarted together spread out.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const factor = policy.factor ?? 2;
  const exp = Math.min(policy.maxMs, policy.initialMs * factor ** Math.min(Math.max(attempt, 0), 60));
  const jittered = exp / 2 + (exp / 2) * random();
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

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
