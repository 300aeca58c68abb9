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
 * - When none is due, the group is `notDue` and the message with the earliest `notBefore`
 *   represents it (the handler re-delays just that one; the others are duplicates).
 *
 * Order: a group holding a change of the object itself (`Added`, `Modified`, `Deleted`) comes
 * before groups of children's events and follow-ups, and those before periodic `Resync`s
 * (`reasonPriority`), so a spec change does not wait behind no-op reconciles of other keys
 * when a batch holds more keys than the function reconciles at once; within a priority,
 * groups keep the order of their first record.
 *
 * Guarantees: every record ends up in exactly one group or in `poison`; decoding never throws.
 */
import type { SQSRecord } from 'aws-lambda';
import { decodeMessage, mergedResourceVersion, objectKey, reasonPriority, type ReconcileMessage } from '../contract/message.ts';
import { isDue } from './schedule.ts';

export interface KeyGroup {
  readonly key: string;
  /** The message that represents the group (see module doc). */
  readonly message: ReconcileMessage;
  /** The raw body of that message, unchanged (what goes to the DLQ). */
  readonly body: string;
  /** Every record of the batch for this key (all acknowledged or failed together). */
  readonly records: readonly SQSRecord[];
  /** True when no message of the group is due yet: re-delay `message`, do not reconcile. */
  readonly notDue: boolean;
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
  const byKey = new Map<string, { records: SQSRecord[]; messages: ReconcileMessage[]; bodies: Map<ReconcileMessage, string> }>();
  for (const record of records) {
    const decoded = decodeMessage(record.body);
    if (!decoded.ok) {
      poison.push({ record, error: decoded.error });
      continue;
    }
    const key = objectKey(decoded.message);
    let entry = byKey.get(key);
    if (!entry) {
      entry = { records: [], messages: [], bodies: new Map() };
      byKey.set(key, entry);
    }
    entry.records.push(record);
    entry.messages.push(decoded.message);
    entry.bodies.set(decoded.message, record.body);
  }
  const groups: { group: KeyGroup; priority: number }[] = [];
  for (const [key, entry] of byKey) {
    const due = entry.messages.filter((m) => isDue(m.notBefore, now));
    const notDue = due.length === 0;
    const chosen = notDue ? earliestNotBefore(entry.messages) : representative(due);
    const message = notDue ? chosen : standingFor(chosen, due);
    const priority = Math.min(...(notDue ? entry.messages : due).map((m) => reasonPriority(m.reason)));
    groups.push({ group: { key, message, body: entry.bodies.get(chosen) ?? JSON.stringify(chosen), records: entry.records, notDue }, priority });
  }
  // Array.prototype.sort is stable: within a priority, the order of first records stays.
  return { groups: groups.sort((a, b) => a.priority - b.priority).map((g) => g.group), poison };
}

/** Highest attempt, then latest observedAt. `messages` is non-empty. */
export function representative(messages: readonly ReconcileMessage[]): ReconcileMessage {
  return messages.reduce((best, m) =>
    m.attempt > best.attempt || (m.attempt === best.attempt && m.observedAt > best.observedAt) ? m : best);
}

/** The representative of `due`, without a resourceVersion when they do not all share it. */
function standingFor(chosen: ReconcileMessage, due: readonly ReconcileMessage[]): ReconcileMessage {
  if (chosen.resourceVersion === undefined || mergedResourceVersion(due) !== undefined) return chosen;
  const { resourceVersion: _several, ...rest } = chosen;
  return rest;
}

function earliestNotBefore(messages: readonly ReconcileMessage[]): ReconcileMessage {
  return messages.reduce((best, m) => ((m.notBefore ?? 0) < (best.notBefore ?? 0) ? m : best));
}
