/**
 * Per-object timers (Kopf's `@kopf.timer`, Pepr's `OnSchedule`): a controller declares
 * `timers: [{ name, everySeconds, run }]` and the runtime runs `run(object, ctx)` every
 * `everySeconds` for each object of its kind, with no event. The mechanism is a requeue chain
 * per object and timer (docs/semantics.md, "Per-object timers", says why not a scheduler):
 *
 * - A *tick* is a `Requeue` message naming the timer (`timer`, contract/message.ts), due at its
 *   time (`notBefore`). Handling a tick runs the timer — not the reconcile — and sends the next
 *   tick, due one period after this one (no drift: the next due time is computed from this
 *   one's, not from when it ran; a tick more than a period late skips the runs it missed).
 * - The pending tick's due time is marked on the object (contract/timer-mark.ts, written once
 *   the next tick was sent). A tick due *before* the mark is one a later chain replaced: it is
 *   acknowledged without running (`superseded`). So however many chains exist for a moment,
 *   one survives a tick later, and in per-key mode (ticks go through the key's FIFO group) a
 *   timer never runs twice at once for one object.
 * - A chain starts from a reconcile: any reconcile of an object (not paused, not being deleted)
 *   whose mark for a timer is absent or more than `TIMER_LATE_MS` in the past sends a tick due
 *   now. Events of an object whose chain is alive see a mark ahead and send nothing, so events
 *   never multiply chains; a chain lost with its message (purged queue, a release that did not
 *   know the timer) is started again by the object's next reconcile — at the latest its
 *   scheduled resync.
 * - A chain ends when its tick finds the object gone (404 or another uid), being deleted, or
 *   paused (`operless.dev/paused`), or when the controller no longer declares the timer. A
 *   resumed object's next reconcile starts it again (its mark is in the past by then).
 * - A failed run does not end the chain: the next tick is the retry (logged, counted, a
 *   `Warning` Event `TimerFailed`). A failed reconcile of the object touches no tick.
 *
 * - A mark further ahead than a chain could have written (more than a period and a minute
 *   after now) is ignored: a tenant's edit of the annotation cannot stop the timer.
 *
 * Controllers without timers pay nothing: no message, no mark, no extra request. Pure.
 */
import { MAX_WAIT_SECONDS, MESSAGE_VERSION, type ReconcileMessage } from '../../contract/message.ts';
import { isDnsLabel } from '../../contract/names.ts';
import { timerMarkOf } from '../../contract/timer-mark.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { TimerSpec } from './types.ts';

/** How long past its due time a pending tick may be before a reconcile starts a new chain. */
export const TIMER_LATE_MS = 60_000;

const TIMER_FIELDS = new Set(['name', 'everySeconds', 'run']);

/** The validated timers of a spec (none when absent), or throws a TypeError naming the field (`timers[i].everySeconds`…). */
export function resolveTimers<T extends KubeObject>(value: unknown): readonly TimerSpec<T>[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`timers must be a list of { name, everySeconds, run }, got ${JSON.stringify(value)}`);
  const names = new Set<string>();
  return Object.freeze(
    value.map((timer: unknown, i) => {
      const at = `timers[${i}]`;
      if (timer === null || typeof timer !== 'object' || Array.isArray(timer))
        throw new TypeError(`${at} must be { name, everySeconds, run }, got ${JSON.stringify(timer)}`);
      const extra = Object.keys(timer).filter((k) => !TIMER_FIELDS.has(k));
      if (extra.length > 0) throw new TypeError(`${at} has unknown field(s) ${extra.join(', ')}; only name, everySeconds and run are allowed`);
      const { name, everySeconds, run } = timer as Partial<TimerSpec<T>>;
      if (typeof name !== 'string' || !isDnsLabel(name)) throw new TypeError(`${at}.name must be a DNS-1123 label like "health", got ${JSON.stringify(name)}`);
      if (names.has(name)) throw new TypeError(`${at}.name "${name}" is declared twice`);
      names.add(name);
      if (typeof everySeconds !== 'number' || !Number.isInteger(everySeconds) || everySeconds < 1 || everySeconds > MAX_WAIT_SECONDS) {
        throw new TypeError(`${at}.everySeconds must be a whole number of seconds from 1 to ${MAX_WAIT_SECONDS}, got ${JSON.stringify(everySeconds)}`);
      }
      if (typeof run !== 'function') throw new TypeError(`${at}.run(object, ctx) must be a function`);
      return timer as TimerSpec<T>;
    }),
  );
}

/**
 * The object's mark of timer `name`, when a chain could have written it: a tick marks at most
 * one period after the time it ran, so a mark further ahead than a period (plus the clock
 * margin `TIMER_LATE_MS`) was written by someone else — a tenant editing the annotation — and
 * is ignored rather than stopping the timer until then. Pure.
 */
export function credibleTimerMark(object: KubeObject, timer: Pick<TimerSpec, 'name' | 'everySeconds'>, now: number): number | undefined {
  const mark = timerMarkOf(object, timer.name);
  return mark !== undefined && mark <= now + timer.everySeconds * 1000 + TIMER_LATE_MS ? mark : undefined;
}

/** The timers a reconcile of `object` at `now` must start: those whose (credible) mark is absent or more than `TIMER_LATE_MS` past. */
export function timersToStart(timers: readonly Pick<TimerSpec, 'name' | 'everySeconds'>[], object: KubeObject, now: number): readonly string[] {
  if (object.metadata.deletionTimestamp) return [];
  return timers
    .filter((t) => {
      const mark = credibleTimerMark(object, t, now);
      return mark === undefined || mark < now - TIMER_LATE_MS;
    })
    .map((t) => t.name);
}

/** A tick of timer `name` for `object` (the live one: its uid ends the chain if the object is recreated), due at `due`. */
export function tickMessage(
  ref: Pick<ReconcileMessage, 'cluster' | 'apiVersion' | 'kind' | 'namespace' | 'name' | 'uid'>,
  name: string,
  due: number,
): ReconcileMessage {
  return {
    v: MESSAGE_VERSION,
    cluster: ref.cluster,
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    ...(ref.namespace ? { namespace: ref.namespace } : {}),
    name: ref.name,
    ...(ref.uid ? { uid: ref.uid } : {}),
    reason: 'Requeue',
    observedAt: due,
    attempt: 0,
    notBefore: due,
    timer: name,
  };
}

/** When a tick is due: its `notBefore`, else (a tick sent without one) when it was observed. */
export function tickDue(tick: Pick<ReconcileMessage, 'notBefore' | 'observedAt'>): number {
  return tick.notBefore ?? tick.observedAt;
}

export type TickStep =
  /** A later chain's tick is pending (the mark is after this one): do not run, send nothing. */
  | { readonly type: 'superseded'; readonly mark: number }
  /** Run the timer, then send the next tick due at `next` and mark it. */
  | { readonly type: 'run'; readonly next: number };

/** What a due tick (due at `due`) of a timer every `everySeconds` does on `object` (live, not paused, not deleting) at `now`. */
export function tickStep(due: number, object: KubeObject, name: string, everySeconds: number, now: number): TickStep {
  const mark = credibleTimerMark(object, { name, everySeconds }, now);
  if (mark !== undefined && due < mark) return { type: 'superseded', mark };
  return { type: 'run', next: nextTickDue(due, everySeconds, now) };
}

/** The due time of the tick after one due at `due`: a period later, or a period after `now` when that has passed (missed runs are skipped, not caught up). */
export function nextTickDue(due: number, everySeconds: number, now: number): number {
  const period = everySeconds * 1000;
  return due + period > now ? due + period : now + period;
}
