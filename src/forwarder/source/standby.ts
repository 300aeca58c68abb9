/**
 * The warm standby's journal: what a following replica's watch stream saw that the leader may
 * not have forwarded yet, and what the stream does when the replica takes over.
 *
 * A follower keeps its watches and stores (forwarder.ts), so a takeover needs no LIST. What it
 * must not lose is a change the old leader saw but had not sent when it died. The leader
 * publishes, per stream, the resourceVersion through which it has forwarded everything it saw
 * (its *watermark*, written with every Lease renewal: control/handover.ts); the follower
 * journals each change it sees while following, drops what a published watermark covers, and
 * on takeover forwards again every journalled change after the old leader's last watermark.
 * At least once: a change the old leader did send may be sent again (the reconcile reads the
 * live object, so that costs a reconcile, not a wrong result).
 *
 * resourceVersions are opaque to clients; the journal compares them only as the decimal etcd
 * revisions every etcd-backed API server serves (as watcher.ts `serverBehind` does). Anything
 * it cannot compare, or a watermark older than the journal reaches back, makes the stream's
 * takeover a resync from its warm store (every primary as `Resync`, no LIST): the cold
 * standby's answer, without its relist.
 *
 * Guarantees: `record` keeps one entry per uid (the first `old`, the newest `current`, and the
 * newest change alone: a watermark between the last two leaves only that one), so the journal holds at most one entry per object, and at most `maxEntries`: past it, the oldest
 * entry is dropped and the journal no longer reaches back before it (a takeover then resyncs);
 * `confirm(rv)` drops every entry the watermark `rv` covers; `takeover` changes nothing and returns
 * every recorded change after the watermark, in the order they were last seen, or `resync`
 * with its reason.
 */
import type { ObjectSnapshot } from './snapshot.ts';
import type { Change } from './store.ts';

/** The most entries a stream's journal holds (one per object changed since the leader's last watermark). */
export const JOURNAL_MAX_ENTRIES = 10_000;

/** A resourceVersion as an etcd revision, or undefined when it is not a decimal one. Pure. */
export function revisionOf(resourceVersion: string | undefined): bigint | undefined {
  return resourceVersion !== undefined && /^\d{1,30}$/.test(resourceVersion) ? BigInt(resourceVersion) : undefined;
}

interface Entry {
  /** Every change of the uid journalled so far, as one. */
  readonly change: Change;
  readonly revision: bigint;
  /** The newest change alone, and the revision of the one before it (what a watermark between the two leaves). */
  readonly last: Change;
  readonly previousRevision?: bigint;
}

/** What of `entry` comes after the watermark `through` (it is newer): the newest change alone when the one before it is covered. Pure. */
function after(entry: Entry, through: bigint): Change {
  return entry.previousRevision !== undefined && entry.previousRevision <= through ? entry.last : entry.change;
}

/** What a stream does when its replica takes over. */
export type Takeover =
  /**
   * `gap`: the stream listed after the watermark (a quiet stream's watermark only moves with an
   * event or a bookmark), so the changes between the two came from the store: what was created
   * or modified then is replayed, but a deletion then is not known.
   */
  { readonly action: 'replay'; readonly changes: readonly Change[]; readonly gap: boolean } | { readonly action: 'resync'; readonly reason: string };

export class StandbyJournal {
  readonly #maxEntries: number;
  /** By uid, least recently seen first. */
  readonly #entries = new Map<string, Entry>();
  /** Every change after this revision is journalled (undefined: the journal vouches for nothing). */
  #completeAfter: bigint | undefined;
  /** The cap dropped entries no watermark covered: the journal no longer reaches back to its list. */
  #pruned = false;

