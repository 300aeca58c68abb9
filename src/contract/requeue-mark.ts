/**
 * The pending-requeue mark of per-key ordering: the annotation `operless.dev/requeue-at` on a
 * primary holds the due time (ms since the epoch, a decimal integer) of the one requeue of
 * that object that is still to come (docs/architecture.md, "Per-key ordering"). The function
 * writes it; the forwarder leaves it out of the annotations it compares, so writing it never
 * causes a reconcile. Pure.
 */
import { isTimerMark } from './timer-mark.ts';

export const REQUEUE_MARK_ANNOTATION = 'operless.dev/requeue-at';

/** The longest mark accepted: a decimal integer of ms (13 digits until the year 2286). */
const MARK = /^\d{1,15}$/;

/** The due time an object's mark names, or undefined when it has none or one that is not a whole number of ms. */
export function requeueMarkOf(
  object: { readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> | undefined } } | undefined,
): number | undefined {
  const value = object?.metadata?.annotations?.[REQUEUE_MARK_ANNOTATION];
  return typeof value === 'string' && MARK.test(value) ? Number(value) : undefined;
}

/**
 * `annotations` without the runtime's own marks — the pending-requeue mark and the timer marks
 * (timer-mark.ts) — which the forwarder must not route as a change; anything else (no mark,
 * not an object) unchanged.
 */
export function withoutRuntimeMarks(annotations: unknown): unknown {
  if (typeof annotations !== 'object' || annotations === null) return annotations;
  const keys = Object.keys(annotations);
  if (!keys.some((k) => k === REQUEUE_MARK_ANNOTATION || isTimerMark(k))) return annotations;
  return Object.fromEntries(Object.entries(annotations).filter(([k]) => k !== REQUEUE_MARK_ANNOTATION && !isTimerMark(k)));
}
