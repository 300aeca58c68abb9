/**
 * Merging two pending messages for the same object key. Messages are level-based (they
 * name an object, the reconciler reads its live state), so two pending messages for one
 * key can always become one without losing anything.
 *
 * Rule: the newer message wins (its uid, resourceVersion and reason), except that
 * - `observedAt` keeps the EARLIER value, so the lag metric measures from the first change;
 * - an `Added` followed by `Modified`/`Owned`/`Resync` of the same uid stays `Added`;
 * - a `Deleted` is never hidden by an older message (it is the newest by construction);
 * - `resourceVersion` names the one event behind a message: a merge of two different versions
 *   carries none (it stands for several events, possibly of different children — see
 *   `mergedResourceVersion` in the contract).
 * Pure.
 */
import { mergedResourceVersion, type ReconcileMessage } from '../contract/message.ts';

export function mergeMessages(older: ReconcileMessage, newer: ReconcileMessage): ReconcileMessage {
  const sameObject = older.uid !== undefined && older.uid === newer.uid;
  const reason = sameObject && older.reason === 'Added' && newer.reason !== 'Deleted' ? 'Added' : newer.reason;
  const { resourceVersion: _newest, ...rest } = newer;
  const resourceVersion = mergedResourceVersion([older, newer]);
  return { ...rest, reason, observedAt: Math.min(older.observedAt, newer.observedAt), ...(resourceVersion !== undefined ? { resourceVersion } : {}) };
}
