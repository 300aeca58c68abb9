/**
 * From an SQS batch to work: decode every record, set poison records aside, and group the
 * rest by object key so that each object is reconciled once per batch however many events
 * for it arrived (the workqueue's de-duplication).
 *
 * Which message of a group represents it (its reason, attempt and observedAt go on the
 * reconcile's log lines and into its follow-up):
 * - Only messages that are due count (no `notBefore`, or it has passed). A reconcile now
 *   supersedes a pending long requeue of the same object: its own result decides what
 *   happens next (level-based: the newest run saw the newest state).
 * - Among those, the highest `attempt` wins: a burst of fresh events does not reset the
 *   backoff of an object that keeps failing (no hot loop), exactly like the workqueue, whose
 *   rate limiter only forgets a key after a success. Ties go to the latest `observedAt`, so
 *   lag is measured from the newest change.
 * - A group of several events keeps a `resourceVersion` only when they all name the same one
 *   (`mergedResourceVersion`): the reconcile must not take one child's version for the whole
 *   group. `body` stays the representative's raw record.
 * - A group keeps a `uid` only when all its messages name the same one (`mergedUid`). A key is
 *   a name: messages of a deleted object and of its same-name successor can share a batch (a
 *   pending `Retry` of the old uid beside the new one's `Added`), and the highest attempt may
 *   well be the old object's. A reconcile skips a message whose uid is not the live one
 *   (reconciler.ts), so a group carrying the representative's uid would hide the new object;
 *   without a uid the reconcile reads whatever object lives under the name (level-based: an
 *   extra reconcile at worst). Rule: for any live uid U, if some message of the group names U
 *   or no uid, the group is reconciled.
 * - Once the reconcile has read the live object, `forLiveObject` gives the message it runs
 *   for: in a group of several uids, the representative of the messages naming the live uid
 *   (or none), so the old object's attempts do not count against the new one (its backoff,
 *   its `maxAttempts` before the DLQ) and `ctx.message` speaks of the new object.
 * - When none is due, the group is `notDue` and the message with the earliest `notBefore`
 *   represents it (the handler re-delays just that one; the others are duplicates), with the
 *   group's `uid` by the same rule: the one re-delayed stands for all.
 *
 * Order: a group holding a change of the object itself (`Added`, `Modified`, `Deleted`) comes
 * before groups of children's events and follow-ups, and those before periodic `Resync`s
 * (`reasonPriority`), so a spec change does not wait behind no-op reconciles of other keys
 * when a batch holds more keys than the function reconciles at once; within a priority,
 * groups keep the order of their first record.
 *
 * Ticks of a per-object timer (messages naming a `timer`) are grouped apart from the object's
 * other messages, one group per timer: they run the timer, never the reconcile (controller/timer.ts).
 *
 * Guarantees: every record ends up in exactly one group or in `poison`; decoding never throws.
 */
import type { SQSRecord } from 'aws-lambda';
import { decodeMessage, mergedOwnedKinds, mergedResourceVersion, mergedUid, objectKey, reasonPriority, type ReconcileMessage } from '../../contract/message.ts';
import { isDue } from '../invocation/schedule.ts';

export interface KeyGroup {
  readonly key: string;
  /** The message that represents the group (see module doc). */
  readonly message: ReconcileMessage;
  /** The raw body of that message, unchanged (what goes to the DLQ). */
  readonly body: string;
  /** Every record of the batch for this key (all acknowledged or failed together). */
  readonly records: readonly SQSRecord[];
  /** The `traceparent` transport field of each record's body (EventBridge), by position in `records`. */
  readonly bodyTraceparents?: readonly (string | undefined)[];
  /** True when no message of the group is due yet: re-delay `message`, do not reconcile. */
  readonly notDue: boolean;
  /** The due messages of the group (empty when `notDue`): what `forLiveObject` chooses from. */
  readonly due: readonly ReconcileMessage[];
}

export interface PoisonRecord {
  readonly record: SQSRecord;
  /** Why decoding failed, precise enough to fix the producer. */
  readonly error: string;
}

export interface DecodedBatch {
  readonly groups: readonly KeyGroup[];
  readonly poison: readonly PoisonRecord[];
}

