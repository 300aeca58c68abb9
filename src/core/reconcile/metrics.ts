/**
 * Reconcile metrics as CloudWatch Embedded Metric Format (EMF): one JSON line on stdout per
 * reconcile, which CloudWatch Logs turns into metrics with no API call and no extra latency.
 * Names follow controller-runtime (`controller_runtime_` prefix dropped; the namespace
 * plays that role) so dashboards and alerts translate directly:
 *
 * | metric                            | dimensions           | meaning                                       |
 * | --------------------------------- | -------------------- | --------------------------------------------- |
 * | `reconcile_total`                 | controller, result   | reconciles; result = success, error, requeue_after |
 * | `reconcile_time_seconds`          | controller           | duration of one reconcile                     |
 * | `reconcile_errors_total`          | controller           | reconciles that failed (incl. terminal)       |
 * | `terminal_reconcile_errors_total` | controller           | reconciles that failed with a TerminalError   |
 * | `queue_lag_seconds`               | controller           | from the producer seeing a change to the start of its reconcile |
 * | `dead_letters_total`              | controller, reason   | messages moved to the DLQ by the runtime      |
 * | `deferred_total`                  | controller, result   | keys handed back: not yet due / no time left  |
 * | `unmarked_requeues_total`         | controller           | per-key: requeues sent whose mark could not be written (they stand, unmerged) |
 * | `resync_repaired_total`           | controller           | on a `Resync`'s reconcile only: 1 when it wrote a change (drift the events missed, repair.ts), else 0 — its sum is what the resync repaired, its sample count the resync's reconciles |
 *
 * `OPERLESS_METRICS=off` turns the lines off (the local loop does: they are for CloudWatch).
 *
 * Part of the runtime, not of observability/: its labels are the runtime's outcomes
 * (`OutcomeLabel`, followup.ts), and observability/ depends on nothing above it.
 *
 * Guarantees: never throws; one line per call; values are plain numbers.
 */
import type { OutcomeLabel } from './followup.ts';

export const METRICS_NAMESPACE_DEFAULT = 'Operless';

export interface ReconcileSample {
  readonly controller: string;
  readonly label: OutcomeLabel;
  readonly durationSeconds: number;
  /** Seconds since the producer saw the change (`observedAt`), when known. */
  readonly lagSeconds?: number | undefined;
  /** A `Resync`'s reconcile: whether it wrote a change (repair.ts); absent for every other reason. */
  readonly resyncRepaired?: boolean | undefined;
}

export interface Metrics {
  reconcile(sample: ReconcileSample): void;
  deadLetter(controller: string, reason: string): void;
  deferred(controller: string, label: 'not_due' | 'deferred' | 'rate_limited'): void;
  /** A tick of a per-object timer (core/controls/timer-tick.ts) and how it ended; optional for metrics written before it. */
  timerTick?(controller: string, timer: string, label: OutcomeLabel): void;
  /** Per-key mode: a requeue was sent but its mark could not be written (core/handler/key.ts); optional for metrics written before it. */
  unmarkedRequeue?(controller: string): void;
}

export interface MetricsOptions {
  readonly namespace?: string;
  readonly write?: (line: string) => void;
  readonly now?: () => number;
}

/** controller-runtime's `result` label for a runtime outcome. */
export function resultLabel(label: OutcomeLabel): 'success' | 'error' | 'requeue_after' {
  switch (label) {
    case 'success':
    case 'superseded':
    case 'paused':
      return 'success';
    case 'requeue_after':
    case 'requeue_merged':
    case 'not_due':
    case 'deferred':
    case 'rate_limited':
      return 'requeue_after';
    case 'timer_stopped':
      return 'success';
    default:
      return 'error';
  }
}

