/**
 * The lanes of a forwarder, one per distinct queue URL (queues.ts), and the timers they
 * share: the flush timer of the coalescing windows, the queue probes, the window sweep and
 * the backlog sampler.
 *
 * Guarantees:
 * - a message goes to the lane of its kind's queue (any version; an unknown kind to the
 *   first lane), so one queue's outage never holds another's messages; backlog messages
 *   (`forward(…, 'bulk')`, resyncs) to its bulk queue's lane (`bulkLaneFor`), which is its
 *   queue's lane when it has no bulk queue;
 * - a live message covers its key's pending resync in both lanes of its kind;
 * - one flush timer serves every lane's held messages, due at the earliest of them: O(1) per
 *   change (a newly held message only moves it earlier), the windows are scanned once per
 *   timer, not once per event;
 * - no periodic task can take the process down: a failure in one lane's part is logged and
 *   counted (`send_errors_total{kind="internal"}`) and the task runs again at its next tick;
 * - `stopTimers` / `cancelFlush` leave no timer behind; the periodic ones never keep the
 *   process alive (unref'd).
 */
import { objectKey, type ReconcileMessage } from '../../contract/message.ts';
import { errorMessage, type Logger } from '../../observability/log.ts';
import type { QueuePort } from '../../queue/port.ts';
import type { ForwarderMetrics } from '../metrics.ts';
import { Lane, type LaneConfig } from './lane.ts';
import type { QueueRoutes } from './queues.ts';

/** How often an active lane samples its queue's depth (one GetQueueAttributes each time). */
export const BACKLOG_SAMPLE_MS = 2_000;

export interface LanesOptions {
  readonly routes: QueueRoutes;
  readonly labels: ReadonlyMap<string, string>;
  readonly portFor: (queueUrl: string) => QueuePort;
  readonly config: LaneConfig & { readonly send: { readonly probeIntervalSeconds: number } };
  readonly metrics: ForwarderMetrics;
  readonly log: Logger;
  readonly now: () => number;
  /** A lane's buffer drained after an overflow: resync what feeds that queue. */
  readonly onOverflowDrained: (queueUrl: string) => void;
}

export class Lanes {
  readonly all: readonly Lane[];
  readonly #byUrl: ReadonlyMap<string, Lane>;
  readonly #o: LanesOptions;
  #flushTimer: NodeJS.Timeout | undefined;
  #flushDueAt = Number.POSITIVE_INFINITY;
  #periodic: NodeJS.Timeout[] = [];

  constructor(options: LanesOptions) {
    this.#o = options;
    this.#byUrl = new Map(
      options.routes.urls.map((url) => [
        url,
        new Lane({
          url,
          label: options.labels.get(url) ?? url,
          port: options.portFor(url),
          config: options.config,
          metrics: options.metrics,
          log: options.log,
          now: options.now,
          onOverflowDrained: () => options.onOverflowDrained(url),
        }),
      ]),
    );
    this.all = [...this.#byUrl.values()];
  }

  /** The lane of a kind's queue. */
  laneFor(ref: { readonly apiVersion: string; readonly kind: string }): Lane {
    return this.#byUrl.get(this.#o.routes.queueFor(ref)) ?? this.all[0]!;
  }

  /** The lane of a kind's backlog (resyncs, relists): its bulk queue's, else its queue's. */
  bulkLaneFor(ref: { readonly apiVersion: string; readonly kind: string }): Lane {
    return this.#byUrl.get(this.#o.routes.bulkQueueFor(ref)) ?? this.laneFor(ref);
  }

  /** Offers messages to their lanes (`traffic` says which: live changes or a backlog) and arms the flush timer for what is held. */
  forward(messages: readonly ReconcileMessage[], at: number, traffic: 'live' | 'bulk' = 'live'): void {
    let earliestHeld = Number.POSITIVE_INFINITY;
    for (const message of messages) {
      const [lane, other] = traffic === 'bulk' ? [this.bulkLaneFor(message), this.laneFor(message)] : [this.laneFor(message), this.bulkLaneFor(message)];
      if (other !== lane) other.resync.satisfy(objectKey(message)); // the offer covers the key's pending resync in its own lane; this, in the other
      const heldUntil = lane.offer(message, at);
      if (heldUntil !== undefined && heldUntil < earliestHeld) earliestHeld = heldUntil;
    }
    if (earliestHeld !== Number.POSITIVE_INFINITY) this.#scheduleFlush(earliestHeld);
  }

  /** Messages waiting over every lane. */
  pending(): number {
    return this.all.reduce((n, lane) => n + lane.pending, 0);
  }

