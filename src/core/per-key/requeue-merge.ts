/**
 * Stage src/core/per-key/ — per-key ordering as one strategy: the requeue merge (this file)
 * and the delay queue's mover (mover.ts). Guarantees: one reconcile of a key at a time and at
 * most one pending requeue per key; used only when the handler's ordering is `per-key`.
 *
 * Per-key mode's requeue merge: at most one pending requeue of a key, the earliest due — what
 * controller-runtime's work queue gives `AddAfter` (docs/architecture.md, "Per-key ordering").
 *
 * The pending requeue is named on the primary by its due time (contract/requeue-mark.ts, the
 * `operless.dev/requeue-at` annotation), and every requeue carries its due time as
 * `notBefore`. In per-key mode no two reconciles of a key overlap, so the mark read with the
 * live object at the start of a reconcile is the one in force until that reconcile ends.
 *
 * - *Merge* (`requeueStep`): a `requeueAfter` due no earlier than the marked one, while the
 *   marked one is still more than `MARK_MARGIN_MS` ahead (so not yet reconciled, whatever the
 *   clocks of two invocations say), sends nothing: the marked requeue comes first and its
 *   reconcile sees newer state. Otherwise the requeue is sent and then marked — sent first,
 *   so a mark never names a message the queue did not accept. A failed mark write leaves the
 *   requeue standing unmarked (core/handler/key.ts): the key is acknowledged, never retried for it. A
 *   marked one due within the margin may already have run, so it is replaced by one due 1 ms
 *   after it: the earliest due survives, to within that millisecond.
 * - *Supersede* (`isSupersededRequeue`): a `Requeue` due *before* the marked one is an older
 *   requeue a later reconcile covered — that reconcile ran when it was due (or within the
 *   margin) and marked what it sent: it is acknowledged without a reconcile, logged and
 *   counted, never silently. A `Requeue` due at or after the mark is reconciled: it is the
 *   marked one, or one whose mark write failed (the mark it sees is older), or one a replaced
 *   earlier requeue left behind (one extra reconcile, which merges into the chain's next mark
 *   or, if the chain ended, is the chain). So a failed mark write never ends a chain, and a
 *   `Requeue` without a due time (a redriven one) is never dropped.
 * - A mark in the past never holds anything back: a requeue is merged only into one still
 *   ahead, so a stale mark (its requeue reconciled, or a tenant's edit) delays nothing past its
 *   own due time. Removing the mark is never needed.
 * - A tenant's mark: a value below a pending requeue's due time supersedes nothing; a value
 *   above it makes the pending requeue superseded, and requeues asked while it is still ahead
 *   merge into it, but the first reconcile that asks for a requeue due before it (any event,
 *   the periodic `Resync`) sends one and writes its own mark over it (the precondition is the
 *   object's resourceVersion, not the mark's value). Polling stops for at most the time to the
 *   next such reconcile, or until the forged time passes — never for good (test/unit/core/
 *   requeue-merge.test.ts; docs/architecture.md "Per-key ordering").
 *
 * Cost: one merge patch of the primary's metadata per requeue sent (a poll every 30 s: one
 * write per poll); merged and superseded requeues cost nothing. The forwarder ignores the
 * mark, so the write triggers no reconcile. Pure.
 */
import type { ReconcileMessage } from '../../contract/message.ts';
import { requeueMarkOf } from '../../contract/requeue-mark.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { FollowUp } from '../reconcile/followup.ts';

/** How far ahead a marked requeue must still be to take a later one: more than clock skew between invocations. */
export const MARK_MARGIN_MS = 1_000;

/** A follow-up in per-key mode, and the mark to write once it was sent (a sent requeue). */
export interface MarkedFollowUp {
  readonly followUp: FollowUp;
  /** The due time to mark on the primary after the send succeeded. */
  readonly mark?: number;
}

/**
 * The per-key form of `followUp` for the reconcile of `object` at `now`: a requeue merged into
 * the marked one (nothing to send), or sent with its due time as `notBefore` and marked;
 * anything else unchanged.
 */
export function requeueStep(followUp: FollowUp, object: KubeObject | undefined, now: number): MarkedFollowUp {
  if (followUp.type !== 'send' || followUp.label !== 'requeue_after') return { followUp };
  const asked = followUp.message.notBefore ?? now + followUp.delaySeconds * 1000;
  const pending = requeueMarkOf(object);
  if (pending !== undefined && pending > now + MARK_MARGIN_MS && pending <= asked) {
    return { followUp: { type: 'none', label: 'requeue_merged' } };
  }
  // A pending requeue due within the clock margin may already have run: replace it by one due
  // 1 ms after it (not at the same ms, which SQS would drop as its duplicate if it was moved).
  const due = pending !== undefined && pending > now && pending <= asked ? pending + 1 : asked;
  const delaySeconds = due === asked ? followUp.delaySeconds : Math.max(0, Math.ceil((due - now) / 1000));
  return { followUp: { ...followUp, delaySeconds, message: { ...followUp.message, notBefore: due } }, mark: due };
}

/**
 * Are `messages` (the due messages of a key's group) all requeues that a later one replaced —
 * each a `Requeue` due before the time the object's mark names? A group that holds the marked
 * requeue, an unmarked one (due after an older mark), a `Requeue` without a due time, or
 * anything else, is reconciled.
 */
export function isSupersededRequeue(messages: readonly Pick<ReconcileMessage, 'reason' | 'notBefore'>[], object: KubeObject): boolean {
  const mark = requeueMarkOf(object);
  return mark !== undefined && messages.length > 0 && messages.every((m) => m.reason === 'Requeue' && m.notBefore !== undefined && m.notBefore < mark);
}
