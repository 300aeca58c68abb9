/**
 * A lane: one queue's path out of the forwarder, as one object with its own state. It owns
 * the queue's coalescer (its window widened by the queue's estimated backlog), its sender
 * (bounded buffer, SendMessageBatch, backoff, reachability), the resync feed that tops the
 * buffer up (resync-feed.ts) and the backlog estimate (backlog.ts) with its sampling state.
 *
 * Guarantees:
 * - a message offered to a lane is either sent now, held in its window (`offer` says until
 *   when; the caller's flush timer takes it with `takeDue`), or merged into a held one;
 * - a live message covers the same key's pending resync entry (its reconcile reads the live
 *   object), so the feed skips that key;
 * - a backlog sample never throws out of `sampleBacklog`: a failed or late sample only leaves
 *   the estimate to go stale (no backlog: the configured window); an idle lane sends no request;
 * - when the window shrinks, windows opened for a longer wait end sooner (`onDue` says when);
 * - `discard` empties the window, the buffer and the feed (leadership lost), `pending` counts
 *   all three; the lane names its own faults for `/readyz` (`readinessReasons`).
 */
import { displayKey, objectKey, type ReconcileMessage } from '../../contract/message.ts';
import { errorMessage, type Logger } from '../../observability/log.ts';
import type { QueuePort } from '../../queue/port.ts';
import { BacklogEstimator, coalescingWindowMs } from '../coalesce/backlog.ts';
import { Coalescer } from '../coalesce/coalescer.ts';
import type { ForwarderConfig } from '../config/config.ts';
import type { ForwarderMetrics } from '../metrics.ts';
import type { ObjectSnapshot } from '../source/snapshot.ts';
import { ResyncFeed } from './resync-feed.ts';
import { Sender } from './sender.ts';

/** A lane that forwarded nothing for this long and sees no backlog stops sampling. */
export const BACKLOG_IDLE_MS = 10_000;

/** What of the configuration a lane uses. */
export type LaneConfig = Pick<ForwarderConfig, 'coalesceWindowMs' | 'coalesceMaxWindowMs' | 'buffer' | 'send'>;

export interface LaneOptions {
  readonly url: string;
  /** The queue's label on metrics. */
  readonly label: string;
  readonly port: QueuePort;
  readonly config: LaneConfig;
  readonly metrics: ForwarderMetrics;
  readonly log: Logger;
  readonly now: () => number;
  /** The buffer drained after an overflow: resync what feeds this queue. */
  readonly onOverflowDrained: () => void;
}

export class Lane {
  readonly url: string;
  readonly label: string;
  readonly port: QueuePort;
  readonly coalescer: Coalescer;
  readonly sender: Sender;
  /** Resyncs in progress, fed into the sender's buffer as it has room. */
  readonly resync: ResyncFeed<ReconcileMessage>;
  readonly backlog = new BacklogEstimator();
  readonly #o: LaneOptions;
  #lastForwardAt = Number.NEGATIVE_INFINITY;
  #sampling = false;
  /** Set by `halt()` (shutdown): a sample answering later changes nothing. */
  #halted = false;
  /** The window the last sample gave (what the gauge shows); coalesceWindowMs when idle. */
  #windowMs: number;

  constructor(options: LaneOptions) {
    const { config, log, now } = options;
    this.#o = options;
    this.url = options.url;
    this.label = options.label;
    this.port = options.port;
    this.#windowMs = config.coalesceWindowMs;
    this.coalescer = new Coalescer(() => coalescingWindowMs(config.coalesceWindowMs, config.coalesceMaxWindowMs, this.backlog.waitMs(now())));
    this.resync = new ResyncFeed<ReconcileMessage>(objectKey, (done) => {
      log.info('resync sent', { queue: options.url, stream: done.id, objects: done.listed, sent: done.fed, coveredByLiveChanges: done.satisfied });
    });
    this.sender = new Sender({
      queue: options.port,
      queueLabel: options.label,
      maxMessages: config.buffer.maxMessages,
      maxBatchBytes: config.send.maxBatchBytes,
      maxSenderFaultRetries: config.send.maxSenderFaultRetries,
      backoffInitialMs: config.send.backoffInitialMs,
      backoffMaxMs: config.send.backoffMaxMs,
      metrics: options.metrics,
      log: log.child({ queue: options.url }),
      now,
      extraDepth: () => this.coalescer.size,
      resync: this.resync,
      onOverflowDrained: options.onOverflowDrained,
    });
  }

  /**
   * Messages this lane holds that the queue has not accepted yet: its window, its buffer, the
   * batch in flight (a stalled send is not sent) and its resyncs not yet fed.
   */
  get pending(): number {
    return this.coalescer.size + this.sender.depth + this.sender.inFlight + this.resync.pending;
  }

