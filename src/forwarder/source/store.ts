/**
 * The per-stream store: the last snapshot seen for every uid of one watch stream (a kind,
 * possibly restricted to one namespace). It is what makes a relist cheap for the queue:
 * after a 410 Gone or a reconnect that needs a fresh list, only objects whose
 * resourceVersion changed — plus the ones that vanished — become events.
 *
 * Guarantees: `diffRelist` is pure; it reports each uid at most once; an object listed
 * with the same resourceVersion as stored produces nothing; an object stored but not
 * listed produces exactly one DELETED carrying the last snapshot (its owner is still known).
 * Every DELETED comes before every ADDED/MODIFIED, the order a watch would have shown: an
 * object deleted and recreated under the same name while the stream was away is reported as
 * the old uid's DELETED, then the new uid's ADDED — never the new object first and then a
 * `Deleted` for its name (the merge would still lead to a reconcile of the live object, see
 * merge.ts, but the messages' order should tell the truth).
 */
import type { ObjectSnapshot } from './snapshot.ts';

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  readonly type: ChangeType;
  /** The snapshot before the change (absent for ADDED). */
  readonly old?: ObjectSnapshot;
  /** The snapshot after the change (for DELETED: the last known state). */
  readonly current: ObjectSnapshot;
}

/** Changes between what the store holds and a fresh, complete list. */
export function diffRelist(stored: ReadonlyMap<string, ObjectSnapshot>, listed: readonly ObjectSnapshot[]): Change[] {
  const present = new Set(listed.map((s) => s.uid));
  const changes: Change[] = [];
  for (const [uid, old] of stored) {
    if (!present.has(uid)) changes.push({ type: 'DELETED', old, current: old });
  }
  const reported = new Set<string>();
  for (const current of listed) {
    if (reported.has(current.uid)) continue;
    reported.add(current.uid);
    const old = stored.get(current.uid);
    if (!old) changes.push({ type: 'ADDED', current });
    else if (old.resourceVersion !== current.resourceVersion) changes.push({ type: 'MODIFIED', old, current });
  }
  return changes;
}

export class SnapshotStore {
  readonly #byUid = new Map<string, ObjectSnapshot>();

  get size(): number {
    return this.#byUid.size;
  }

  get(uid: string): ObjectSnapshot | undefined {
    return this.#byUid.get(uid);
  }

  all(): ObjectSnapshot[] {
    return [...this.#byUid.values()];
  }

  /** Applies one watch event and returns it as a Change (with the previous snapshot). */
  apply(type: ChangeType, current: ObjectSnapshot): Change {
    const old = this.#byUid.get(current.uid);
    if (type === 'DELETED') this.#byUid.delete(current.uid);
    else this.#byUid.set(current.uid, current);
    // A MODIFIED for an unknown uid is an ADDED we never saw (e.g. the stream resumed late).
    const effective: ChangeType = type === 'MODIFIED' && !old ? 'ADDED' : type;
    return old ? { type: effective, old, current } : { type: effective, current };
  }

  /** Replaces the content with a complete list; returns what changed. */
  replace(listed: readonly ObjectSnapshot[]): Change[] {
    const changes = diffRelist(this.#byUid, listed);
    this.#byUid.clear();
    for (const s of listed) this.#byUid.set(s.uid, s);
    return changes;
  }

  clear(): void {
    this.#byUid.clear();
  }
}
