/**
 * A controller's resync period (`ControllerSpec.resync`, e.g. `{ everySeconds: 600 }`): how
 * often the scheduled resync lists every object of its kind and sends each a `Resync`.
 * Validation is pure and names the field, so a bad period fails the cold start with a message
 * that says what to fix. The period is whole minutes (an EventBridge `rate()` schedule has a
 * one-minute resolution); `resyncScheduleExpression` turns it into that expression for the
 * kind's schedule event in serverless.yml. No shorter period after an error: a failed
 * reconcile is already requeued with backoff (core/controller/retry-policy.ts), so the resync is only the
 * safety net for what no event, requeue or retry covers.
 */

export interface ResyncPeriod {
  /** Seconds between two scheduled resyncs of the kind: a whole number of minutes. */
  readonly everySeconds: number;
}

/** Bounds of `everySeconds` (see docs/semantics.md). */
export const RESYNC_MIN_SECONDS = 60;
export const RESYNC_MAX_SECONDS = 7 * 24 * 3600;
/** The period when a controller declares none (the project's `resyncSchedule` default). */
export const DEFAULT_RESYNC_SECONDS = 600;

/** The resolved period in seconds, or throws a TypeError naming `resync.everySeconds` (pure). */
export function resolveResyncPeriod(value: unknown): number {
  if (value === undefined) return DEFAULT_RESYNC_SECONDS;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`resync must be an object like { everySeconds: 600 }, got ${JSON.stringify(value)}`);
  }
  const extra = Object.keys(value).filter((k) => k !== 'everySeconds');
  if (extra.length > 0) throw new TypeError(`resync has unknown field(s) ${extra.join(', ')}; only everySeconds is allowed`);
  const seconds = (value as { everySeconds?: unknown }).everySeconds;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds % 60 !== 0 || seconds < RESYNC_MIN_SECONDS || seconds > RESYNC_MAX_SECONDS) {
    throw new TypeError(
      `resync.everySeconds must be a whole number of minutes in seconds, from ${RESYNC_MIN_SECONDS} to ${RESYNC_MAX_SECONDS} (e.g. 600), got ${JSON.stringify(seconds)}`,
    );
  }
  return seconds;
}

/** The EventBridge schedule expression of a period: `rate(1 minute)`, `rate(10 minutes)`, `rate(2 hours)` (pure). */
export function resyncScheduleExpression(everySeconds: number): string {
  const minutes = resolveResyncPeriod({ everySeconds }) / 60;
  if (minutes % 1440 === 0) return minutes === 1440 ? 'rate(1 day)' : `rate(${minutes / 1440} days)`;
  if (minutes % 60 === 0) return minutes === 60 ? 'rate(1 hour)' : `rate(${minutes / 60} hours)`;
  return minutes === 1 ? 'rate(1 minute)' : `rate(${minutes} minutes)`;
}

/**
 * The kinds a scheduled invocation resyncs: the event's `kinds` (the schedule event's `input`
 * in serverless.yml, one schedule per period), or every kind when the event names none (pure).
 * A name no target has, or a `kinds` that is not a list of names, is refused with a message
 * naming the field: a mistyped kind would otherwise never be resynced, silently.
 */
export function scheduledKinds(event: unknown, known: readonly string[]): readonly string[] {
  const kinds = event !== null && typeof event === 'object' ? (event as { kinds?: unknown }).kinds : undefined;
  if (kinds === undefined) return known;
  if (!Array.isArray(kinds) || kinds.length === 0 || !kinds.every((k) => typeof k === 'string')) {
    throw new TypeError(
      `the resync event's kinds must be a non-empty list of kind names (its schedule's input in serverless.yml), got ${JSON.stringify(kinds)}`,
    );
  }
  const unknown = kinds.filter((k) => !known.includes(k));
  if (unknown.length > 0) {
    throw new TypeError(`the resync event's kinds name ${unknown.join(', ')}, which this resync function does not serve (it serves ${known.join(', ')})`);
  }
  return kinds;
}

/** One schedule event of the resync function: its rate and the kinds it names. */
export interface ResyncSchedule {
  readonly rate: string;
  readonly input: { readonly kinds: readonly string[] };
}

/** The resync function's schedule events for these kinds' periods: one per distinct period, shortest first (pure). */
export function resyncSchedules(kinds: readonly { readonly kind: string; readonly everySeconds: number }[]): ResyncSchedule[] {
  const byPeriod = new Map<number, string[]>();
  for (const { kind, everySeconds } of kinds) byPeriod.set(everySeconds, [...(byPeriod.get(everySeconds) ?? []), kind]);
  return [...byPeriod.entries()].sort(([a], [b]) => a - b).map(([seconds, names]) => ({ rate: resyncScheduleExpression(seconds), input: { kinds: names } }));
}
