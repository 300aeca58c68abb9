/**
 * Reconcile metrics as CloudWatch Embedded Metric Format (EMF): one JSON line on stdout per
 * reconcile, which CloudWatch Logs turns into metrics with no API call and no extra latency.
 * Names follow controller-runtime (`controller_runtime_` prefix dropped; the namespace
 * plays that role) so dashboards and alerts translate directly. `FUNCTION_METRICS` below is
 * the one list of them, with units, dimensions and meanings: the lines are written from it and
 * docs/reference/metrics.md is generated from it.
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

/** What one function metric is: its unit, the dimensions it is published under, and what it counts. */
export interface FunctionMetric {
  readonly unit: 'Count' | 'Seconds';
  readonly dimensions: readonly string[];
  readonly meaning: string;
}

/** Every metric the reconcile functions publish (EMF), by name. */
export const FUNCTION_METRICS = {
  reconcile_total: {
    unit: 'Count',
    dimensions: ['controller', 'result'],
    meaning: "Reconciles, by result: success, error, requeue_after (controller-runtime's labels).",
  },
  reconcile_time_seconds: { unit: 'Seconds', dimensions: ['controller'], meaning: 'Duration of one reconcile.' },
  reconcile_errors_total: {
    unit: 'Count',
    dimensions: ['controller'],
    meaning: 'Reconciles that failed, terminal errors included (1 per failed reconcile, 0 otherwise).',
  },
  terminal_reconcile_errors_total: {
    unit: 'Count',
    dimensions: ['controller'],
    meaning: 'Reconciles that failed with a TerminalError (no retries; the message goes to the DLQ).',
  },
  queue_lag_seconds: {
    unit: 'Seconds',
    dimensions: ['controller'],
    meaning: "From the producer seeing a change (the message's observedAt) to the start of its reconcile.",
  },
  resync_repaired_total: {
    unit: 'Count',
    dimensions: ['controller'],
    meaning:
      "On a Resync's reconcile only: 1 when it wrote a change (drift no event had reported), else 0. Its sum is what the resync repaired, its sample count the resync's reconciles.",
  },
  dead_letters_total: {
    unit: 'Count',
    dimensions: ['controller', 'reason'],
    meaning: 'Messages the runtime moved to the DLQ, by reason (docs/reference/dlq-reasons.md).',
  },
  deferred_total: {
    unit: 'Count',
    dimensions: ['controller', 'result'],
    meaning:
      "Keys handed back unreconciled, by result: not_due (a requeue not yet due), deferred (no time left in the invocation), rate_limited (past the controller's rateLimit).",
  },
  timer_ticks_total: {
    unit: 'Count',
    dimensions: ['controller', 'timer', 'result'],
    meaning: "Ticks of a per-object timer, by timer and how the tick ended (the runtime's outcome label).",
  },
  unmarked_requeues_total: {
    unit: 'Count',
    dimensions: ['controller'],
    meaning: 'Per-key ordering: requeues sent whose mark could not be written (they stand, unmerged).',
  },
} as const satisfies Readonly<Record<string, FunctionMetric>>;

export type FunctionMetricName = keyof typeof FUNCTION_METRICS;

/** A metric of the catalogue as an EMF directive names it. */
function metric(name: FunctionMetricName): { name: string; unit: string } {
  return { name, unit: FUNCTION_METRICS[name].unit };
}

/** The EMF directive of one metric alone, under its catalogue dimensions. */
function directive(name: FunctionMetricName): { dimensions: string[]; metrics: { name: string; unit: string }[] } {
  return { dimensions: [...FUNCTION_METRICS[name].dimensions], metrics: [metric(name)] };
}

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
        metric('reconcile_time_seconds'),
        metric('reconcile_errors_total'),
        metric('terminal_reconcile_errors_total'),
        ...(sample.lagSeconds === undefined ? [] : [metric('queue_lag_seconds')]),
        ...(sample.resyncRepaired === undefined ? [] : [metric('resync_repaired_total')]),
      ];
      emit(() =>
        emfLine(
          namespace,
          now(),
          [directive('reconcile_total'), { dimensions: [...FUNCTION_METRICS.reconcile_time_seconds.dimensions], metrics: perController }],
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
        emfLine(namespace, now(), [directive('dead_letters_total')], {
          controller,
          reason,
          dead_letters_total: 1,
        }),
      );
    },
    deferred(controller, label) {
      emit(() =>
        emfLine(namespace, now(), [directive('deferred_total')], {
          controller,
          result: label,
          deferred_total: 1,
        }),
      );
    },
    timerTick(controller, timer, label) {
      emit(() =>
        emfLine(namespace, now(), [directive('timer_ticks_total')], {
          controller,
          timer,
          result: label,
          timer_ticks_total: 1,
        }),
      );
    },
    unmarkedRequeue(controller) {
      emit(() =>
        emfLine(namespace, now(), [directive('unmarked_requeues_total')], {
          controller,
          unmarked_requeues_total: 1,
        }),
      );
    },
  };
}

/** Metrics that go nowhere (tests, or when metrics are disabled). */
export const noMetrics: Metrics = { reconcile() {}, deadLetter() {}, deferred() {}, timerTick() {}, unmarkedRequeue() {} };
