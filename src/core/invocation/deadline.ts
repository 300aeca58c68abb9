/**
 * An invocation's answer deadline: the moment a handler answers with what it has, so that an
 * invocation never runs into its timeout (a timed-out invocation acknowledges nothing). When it
 * falls is budget.ts's decision (`answerAfterMs`); this is the timer.
 *
 * Guarantees: `reached` resolves once, with the given value, when the deadline passes, and never
 * for an unbounded invocation (no finite time left); `passed()` says whether it has; `clear()`
 * stops the timer, so nothing of it outlives the invocation.
 */
export interface AnswerDeadline<T> {
  readonly reached: Promise<T>;
  passed(): boolean;
  clear(): void;
}

/** A deadline `inMs` from now (none when `inMs` is not finite) whose `reached` resolves with `value`. */
export function answerDeadline<T>(inMs: number, value: T): AnswerDeadline<T> {
  if (!Number.isFinite(inMs)) return { reached: new Promise<T>(() => {}), passed: () => false, clear: () => {} };
  let passed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const reached = new Promise<T>((resolve) => {
    timer = setTimeout(
      () => {
        passed = true;
        resolve(value);
      },
      Math.max(0, inMs),
    );
  });
  return { reached, passed: () => passed, clear: () => clearTimeout(timer) };
}