  constructor(maxEntries = JOURNAL_MAX_ENTRIES) {
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Every change after this resourceVersion is in the journal; undefined before the stream listed (or after an opaque one). */
  get completeAfter(): bigint | undefined {
    return this.#completeAfter;
  }

  /** The stream listed (at `resourceVersion`): its store holds everything up to it; the journal starts empty there. */
  reset(resourceVersion: string): void {
    this.#entries.clear();
    this.#pruned = false;
    this.#completeAfter = revisionOf(resourceVersion);
  }

  /** A change the stream saw at `resourceVersion` (a watch event's, or the list's for a change a relist found). */
  record(change: Change, resourceVersion: string): void {
    const revision = revisionOf(resourceVersion);
    if (revision === undefined || this.#completeAfter === undefined) {
      this.#entries.clear();
      this.#completeAfter = undefined;
      return;
    }
    const uid = change.current.uid;
    const before = this.#entries.get(uid);
    this.#entries.delete(uid);
    this.#entries.set(
      uid,
      before ? { change: merged(before.change, change), revision, last: change, previousRevision: before.revision } : { change, revision, last: change },
    );
    while (this.#entries.size > this.#maxEntries) {
      const [oldest, entry] = this.#entries.entries().next().value as [string, Entry];
      this.#entries.delete(oldest);
      this.#pruned = true;
      if (entry.revision > this.#completeAfter) this.#completeAfter = entry.revision;
    }
  }

  /** The leader published `resourceVersion` as its watermark: what it covers needs no replay. */
  confirm(resourceVersion: string): void {
    const watermark = revisionOf(resourceVersion);
    if (watermark === undefined || this.#completeAfter === undefined || watermark < this.#completeAfter) return;
    for (const [uid, entry] of this.#entries) {
      if (entry.revision <= watermark) this.#entries.delete(uid);
      else if (entry.previousRevision !== undefined && entry.previousRevision <= watermark)
        this.#entries.set(uid, { change: entry.last, revision: entry.revision, last: entry.last });
    }
    this.#completeAfter = watermark;
    this.#pruned = false;
  }

  /** Empties the journal (this replica leads: it records nothing; `reset` starts it again). */
  clear(): void {
    this.#entries.clear();
    this.#pruned = false;
    this.#completeAfter = undefined;
  }

  /**
   * What the stream does on takeover, given the old leader's watermark for it (undefined: none
   * published) and the stream's store (its live objects). Changes nothing.
   */
  takeover(watermark: string | undefined, stored: () => readonly ObjectSnapshot[] = () => []): Takeover {
    if (watermark === undefined) return { action: 'resync', reason: 'the previous leader published no watermark for this stream' };
    const through = revisionOf(watermark);
    if (through === undefined)
      return { action: 'resync', reason: `the previous leader's watermark is not an etcd revision: ${JSON.stringify(watermark.slice(0, 40))}` };
    if (this.#completeAfter === undefined)
      return { action: 'resync', reason: 'this replica cannot compare what it saw with the watermark (not listed yet, or an opaque resourceVersion)' };
    const changes: Change[] = [];
    const gap = through < this.#completeAfter;
    if (gap) {
      if (this.#pruned)
        return {
          action: 'resync',
          reason: `the journal does not reach back to the previous leader's watermark (${through} < ${this.#completeAfter}: more than ${this.#maxEntries} changes since)`,
        };
      // Listed after the watermark: what the list found changed since it is the store's objects of a later resourceVersion.
      for (const current of stored()) {
        const revision = revisionOf(current.resourceVersion);
        if (revision === undefined) return { action: 'resync', reason: 'an object of the store has a resourceVersion that is not an etcd revision' };
        if (revision > through && !this.#entries.has(current.uid)) changes.push({ type: 'ADDED', current });
      }
    }
    for (const entry of this.#entries.values()) if (entry.revision > through) changes.push(after(entry, through));
    return { action: 'replay', changes, gap };
  }
}

/** Two changes of one uid as one: the first one's `old`, the second's `current`. Pure. */
export function merged(first: Change, second: Change): Change {
  if (second.type === 'DELETED') return first.old ? { type: 'DELETED', old: first.old, current: second.current } : second;
  if (first.type === 'ADDED') return { type: 'ADDED', current: second.current };
  return first.old ? { type: 'MODIFIED', old: first.old, current: second.current } : second;
}

/** The parts of a watch stream the warm standby reads. */
export interface StandbyStream {
  readonly path: string;
  snapshots(): ObjectSnapshot[];
  readonly synced: boolean;
  readonly resyncPending: boolean;
  readonly resourceVersion: string;
}

/** One stream's takeover: `undefined` when the stream has not listed yet (its first list, as the leader's, resyncs by itself). */
export interface StreamTakeover<S extends StandbyStream> {
  readonly stream: S;
  readonly takeover: Takeover | undefined;
}

/**
 * The warm standby of one replica: a journal per stream while it follows, the watermark it
 * publishes while it leads, and the takeover of every stream when it starts leading.
 */
export class WarmStandby {
  readonly #maxEntries: number;
  readonly #journals = new Map<string, StandbyJournal>();
  /** The watermark last published, per stream (kept while the pipeline is not drained). */
  readonly #published = new Map<string, string>();
  #following = true;

  constructor(maxEntries = JOURNAL_MAX_ENTRIES) {
    this.#maxEntries = maxEntries;
  }

  get following(): boolean {
    return this.#following;
  }

  /** Entries over every journal. */
  get journalled(): number {
    let n = 0;
    for (const j of this.#journals.values()) n += j.size;
    return n;
  }

  #journal(path: string): StandbyJournal {
    let journal = this.#journals.get(path);
    if (!journal) this.#journals.set(path, (journal = new StandbyJournal(this.#maxEntries)));
    return journal;
  }

  /** A list of `path` (a first list starts the journal; a relist's changes are journalled at the list's resourceVersion). */
  listed(path: string, result: { readonly first: boolean; readonly changes: readonly Change[]; readonly resourceVersion: string }): void {
    if (!this.#following) return;
    const journal = this.#journal(path);
    if (result.first) journal.reset(result.resourceVersion);
    else for (const change of result.changes) journal.record(change, result.resourceVersion);
  }

  /** A watch event's change of `path`. */
  changed(path: string, change: Change): void {
    if (this.#following) this.#journal(path).record(change, change.current.resourceVersion);
  }

  /** The leader's watermark, read from the Lease by a follower: drops what it covers. */
  confirm(watermark: ReadonlyMap<string, string>): void {
    if (!this.#following) return;
    for (const [path, resourceVersion] of watermark) this.#journals.get(path)?.confirm(resourceVersion);
  }

  /**
   * The watermark to publish while leading. `drained`: nothing this replica saw is waiting to be
   * sent (no window, buffer, batch in flight or resync feed holds a message). Then every stream
   * that listed and has no resync pending (an overflow's, which re-sends what was dropped)
   * advances to the last resourceVersion it saw; otherwise the last published one stands.
   */
  watermark(streams: readonly StandbyStream[], drained: boolean): ReadonlyMap<string, string> {
    if (drained && !this.#following) {
      for (const s of streams) if (s.synced && !s.resyncPending && s.resourceVersion !== '') this.#published.set(s.path, s.resourceVersion);
    }
    return this.#published;
  }

  /**
   * This replica starts leading: each stream's takeover, given the previous leader's watermark;
   * the journals are emptied. Until its own pipeline drains, this replica publishes the previous
   * leader's watermark (still true: that leader forwarded everything through it), so a second
   * failover soon after replays from there instead of resyncing.
   */
  takeover<S extends StandbyStream>(streams: readonly S[], previous: ReadonlyMap<string, string>): StreamTakeover<S>[] {
    this.#following = false;
    this.#published.clear();
    for (const s of streams) {
      const through = previous.get(s.path);
      if (through !== undefined) this.#published.set(s.path, through);
    }
    const plan = streams.map((stream) => ({
      stream,
      takeover: stream.synced ? this.#journal(stream.path).takeover(previous.get(stream.path), () => stream.snapshots()) : undefined,
    }));
    for (const journal of this.#journals.values()) journal.clear();
    return plan;
  }

  /** This replica stopped leading: each stream journals from the last resourceVersion it saw (what it held unsent is the next leader's to replay). */
  follow(streams: readonly StandbyStream[]): void {
    this.#following = true;
    for (const s of streams) {
      const journal = this.#journal(s.path);
      if (s.synced) journal.reset(s.resourceVersion);
      else journal.clear();
    }
  }
}
