/**
 * Orderings: how a kind's work queue delivers its messages — the one list of names shared by
 * `operless create api --ordering`, the project file, the local loop (`operless dev
 * --ordering`) and serverless.yml's `ordering` parameter.
 *
 * - `unordered`: a standard queue; at-least-once, no order, two invocations may reconcile one
 *   key at once (the stale-write guards are the net);
 * - `per-key`: a FIFO queue with message group = object key, and a standard delay queue for
 *   delayed follow-ups: one reconcile of a key at a time, requeues that merge
 *   (docs/architecture.md, "Per-key ordering").
 *
 * The runtime resolves it once at cold start (core/handler/ordering.ts): `OPERLESS_ORDERING` (or
 * `toSqsHandler`'s `ordering` option) when set, else the work queue's kind (`.fifo` is per-key);
 * a mismatch with the queues is refused, naming the field.
 */
export const ORDERINGS = ['unordered', 'per-key'] as const;
export type Ordering = (typeof ORDERINGS)[number];

/** `value` as an ordering, or undefined when it is none. Pure. */
export function asOrdering(value: unknown): Ordering | undefined {
  return (ORDERINGS as readonly unknown[]).includes(value) ? (value as Ordering) : undefined;
}
