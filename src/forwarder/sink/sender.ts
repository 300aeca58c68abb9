/**
 * The sender: drains the send buffer into the queue with SendMessageBatch, while active
 * (this replica leads). Failed entries are retried; a failed request (queue unreachable,
 * throttled, credentials) puts the whole batch back and backs off with jitter, so an
 * outage of any length ends with every buffered message delivered.
 *
 * Guarantees:
 * - a message leaves the buffer for good only when SQS accepted it, or when SQS rejected
 *   that very entry as the sender's fault `maxSenderFaultRetries + 1` times (logged, counted);
 * - at most one SendMessageBatch is in flight (ordering per key is preserved);
 * - `flush(deadline)` returns once the buffer is empty or the deadline passed, reporting
 *   how many messages remain;
 * - `stop()` never loses messages silently: what could not be sent is returned;
 * - a resync never overflows the buffer: its messages wait in the lane's resync feed
 *   (resync-feed.ts) and join the buffer as room frees up (`feedRoom`), behind live changes;
 * - the loop never dies: a message that cannot be encoded is dropped with one ERROR line naming
 *   its key and `messages_dropped_total{cause="invalid"}`; anything else unexpected is logged,
 *   counted (`send_errors_total{kind="internal"}`), backed off and retried, and `failing` names
 *   it (readiness) until an iteration succeeds again.
 *
 * One sender serves one queue; the forwarder runs one per distinct queue URL, so an outage
 * of one queue (its buffer, backoff and reachability) never holds up another.
 */
import { displayKey, objectKey, type ReconcileMessage } from '../../contract/message.ts';
import { errorMessage, type Logger } from '../../observability/log.ts';
import { Backoff, pause } from '../../retry/backoff.ts';
import { SendBuffer, type BatchEntry } from './buffer.ts';
import type { ForwarderMetrics } from '../metrics.ts';
import type { QueuePort } from '../../queue/port.ts';
import { feedRoom } from './resync-feed.ts';
import { forwardSpans } from './forward-spans.ts';

/** Where a lane's resync messages wait their turn (a `ResyncFeed`): taken as the buffer has room. */
export interface ResyncSource {
  /** Messages not handed out yet. */
  readonly pending: number;
  /** Removes and returns up to `max` messages; fewer only when none are left. */
  take(max: number): ReconcileMessage[];
}

export interface SenderOptions {
  readonly queue: QueuePort;
  /** The `queue` label of this sender's metrics (see queueLabels in queues.ts). */
  readonly queueLabel: string;
  readonly maxMessages: number;
  readonly maxBatchBytes: number;
  readonly maxSenderFaultRetries: number;
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  readonly metrics: ForwarderMetrics;
  readonly log: Logger;
  readonly now?: () => number;
  /** Called when messages were dropped on overflow and the buffer has since drained. */
  readonly onOverflowDrained?: () => void;
  /** Reports the number of messages pending outside the buffer (coalescer) for the depth gauge. */
  readonly extraDepth?: () => number;
  /** The lane's resync feed; the sender tops the buffer up from it (see `feedRoom`). */
  readonly resync?: ResyncSource;
}

/** Decides what to do with the entries of one SendMessageBatch answer. Pure. */
export function classifyBatchResult(
  batch: readonly BatchEntry[],
  failed: readonly { id: string; senderFault: boolean; code: string; message: string }[],
  faultCounts: ReadonlyMap<string, number>,
  maxSenderFaultRetries: number,
): { sent: BatchEntry[]; retry: BatchEntry[]; giveUp: { entry: BatchEntry; code: string; message: string }[] } {
  const failures = new Map(failed.map((f) => [f.id, f]));
  const sent: BatchEntry[] = [];
  const retry: BatchEntry[] = [];
  const giveUp: { entry: BatchEntry; code: string; message: string }[] = [];
  for (const entry of batch) {
    const failure = failures.get(entry.id);
    if (!failure) sent.push(entry);
    else if (failure.senderFault && (faultCounts.get(objectKey(entry.message)) ?? 0) >= maxSenderFaultRetries) {
      giveUp.push({ entry, code: failure.code, message: failure.message });
    } else retry.push(entry);
  }
  return { sent, retry, giveUp: giveUp };
}

export class Sender {
  readonly #opts: SenderOptions;
  readonly #buffer: SendBuffer;
  readonly #backoff: Backoff;
  /** Backs off unexpected failures of the loop itself (not the queue's). */
  readonly #internalBackoff: Backoff;
  readonly #faults = new Map<string, number>();
  readonly #now: () => number;
  #active = false;
  #stopped = false;
  #reachable: boolean | undefined;
  #failing: string | undefined;
  #droppedSinceDrain = 0;
  #sentTotal = 0;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #idle: (() => void)[] = [];
  #abort = new AbortController();
  #inFlight = 0;

