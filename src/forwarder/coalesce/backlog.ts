/**
 * The backlog: how long a message sent now would wait in its queue, estimated from the
 * queue's own counters, and the coalescing window that estimate implies.
 *
 * Why: a controller-runtime work queue merges every event of a key while the key waits, so a
 * long queue costs one reconcile per key however many events arrive. SQS cannot merge queued
 * messages. Under a backlog, the forwarder's leading-edge message for a key is consumed only
 * after the queue's wait Q; every later event of that key before then is already covered by
 * that reconcile (it reads live state when it runs). So while the queue is backlogged the
 * forwarder widens the key's quiet window to about Q: the leading edge still leaves at once,
 * and later events merge into one trailing message per window instead of one per 500 ms. With
 * an empty queue the window is the configured one (docs/forwarder.md, "Coalescing").
 *
 * Estimate: every sample gives the queue's visible, in-flight and delayed counts
 * (GetQueueAttributes) and how many messages this forwarder sent since the previous sample;
 * what left the queue meanwhile is `sent − Δ(visible + inFlight + delayed)`, smoothed into a
 * drain rate, and the wait is `visible / rate`. Messages from other producers (function
 * follow-ups) only make the drain look slower, so the window errs long, never below the
 * configured one, and is capped by `maxWindowMs`.
 *
 * Guarantees: pure (explicit clock); only the window length depends on it, never whether a
 * change is sent — the coalescer still sends every key's trailing message (coalescer.ts); a
 * stale estimate (no sample for `staleAfterMs`: the queue did not answer, or the lane went
 * idle) counts as no backlog; a sample with a count that is not a finite number ≥ 0 (a broker
 * answering garbage) is ignored, so the window is always a finite number within its bounds.
 */

export interface BacklogSample {
  readonly at: number;
  /** ApproximateNumberOfMessages */
  readonly visible: number;
  /** ApproximateNumberOfMessagesNotVisible */
  readonly inFlight: number;
  /** ApproximateNumberOfMessagesDelayed */
  readonly delayed: number;
  /** Messages this forwarder had sent to the queue (a running total) when the sample was taken. */
  readonly sentTotal: number;
}

export interface BacklogOptions {
  /** Weight of the newest drain-rate measurement, in (0, 1]. */
  readonly smoothing: number;
  /** An estimate older than this counts as no backlog. */
  readonly staleAfterMs: number;
}

export const DEFAULT_BACKLOG_OPTIONS: BacklogOptions = { smoothing: 0.5, staleAfterMs: 10_000 };

export class BacklogEstimator {
  readonly #options: BacklogOptions;
  #previous: BacklogSample | undefined;
  /** Messages per ms, smoothed; undefined until two samples were seen. */
  #drainPerMs: number | undefined;

  constructor(options: BacklogOptions = DEFAULT_BACKLOG_OPTIONS) {
    this.#options = options;
  }

  observe(sample: BacklogSample): void {
    if (![sample.at, sample.visible, sample.inFlight, sample.delayed, sample.sentTotal].every((n) => Number.isFinite(n) && n >= 0)) return;
    const previous = this.#previous;
    this.#previous = sample;
    if (!previous || sample.at <= previous.at) return;
    const queued = (s: BacklogSample) => s.visible + s.inFlight + s.delayed;
    const left = Math.max(0, sample.sentTotal - previous.sentTotal - (queued(sample) - queued(previous)));
    const rate = left / (sample.at - previous.at);
    const a = this.#options.smoothing;
    this.#drainPerMs = this.#drainPerMs === undefined ? rate : a * rate + (1 - a) * this.#drainPerMs;
  }

  /** Estimated wait of a message sent now, ms: 0 with no (fresh) backlog, Infinity when nothing drains. */
  waitMs(now: number): number {
    const last = this.#previous;
    if (!last || now - last.at > this.#options.staleAfterMs || last.visible === 0) return 0;
    if (this.#drainPerMs === undefined) return 0;
    return this.#drainPerMs > 0 ? last.visible / this.#drainPerMs : Number.POSITIVE_INFINITY;
  }

  /** Forgets every sample (the lane went idle or lost leadership). */
  reset(): void {
    this.#previous = undefined;
    this.#drainPerMs = undefined;
  }
}

/** The quiet window for a key: the configured one, widened to the estimated wait, at most `maxMs`. */
export function coalescingWindowMs(baseMs: number, maxMs: number, waitMs: number): number {
  if (Number.isNaN(waitMs)) return baseMs;
  return Math.max(baseMs, Math.min(maxMs, waitMs));
}
