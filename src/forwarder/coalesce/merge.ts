/**
 * Merging two pending messages for the same object key. Messages are level-based (they
 * name an object, the reconciler reads its live state), so two pending messages for one
 * key can always become one without losing anything — provided the merge never names an
 * object that one of its parts did not.
 *
 * A key is a name, not an object: a primary deleted and recreated under the same name is a
 * new object with a new uid, and messages of both can be pending at once (the old object's
 * `Deleted`, the new one's `Added`, and an `Owned` event of a child the garbage collector
 * deleted after the recreate, which names the OLD owner's uid). Their order says nothing
 * about which object is current: children's events come from other watch streams. So:
 *
 * 1. uid — kept only when both messages name the same uid; otherwise (different uids, or one
 *    carries none) the merge carries none, and its reconcile reads whatever object lives
 *    under the name. A reconcile skips a message whose uid is not the live one (reconciler.ts,
 *    docs/semantics.md row 11), so this is the one rule under which a merge is skipped only
 *    when every part would have been: for any live uid U, if some part names U (or no uid),
 *    the merge is reconciled (`mergedUid` in the contract; property-tested). A `Deleted` of the old object
 *    merged with the new one's messages therefore leads to a reconcile of the new object,
 *    which is harmless: a new object under a name proves the old one is gone, finalizers
 *    included (the API server refuses a create while the old object still exists).
 * 2. reason — of the same object (same uid): the newer's, except that an `Added` followed by
 *    anything but `Deleted` stays `Added` (the creation is not reconciled yet). Of different
 *    objects: the one of higher `reasonPriority` (a change of an object itself before a
 *    child's event or a follow-up, before a `Resync`), and between two changes of objects
 *    themselves the newer's, except that a `Deleted` never replaces another object's
 *    `Added`/`Modified` (the live object is the one created or changed, not the one gone).
 * 3. `observedAt` keeps the EARLIER value, so the lag metric measures from the first change.
 * 4. `resourceVersion` names the one event behind a message: a merge of two different versions
 *    carries none (it stands for several events, possibly of different children — see
 *    `mergedResourceVersion` in the contract).
 * 5. `ownedKinds` (which children changed) is the union when both name theirs, otherwise none
 *    (a part that does not say which child changed may stand for any: `mergedOwnedKinds`).
 * 6. everything else (attempt, notBefore) is the newer's.
 * Pure.
 */
import { mergedOwnedKinds, mergedResourceVersion, mergedUid, reasonPriority, type Reason, type ReconcileMessage } from '../../contract/message.ts';

export function mergeMessages(older: ReconcileMessage, newer: ReconcileMessage): ReconcileMessage {
  const { resourceVersion: _newest, uid: _newUid, ownedKinds: _newKinds, ...rest } = newer;
  const uid = mergedUid([older, newer]);
  const resourceVersion = mergedResourceVersion([older, newer]);
  const ownedKinds = mergedOwnedKinds([older, newer]);
  return {
    ...rest,
    ...(uid !== undefined ? { uid } : {}),
    reason: mergedReason(older, newer),
    observedAt: Math.min(older.observedAt, newer.observedAt),
    ...(resourceVersion !== undefined ? { resourceVersion } : {}),
    ...(ownedKinds !== undefined ? { ownedKinds } : {}),
  };
}

/** Rule 2. */
function mergedReason(older: ReconcileMessage, newer: ReconcileMessage): Reason {
  const sameObject = older.uid !== undefined && older.uid === newer.uid;
  if (sameObject) return older.reason === 'Added' && newer.reason !== 'Deleted' ? 'Added' : newer.reason;
  const olderPriority = reasonPriority(older.reason);
  const newerPriority = reasonPriority(newer.reason);
  if (olderPriority !== newerPriority) return olderPriority < newerPriority ? older.reason : newer.reason;
  return newer.reason === 'Deleted' && (older.reason === 'Added' || older.reason === 'Modified') ? older.reason : newer.reason;
}