export function groupBatch(records: readonly SQSRecord[], now: number): DecodedBatch {
  const poison: PoisonRecord[] = [];
  const byKey = new Map<
    string,
    { records: SQSRecord[]; traceparents: (string | undefined)[]; messages: ReconcileMessage[]; bodies: Map<ReconcileMessage, string> }
  >();
  for (const record of records) {
    const decoded = decodeMessage(record.body);
    if (!decoded.ok) {
      poison.push({ record, error: decoded.error });
      continue;
    }
    // A timer's ticks are a group of their own: they run the timer, not the reconcile (core/controller/timer.ts).
    const key = decoded.message.timer === undefined ? objectKey(decoded.message) : `${objectKey(decoded.message)}#timer/${decoded.message.timer}`;
    let entry = byKey.get(key);
    if (!entry) {
      entry = { records: [], traceparents: [], messages: [], bodies: new Map() };
      byKey.set(key, entry);
    }
    entry.records.push(record);
    entry.traceparents.push(decoded.traceparent);
    entry.messages.push(decoded.message);
    entry.bodies.set(decoded.message, record.body);
  }
  const groups: { group: KeyGroup; priority: number }[] = [];
  for (const [key, entry] of byKey) {
    const due = entry.messages.filter((m) => isDue(m.notBefore, now));
    const notDue = due.length === 0;
    const chosen = notDue ? earliestNotBefore(entry.messages) : representative(due);
    const message = standingFor(chosen, notDue ? entry.messages : due);
    const priority = Math.min(...(notDue ? entry.messages : due).map((m) => reasonPriority(m.reason)));
    groups.push({
      group: {
        key,
        message,
        body: entry.bodies.get(chosen) ?? JSON.stringify(chosen),
        records: entry.records,
        bodyTraceparents: entry.traceparents,
        notDue,
        due,
      },
      priority,
    });
  }
  // Array.prototype.sort is stable: within a priority, the order of first records stays.
  return { groups: groups.sort((a, b) => a.priority - b.priority).map((g) => g.group), poison };
}

/** Highest attempt, then latest observedAt. `messages` is non-empty. */
export function representative(messages: readonly ReconcileMessage[]): ReconcileMessage {
  return messages.reduce((best, m) => (m.attempt > best.attempt || (m.attempt === best.attempt && m.observedAt > best.observedAt) ? m : best));
}

/**
 * `chosen` standing for `messages`: without a resourceVersion / uid when they do not all share
 * it, with the union of their owned kinds when every one names its kinds, else none.
 */
function standingFor(chosen: ReconcileMessage, messages: readonly ReconcileMessage[]): ReconcileMessage {
  const keepVersion = chosen.resourceVersion === undefined || mergedResourceVersion(messages) !== undefined;
  const keepUid = chosen.uid === undefined || mergedUid(messages) !== undefined;
  const kinds = chosen.ownedKinds === undefined ? undefined : mergedOwnedKinds(messages);
  const sameKinds = kinds?.join() === chosen.ownedKinds?.join();
  if (keepVersion && keepUid && sameKinds) return chosen;
  const { resourceVersion, uid, ownedKinds: _kinds, ...rest } = chosen;
  return {
    ...rest,
    ...(keepVersion && resourceVersion !== undefined ? { resourceVersion } : {}),
    ...(keepUid && uid !== undefined ? { uid } : {}),
    ...(kinds !== undefined ? { ownedKinds: kinds } : {}),
  };
}

/**
 * The message a group's reconcile runs for once the live object's uid is known (see module
 * doc): the group's own when it names one uid (a live object with another uid skips it) or
 * when no due message names the live uid or none; otherwise the representative of those that
 * do, standing for the whole group (no uid, no resourceVersion unless shared). Pure.
 */
export function forLiveObject(group: Pick<KeyGroup, 'message' | 'due'>, liveUid: string | undefined): ReconcileMessage {
  if (group.message.uid !== undefined || liveUid === undefined) return group.message;
  const current = group.due.filter((m) => m.uid === undefined || m.uid === liveUid);
  if (current.length === 0 || current.length === group.due.length) return group.message;
  return standingFor(representative(current), group.due);
}

function earliestNotBefore(messages: readonly ReconcileMessage[]): ReconcileMessage {
  return messages.reduce((best, m) => ((m.notBefore ?? 0) < (best.notBefore ?? 0) ? m : best));
}