  constructor(opts: SenderOptions) {
    this.#opts = opts;
    this.#buffer = new SendBuffer(opts.maxMessages);
    this.#backoff = new Backoff({ initialMs: opts.backoffInitialMs, maxMs: opts.backoffMaxMs, resetAfterMs: 0 });
    this.#internalBackoff = new Backoff({ initialMs: opts.backoffInitialMs, maxMs: opts.backoffMaxMs, resetAfterMs: 0 });
    this.#now = opts.now ?? Date.now;
  }

  get depth(): number {
    return this.#buffer.size;
  }

  /** Messages of the batch in flight (taken from the buffer, not yet accepted or put back). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Messages the queue accepted from this sender so far (a running total; backlog.ts). */
  get sentTotal(): number {
    return this.#sentTotal;
  }

  /** undefined until the first send or probe; then whether the queue last answered. */
  get reachable(): boolean | undefined {
    return this.#reachable;
  }

  /** True while messages dropped on overflow have not been healed by a resync yet. */
  get overflowed(): boolean {
    return this.#droppedSinceDrain > 0;
  }

  /** The unexpected error of the loop's last iteration, while it keeps failing (readiness). */
  get failing(): string | undefined {
    return this.#failing;
  }

  /** Queues messages for sending. */
  enqueue(messages: readonly ReconcileMessage[]): void {
    for (const m of messages) this.#recordDropped(this.#buffer.push(m));
    this.#updateDepth();
    this.#wake?.();
  }

  /** New messages wait in the resync feed: take them as the buffer has room. */
  resyncAdded(): void {
    this.#updateDepth();
    this.#wake?.();
  }

