/**
 * The per-object timer mark: the annotation `timer.operless.dev/<timer name>` on a primary holds
 * the due time (ms since the epoch, a decimal integer) of that timer's pending tick
 * (core/controller/timer.ts, docs/semantics.md "Per-object timers"). The function writes it after the tick
 * was sent; the forwarder leaves the runtime's marks out of the annotations it compares
 * (requeue-mark.ts `withoutRuntimeMarks`), so writing one never causes a reconcile. Pure.
 */

/** The annotation prefix of timer marks; the name part is the timer's name (a DNS-1123 label). */
export const TIMER_MARK_PREFIX = 'timer.operless.dev/';

/** The annotation that marks the pending tick of the timer `name`. */
export function timerMarkAnnotation(name: string): string {
  return `${TIMER_MARK_PREFIX}${name}`;
}

/** The longest mark accepted: a decimal integer of ms (13 digits until the year 2286). */
const MARK = /^\d{1,15}$/;

/** The due time the mark of timer `name` names, or undefined when there is none or it is not a whole number of ms. */
export function timerMarkOf(
  object: { readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> | undefined } } | undefined,
  name: string,
): number | undefined {
  const value = object?.metadata?.annotations?.[timerMarkAnnotation(name)];
  return typeof value === 'string' && MARK.test(value) ? Number(value) : undefined;
}

/** True for an annotation key that is a timer mark. */
export function isTimerMark(annotation: string): boolean {
  return annotation.startsWith(TIMER_MARK_PREFIX);
}
