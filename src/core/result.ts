/**
 * What a reconcile returns: a discriminated union, so controller-runtime's ambiguous
 * "a result *and* an error" cannot be expressed. Errors are thrown, never returned:
 *
 * - `done()`                → the object is where it should be; nothing is sent.
 * - `requeueAfter(seconds)` → reconcile again after that long (polling, waiting for a child).
 * - `throw err`             → retry with per-key exponential backoff (see backoff.ts).
 * - `throw new TerminalError(msg)` → no retry: a Warning Event and a DLQ entry with the reason.
 */
export type ReconcileResult =
  | { readonly type: 'done' }
  | { readonly type: 'requeueAfter'; readonly seconds: number };

export const done = (): ReconcileResult => ({ type: 'done' });

/** Reconcile again after `seconds` (fractions are rounded up to whole seconds; min 1). */
export function requeueAfter(seconds: number): ReconcileResult {
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new RangeError(`requeueAfter(seconds) needs a finite, non-negative number, got ${seconds}`);
  }
  return { type: 'requeueAfter', seconds };
}