/** One EMF document. Pure. */
export function emfLine(
  namespace: string,
  timestamp: number,
  directives: { dimensions: string[]; metrics: { name: string; unit: string }[] }[],
  values: Record<string, string | number>,
): string {
  return JSON.stringify({
    _aws: {
      Timestamp: timestamp,
      CloudWatchMetrics: directives.map((d) => ({
        Namespace: namespace,
        Dimensions: [d.dimensions],
        Metrics: d.metrics.map((m) => ({ Name: m.name, Unit: m.unit })),
      })),
    },
    ...values,
  });
}

export function createEmfMetrics(options: MetricsOptions = {}): Metrics {
  const namespace = options.namespace ?? process.env.OPERLESS_METRICS_NAMESPACE ?? METRICS_NAMESPACE_DEFAULT;
  const write = options.write ?? (process.env.OPERLESS_METRICS === 'off' ? () => {} : (line: string) => process.stdout.write(`${line}\n`));
  const now = options.now ?? Date.now;
  const emit = (line: () => string): void => {
    try {
      write(line());
    } catch {
      // metrics must never break a reconcile
    }
  };
  return {
    reconcile(sample) {
      const result = resultLabel(sample.label);
      const failed = result === 'error' ? 1 : 0;
      const terminal = sample.label === 'terminal_error' ? 1 : 0;
      const perController = [
        { name: 'reconcile_time_seconds', unit: 'Seconds' },
        { name: 'reconcile_errors_total', unit: 'Count' },
        { name: 'terminal_reconcile_errors_total', unit: 'Count' },
        ...(sample.lagSeconds === undefined ? [] : [{ name: 'queue_lag_seconds', unit: 'Seconds' }]),
        ...(sample.resyncRepaired === undefined ? [] : [{ name: 'resync_repaired_total', unit: 'Count' }]),
      ];
      emit(() =>
        emfLine(
          namespace,
          now(),
          [
            { dimensions: ['controller', 'result'], metrics: [{ name: 'reconcile_total', unit: 'Count' }] },
            { dimensions: ['controller'], metrics: perController },
          ],
          {
            controller: sample.controller,
            result,
            outcome: sample.label,
            reconcile_total: 1,
            reconcile_time_seconds: sample.durationSeconds,
            reconcile_errors_total: failed,
            terminal_reconcile_errors_total: terminal,
            ...(sample.lagSeconds === undefined ? {} : { queue_lag_seconds: Math.max(0, sample.lagSeconds) }),
            ...(sample.resyncRepaired === undefined ? {} : { resync_repaired_total: sample.resyncRepaired ? 1 : 0 }),
          },
        ),
      );
    },
    deadLetter(controller, reason) {
      emit(() =>
        emfLine(namespace, now(), [{ dimensions: ['controller', 'reason'], metrics: [{ name: 'dead_letters_total', unit: 'Count' }] }], {
          controller,
          reason,
          dead_letters_total: 1,
        }),
      );
    },
    deferred(controller, label) {
      emit(() =>
        emfLine(namespace, now(), [{ dimensions: ['controller', 'result'], metrics: [{ name: 'deferred_total', unit: 'Count' }] }], {
          controller,
          result: label,
          deferred_total: 1,
        }),
      );
    },
    timerTick(controller, timer, label) {
      emit(() =>
        emfLine(namespace, now(), [{ dimensions: ['controller', 'timer', 'result'], metrics: [{ name: 'timer_ticks_total', unit: 'Count' }] }], {
          controller,
          timer,
          result: label,
          timer_ticks_total: 1,
        }),
      );
    },
    unmarkedRequeue(controller) {
      emit(() =>
        emfLine(namespace, now(), [{ dimensions: ['controller'], metrics: [{ name: 'unmarked_requeues_total', unit: 'Count' }] }], {
          controller,
          unmarked_requeues_total: 1,
        }),
      );
    },
  };
}

/** Metrics that go nowhere (tests, or when metrics are disabled). */
export const noMetrics: Metrics = { reconcile() {}, deadLetter() {}, deferred() {}, timerTick() {}, unmarkedRequeue() {} };