  /** Starts or pauses sending (leadership). Pausing keeps the buffer. */
  setActive(active: boolean): void {
    this.#active = active;
    if (active && !this.#loop) this.#loop = this.#runForever();
    this.#wake?.();
  }

  /** Drops everything buffered (leadership lost: the next leader lists and resyncs). */
  discard(): number {
    const n = this.#buffer.clear().length;
    this.#faults.clear();
    this.#updateDepth();
    return n;
  }

  /** Checks the queue answers; updates reachability. */
  async probe(): Promise<boolean> {
    try {
      await this.#opts.queue.probe();
      this.#setReachable(true);
      return true;
    } catch (err) {
      this.#setReachable(false, err);
      return false;
    }
  }

  /** Waits until the buffer and the resync feed are empty (and nothing in flight) or `deadline`; returns what remains. */
  async flush(deadline: number): Promise<number> {
    while (this.#remaining() > 0) {
      const left = deadline - this.#now();
      if (left <= 0) break;
      await Promise.race([new Promise<void>((r) => this.#idle.push(r)), pause(Math.min(left, 100))]);
    }
    return this.#remaining();
  }

  /** Stops the loop; returns the messages that were never sent (the resync feed's are the caller's). */
  async stop(): Promise<ReconcileMessage[]> {
    this.#stopped = true;
    this.#abort.abort();
    this.#wake?.();
    await this.#loop;
    this.#opts.queue.close?.();
    return this.#buffer.clear();
  }

  #remaining(): number {
    return this.#buffer.size + this.#inFlight + (this.#opts.resync?.pending ?? 0);
  }

  /** The loop, restarted should it ever reject (it catches everything itself; this is the last line). */
  async #runForever(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#run();
        return;
      } catch (err) {
        await this.#internalFailure(err);
      }
    }
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#step();
        this.#healthy();
      } catch (err) {
        await this.#internalFailure(err);
      }
    }
    for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** One iteration: wait for work, heal an overflow, or send one batch. */
  async #step(): Promise<void> {
    if (this.#active) this.#refill();
    if (!this.#active || this.#buffer.size === 0) {
      for (const resolve of this.#idle.splice(0)) resolve();
      if (this.#active && this.#buffer.size === 0 && (this.#opts.resync?.pending ?? 0) === 0 && this.#droppedSinceDrain > 0) {
        this.#opts.onOverflowDrained?.();
        this.#droppedSinceDrain = 0;
        return;
      }
      this.#healthy(); // nothing failed on the way here: idle is not failing
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
      return;
    }
    const batch = this.#buffer.takeBatch(this.#opts.maxBatchBytes, (message, reason) => this.#dropInvalid(message, reason));
    if (batch.length === 0) {
      this.#updateDepth();
      return;
    }
    this.#inFlight = batch.length;
    let retryDelay = 0;
    const spans = forwardSpans(batch, this.#opts.queueLabel);
    try {
      const result = await this.#opts.queue.sendBatch(batch.map(({ id, body }) => ({ id, body, ...spans.trace(id) })));
      spans.end(result.failed);
      this.#setReachable(true);
      const { sent, retry, giveUp } = classifyBatchResult(batch, result.failed, this.#faults, this.#opts.maxSenderFaultRetries);
      const now = this.#now();
      for (const { message } of sent) {
        this.#faults.delete(objectKey(message));
        this.#opts.metrics.messagesSent.inc({ reason: message.reason, queue: this.#opts.queueLabel });
        this.#sentTotal++;
        this.#opts.metrics.forwardLag.observe({ queue: this.#opts.queueLabel }, Math.max(0, now - message.observedAt) / 1000);
      }
      for (const { entry, code, message } of giveUp) {
        this.#faults.delete(objectKey(entry.message));
        this.#opts.metrics.messagesDropped.inc({ cause: 'rejected', queue: this.#opts.queueLabel });
        this.#opts.log.error('the queue keeps rejecting a message; dropping it (the scheduled resync will cover this object)', {
          key: displayKey(entry.message),
          code,
          error: message,
        });
      }
      if (retry.length > 0) {
        this.#opts.metrics.sendErrors.inc({ kind: 'entry', queue: this.#opts.queueLabel }, retry.length);
        const failures = new Map(result.failed.map((f) => [f.id, f]));
        for (const entry of retry) {
          const f = failures.get(entry.id);
          if (f?.senderFault) this.#faults.set(objectKey(entry.message), (this.#faults.get(objectKey(entry.message)) ?? 0) + 1);
        }
        this.#opts.log.warn('some messages of a batch were rejected; retrying them', {
          count: retry.length,
          codes: [...new Set(retry.map((e) => failures.get(e.id)?.code))],
        });
        this.#recordDropped(this.#buffer.putBack(retry.map((e) => e.message)));
        retryDelay = this.#backoff.fail();
      } else {
        this.#backoff.reset();
      }
    } catch (err) {
      spans.fail(err);
      this.#opts.metrics.sendErrors.inc({ kind: 'request', queue: this.#opts.queueLabel });
      this.#setReachable(false, err);
      this.#recordDropped(this.#buffer.putBack(batch.map((e) => e.message)));
      retryDelay = this.#backoff.fail();
      this.#opts.log.warn('sending to the queue failed; will retry', {
        error: errorMessage(err),
        buffered: this.#buffer.size,
        retryInMs: retryDelay,
        attempt: this.#backoff.attempt,
      });
    } finally {
      this.#inFlight = 0;
      this.#updateDepth();
    }
    if (retryDelay > 0) await pause(retryDelay, this.#abort.signal);
  }

  #healthy(): void {
    if (this.#failing === undefined) return;
    this.#opts.log.info('the send loop works again', { previousError: this.#failing });
    this.#failing = undefined;
    this.#internalBackoff.reset();
  }

  /** Tops the buffer up from the resync feed, never past `feedRoom` (live changes keep their room). */
  #refill(): void {
    const resync = this.#opts.resync;
    if (!resync || resync.pending === 0) return;
    const room = feedRoom(this.#buffer.size, this.#buffer.capacity);
    if (room === 0) return;
    for (const m of resync.take(room)) this.#recordDropped(this.#buffer.push(m));
    this.#updateDepth();
  }

  async #internalFailure(err: unknown): Promise<void> {
    this.#failing = errorMessage(err);
    const delay = this.#internalBackoff.fail();
    try {
      this.#opts.metrics.sendErrors.inc({ kind: 'internal', queue: this.#opts.queueLabel });
      this.#opts.log.error('the send loop failed unexpectedly; backing off and going on', {
        error: this.#failing,
        retryInMs: delay,
        attempt: this.#internalBackoff.attempt,
        buffered: this.#buffer.size,
      });
    } catch {
      // Logging or metrics failing too: nothing more to report; the backoff below still applies.
    }
    await pause(delay, this.#abort.signal);
  }

  #dropInvalid(message: ReconcileMessage, reason: string): void {
    this.#faults.delete(objectKey(message));
    this.#opts.metrics.messagesDropped.inc({ cause: 'invalid', queue: this.#opts.queueLabel });
    this.#opts.log.error('dropping a message that fails the message contract (a bug: please report it); the scheduled resync covers this object', {
      key: displayKey(message),
      reason: message.reason,
      error: reason,
    });
  }

  #recordDropped(dropped: readonly ReconcileMessage[]): void {
    if (dropped.length === 0) return;
    this.#droppedSinceDrain += dropped.length;
    this.#opts.metrics.messagesDropped.inc({ cause: 'overflow', queue: this.#opts.queueLabel }, dropped.length);
    this.#opts.log.error('send buffer full: dropped the oldest pending messages; a full resync will follow once the queue drains', {
      dropped: dropped.length,
      capacity: this.#buffer.capacity,
      firstDropped: displayKey(dropped[0]!),
    });
  }

  #setReachable(reachable: boolean, err?: unknown): void {
    if (this.#reachable !== reachable) {
      if (reachable) this.#opts.log.info('queue reachable');
      else this.#opts.log.warn('queue unreachable', { error: errorMessage(err) });
    }
    this.#reachable = reachable;
    this.#opts.metrics.queueReachable.set({ queue: this.#opts.queueLabel }, reachable ? 1 : 0);
  }

  #updateDepth(): void {
    this.#opts.metrics.bufferDepth.set({ queue: this.#opts.queueLabel }, this.#buffer.size + this.#inFlight + (this.#opts.extraDepth?.() ?? 0));
    if (this.#opts.resync) this.#opts.metrics.resyncPending.set({ queue: this.#opts.queueLabel }, this.#opts.resync.pending);
  }
}
