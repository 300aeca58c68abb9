/**
 * The resync feed: a resync (every primary of a watch stream, sent as `Resync` — on start, on
 * gaining leadership, after an overflow) as a cursor over the listed objects that a lane feeds
 * into its bounded send buffer as room frees up, instead of pushing every object at once.
 *
 * Why: a resync of more primaries than `buffer.maxMessages` used to overflow the buffer; the
 * overflow dropped the oldest messages and scheduled another full resync once the queue drained,
 * which overflowed again — a loop. Fed through the cursor, a resync of any size holds at most
 * `feedRoom` messages in the buffer at a time; the rest waits as references to the listed
 * snapshots (which the watch stream's store holds anyway), so memory is O(keys) with a small
 * constant and the buffer never overflows because of a resync.
 *
 * Live changes go first: they enter the buffer as before, and the feed only tops the buffer up
 * to a low-water mark (`feedRoom`), so a live change waits behind at most a few batches of
 * resync messages, never behind the whole resync. A live message for a key the resync has not
 * sent yet satisfies that key (`satisfy`): the reconcile it causes reads the live object, which
 * is all a `Resync` asks for, so the feed skips it.
 *
 * Guarantees: pure (no clock, no I/O); every item of a started source is returned by `take`
 * exactly once unless a message for its key was satisfied after the source started, the source
 * was restarted (`start` with the same id: the newer list replaces the older one) or the feed
 * was cleared (leadership lost: the next leader resyncs); items come out in list order, sources
 * in the order they were started; `take(n)` returns fewer than `n` items only when the feed is
 * empty afterwards.
 */
import { MAX_BATCH_ENTRIES } from './buffer.ts';

/** At most this many resync messages wait in a lane's send buffer at a time (a few batches). */
export const RESYNC_AHEAD = 5 * MAX_BATCH_ENTRIES;

/**
 * How many resync messages may join a send buffer holding `buffered` messages now: the buffer is
 * topped up to `min(RESYNC_AHEAD, capacity / 2)` (at least 1), so at least half of it stays free
 * for live changes and a live change waits behind at most `RESYNC_AHEAD` resync messages. Pure.
 */
export function feedRoom(buffered: number, capacity: number): number {
  const lowWater = Math.max(1, Math.min(RESYNC_AHEAD, Math.floor(capacity / 2)));
  return Math.max(0, lowWater - buffered);
}

/** How one source (one stream's resync) ended: what it sent and what live messages covered. */
export interface ResyncSummary {
  readonly id: string;
  readonly listed: number;
  readonly fed: number;
  /** Items skipped because a live message for their key went out after the resync started. */
  readonly satisfied: number;
}

interface Source<M> {
  readonly items: readonly unknown[];
  readonly make: (item: unknown) => M;
  /** Position of the next item. */
  next: number;
  /** The feed's sequence number when the source started (see `satisfy`). */
  readonly since: number;
  fed: number;
  satisfied: number;
}

export class ResyncFeed<M> {
  readonly #keyOf: (message: M) => string;
  readonly #onFinished: ((summary: ResyncSummary) => void) | undefined;
  readonly #sources = new Map<string, Source<M>>();
  /** key → the sequence number of the last live message for it, while any source is pending. */
  readonly #satisfiedAt = new Map<string, number>();
  #seq = 0;
  #pending = 0;

  constructor(keyOf: (message: M) => string, onFinished?: (summary: ResyncSummary) => void) {
    this.#keyOf = keyOf;
    this.#onFinished = onFinished;
  }

  /** Items not taken yet, over every source (an upper bound: some may turn out satisfied). */
  get pending(): number {
    return this.#pending;
  }

  /** Sources (streams) with a resync in progress. */
  get sources(): number {
    return this.#sources.size;
  }

  /**
   * Starts the resync of source `id` over `items`; `make` turns an item into its message when it
   * is taken. A resync of the same source still in progress is replaced (the newer list wins;
   * its items are all due again, live messages seen before now do not satisfy them).
   */
  start<S>(id: string, items: readonly S[], make: (item: S) => M): void {
    this.#drop(id);
    if (items.length === 0) {
      if (this.#sources.size === 0) this.#satisfiedAt.clear();
      return;
    }
    this.#sources.set(id, { items, make: make as (item: unknown) => M, next: 0, since: ++this.#seq, fed: 0, satisfied: 0 });
    this.#pending += items.length;
  }

  /** A message for `key` is on its way by other means (a live change): the resync need not send it. */
  satisfy(key: string): void {
    if (this.#sources.size > 0) this.#satisfiedAt.set(key, ++this.#seq);
  }

  /** Removes and returns up to `max` messages, in list order, skipping satisfied keys. */
  take(max: number): M[] {
    const out: M[] = [];
    for (const [id, source] of this.#sources) {
      while (out.length < max && source.next < source.items.length) {
        const item = source.items[source.next++];
        this.#pending--;
        const message = source.make(item);
        const satisfiedAt = this.#satisfiedAt.get(this.#keyOf(message));
        if (satisfiedAt !== undefined && satisfiedAt > source.since) {
          source.satisfied++;
          continue;
        }
        source.fed++;
        out.push(message);
      }
      if (source.next >= source.items.length) {
        this.#sources.delete(id);
        this.#onFinished?.({ id, listed: source.items.length, fed: source.fed, satisfied: source.satisfied });
      }
      if (out.length >= max) break;
    }
    if (this.#sources.size === 0) this.#satisfiedAt.clear();
    return out;
  }

  /** Forgets every pending resync (leadership lost); returns how many items were pending. */
  clear(): number {
    const n = this.#pending;
    this.#sources.clear();
    this.#satisfiedAt.clear();
    this.#pending = 0;
    return n;
  }

  #drop(id: string): void {
    const source = this.#sources.get(id);
    if (!source) return;
    this.#pending -= source.items.length - source.next;
    this.#sources.delete(id);
  }
}