  /** Takes one live message; returns when a held message is due, if one is now held. */
  offer(message: ReconcileMessage, at: number): number | undefined {
    this.#lastForwardAt = at;
    this.resync.satisfy(objectKey(message)); // this message's reconcile covers the key's resync
    this.#o.log.debug('change forwarded', { key: displayKey(message), reason: message.reason, resourceVersion: message.resourceVersion, queue: this.url });
    if (this.#o.config.coalesceWindowMs === 0) {
      this.sender.enqueue([message]);
      return undefined;
    }
    const { send, coalesced, heldUntil } = this.coalescer.offer(message, at);
    if (send) this.sender.enqueue([send]);
    if (coalesced) this.#o.metrics.messagesCoalesced.inc();
    return heldUntil;
  }

  /** Moves the window's due messages into the buffer. */
  flushDue(at: number): void {
    this.sender.enqueue(this.coalescer.takeDue(at));
  }

  /** Hands a stream's listed objects to the resync feed (a newer resync of `stream` replaces one in progress). */
  startResync(stream: string, listed: readonly ObjectSnapshot[], toMessage: (snapshot: ObjectSnapshot) => ReconcileMessage, at: number): void {
    this.resync.start(stream, listed, toMessage);
    this.#lastForwardAt = at;
    this.sender.resyncAdded();
    this.#o.log.info('resync started', { queue: this.url, stream, objects: listed.length, pendingInLane: this.resync.pending });
  }

  /**
   * One backlog sample (one GetQueueAttributes), while the lane forwarded something in the
   * last `BACKLOG_IDLE_MS` or still sees a backlog; an inactive or idle lane forgets its
   * estimate once and then costs nothing.
   */
  sampleBacklog(at: number, active: boolean, onDue: (dueAt: number) => void): void {
    const depth = this.port.depth?.bind(this.port);
    if (!depth || this.#sampling) return;
    const { coalesceWindowMs: base, coalesceMaxWindowMs: max } = this.#o.config;
    if (!active || (at - this.#lastForwardAt > BACKLOG_IDLE_MS && this.backlog.waitMs(at) === 0)) {
      this.backlog.reset();
      this.#setWindow(base, at, onDue);
      return;
    }
    this.#sampling = true;
    const sentTotal = this.sender.sentTotal;
    Promise.resolve()
      .then(depth) // a port that throws at once, or answers with no promise, fails like a failed request
      .then((d) => {
        if (this.#halted) return; // shutdown already took every held message
        const now = this.#o.now();
        this.backlog.observe({ at: now, ...d, sentTotal });
        this.#setWindow(coalescingWindowMs(base, max, this.backlog.waitMs(now)), now, onDue);
      })
      .catch((err: unknown) =>
        this.#o.log.debug('queue depth sample failed; the coalescing window falls back to coalesceWindowMs', { queue: this.url, error: errorMessage(err) }),
      )
      .finally(() => {
        this.#sampling = false;
      });
  }

  /** Records the window for the gauge; when it shrank, windows opened for a longer wait end sooner. */
  #setWindow(windowMs: number, at: number, onDue: (dueAt: number) => void): void {
    if (windowMs === this.#windowMs) return;
    const shrank = windowMs < this.#windowMs;
    this.#windowMs = windowMs;
    this.#o.metrics.coalescingWindow.set({ queue: this.label }, windowMs / 1000);
    if (!shrank) return;
    const due = this.coalescer.shortenTo(windowMs, at);
    if (due !== undefined) onDue(due);
  }

  /** Shutdown begins: a backlog sample still in flight changes nothing any more. */
  halt(): void {
    this.#halted = true;
  }

  /** Empties the window, the buffer and the resync feed; returns how many messages went. */
  discard(): number {
    return this.resync.clear() + this.coalescer.takeAll().length + this.sender.discard();
  }

  /** Moves every held message into the buffer and sends until `deadline`; resolves to what is left. */
  flush(deadline: number): Promise<number> {
    this.sender.enqueue(this.coalescer.takeAll());
    return this.sender.flush(deadline);
  }

  /** Why this lane makes the forwarder not ready (`leading`: the faults only a sending lane has). */
  readinessReasons(leading: boolean): string[] {
    const reasons: string[] = [];
    const { sender } = this;
    if (leading && sender.failing)
      reasons.push(`the send loop of queue ${this.label} keeps failing: ${sender.failing} (it backs off and retries; see the error log)`);
    if (leading && sender.overflowed)
      reasons.push(
        `send buffer of queue ${this.label} overflowed (capacity ${this.#o.config.buffer.maxMessages}); messages were dropped and a resync of its kinds follows once the queue drains`,
      );
    return reasons;
  }

  /** The readiness reason of an unreachable queue (whoever leads), if it is. */
  get unreachableReason(): string | undefined {
    return this.sender.reachable === false
      ? `queue unreachable: ${this.label} (its messages stay buffered and are retried; check the queue URL in the configuration, the network and the forwarder's IAM role)`
      : undefined;
  }
}
