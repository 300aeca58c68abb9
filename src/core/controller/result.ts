/**
 * What the author's reconcile returns (`ReconcileResult`, the one public name of the four the
 * runtime uses: the reconcile's `ReconcileEnding`, the runtime's `ReconcileAttempt` of a key,
 * the handler's `KeyOutcome` per key's records): a discriminated union, so controller-runtime's ambiguous
 * "a result *and* an error" cannot be expressed. Errors are thrown, never returned:
 *
 * - `done()`                → the object is where it should be; nothing is sent.
 * - `requeueAfter(seconds)` → reconcile again after that long (polling, waiting for a child).
 * - `throw err`             → retry with per-key exponential backoff (see retry-policy.ts).
 * - `throw new TerminalError(msg)` → no retry: a Warning Event and a DLQ entry with the reason.
 */
export type ReconcileResult = { readonly type: 'done' } | { readonly type: 'requeueAfter'; readonly seconds: number };

export const done = (): ReconcileResult => ({ type: 'done' });

/** Reconcile again after `seconds` (fractions are rounded up to whole seconds; min 1). */
export function requeueAfter(seconds: number): ReconcileResult {
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new RangeError(`requeueAfter(seconds) needs a finite, non-negative number, got ${seconds}`);
  }
  return { type: 'requeueAfter', seconds };
}