  pendingByQueue(): ReadonlyMap<string, number> {
    return new Map(this.all.map((lane) => [lane.url, lane.pending]));
  }

  /** Starts or stops sending on every lane (leadership). */
  setActive(active: boolean): void {
    for (const lane of this.all) lane.sender.setActive(active);
  }

  /** Probes every queue once now, then every `probeIntervalSeconds` while a lane's buffer is empty; sweeps ended windows; samples backlogs. */
  startTimers(isLeading: () => boolean): void {
    const { config, metrics } = this.#o;
    this.#guarded('queue probe', (lane) => void lane.sender.probe());
    this.#every(config.send.probeIntervalSeconds * 1000, () =>
      this.#guarded('queue probe', (lane) => {
        if (lane.sender.depth === 0) void lane.sender.probe();
      }),
    );
    if (config.coalesceWindowMs > 0) {
      // Ended windows with nothing held are forgotten, so after a resync of N objects the
      // coalescer does not keep N windows (memory tracks the keys changing now).
      this.#every(Math.max(1000, 2 * config.coalesceWindowMs), () => {
        const at = this.#o.now();
        this.#guarded('coalescing window sweep', (lane) => lane.coalescer.forgetEnded(at));
      });
    }
    if (config.coalesceWindowMs > 0 && config.coalesceMaxWindowMs > config.coalesceWindowMs) {
      for (const lane of this.all) metrics.coalescingWindow.set({ queue: lane.label }, config.coalesceWindowMs / 1000);
      this.#every(BACKLOG_SAMPLE_MS, () => {
        const at = this.#o.now();
        this.#guarded('backlog sampler', (lane) => lane.sampleBacklog(at, isLeading(), (due) => this.#scheduleFlush(due)));
      });
    }
  }

  /** Shutdown begins: a backlog sample still in flight changes no window any more. */
  halt(): void {
    for (const lane of this.all) lane.halt();
  }

  /** No periodic task runs any more. */
  stopTimers(): void {
    for (const timer of this.#periodic) clearInterval(timer);
    this.#periodic = [];
  }

  cancelFlush(): void {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#flushDueAt = Number.POSITIVE_INFINITY;
  }

  /** Leadership lost: nothing held is sent; returns how many messages were discarded. */
  discard(): number {
    this.cancelFlush();
    return this.all.reduce((n, lane) => n + lane.discard(), 0);
  }

  /** Sends everything held until `deadline`; resolves to the number left unsent. */
  async flush(deadline: number): Promise<number> {
    const left = await Promise.all(this.all.map((lane) => lane.flush(deadline)));
    return left.reduce((a, b) => a + b, 0);
  }

  /** Stops every sender; resolves to the number of messages they still held. */
  async stop(): Promise<number> {
    const left = await Promise.all(this.all.map((lane) => lane.sender.stop()));
    return left.reduce((n, l) => n + l.length, 0);
  }

  /** What every lane says against readiness, in lane order, unreachable queues last. */
  readinessReasons(leading: boolean): string[] {
    const faults = this.all.flatMap((lane) => lane.readinessReasons(leading));
    const unreachable = this.all.flatMap((lane) => lane.unreachableReason ?? []);
    return [...faults, ...unreachable];
  }

  #every(ms: number, task: () => void): void {
    const timer = setInterval(task, ms);
    timer.unref();
    this.#periodic.push(timer);
  }

  /** Runs one lane's part of a periodic task; a failure is logged and counted, never thrown. */
  #guarded(task: string, body: (lane: Lane) => void): void {
    for (const lane of this.all) {
      try {
        body(lane);
      } catch (err) {
        this.#o.metrics.sendErrors.inc({ kind: 'internal', queue: lane.label });
        this.#o.log.error(`the ${task} failed; it runs again at its next tick`, { queue: lane.url, error: errorMessage(err) });
      }
    }
  }

  #scheduleFlush(dueAt: number): void {
    if (this.#flushTimer && this.#flushDueAt <= dueAt) return;
    clearTimeout(this.#flushTimer);
    this.#flushDueAt = dueAt;
    this.#flushTimer = setTimeout(
      () => {
        this.#flushTimer = undefined;
        this.#flushDueAt = Number.POSITIVE_INFINITY;
        const at = this.#o.now();
        for (const lane of this.all) lane.flushDue(at);
        const next = Math.min(...this.all.map((lane) => lane.coalescer.nextDueAt() ?? Number.POSITIVE_INFINITY));
        if (next !== Number.POSITIVE_INFINITY) this.#scheduleFlush(next);
      },
      Math.max(0, dueAt - this.#o.now()),
    );
  }
}
