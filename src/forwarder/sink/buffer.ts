/**
 * The send buffer: messages waiting for the queue, at most one per object key, in the
 * order their key first became pending. A message for a key already waiting merges into
 * it (see merge.ts) — level-based messages lose nothing by merging, so an outage of any
 * length costs memory proportional to the number of distinct objects changed, not to the
 * number of changes.
 *
 * The bound: when more distinct keys than `maxMessages` are waiting, the OLDEST key is
 * dropped and reported (the caller counts it, marks itself degraded, and schedules a full
 * resync once the queue drains, which re-sends every object).
 *
 * A resync never overflows it: resync messages are fed in as room frees up (resync-feed.ts).
 *
 * Guarantees: pure; `size <= maxMessages` after every operation; a batch taken and then
 * handed back with `putBack` (send failed) regains its place at the front, unless a newer
 * message for the key arrived meanwhile, which then merges with it; `takeBatch` never throws —
 * a message that cannot be encoded (fails the contract's validation; the router should never
 * produce one) leaves the buffer and is reported to `onInvalid`, once, with the reason.
 */
import { encodeMessage, objectKey, type ReconcileMessage } from '../../contract/message.ts';
import { mergeMessages } from '../coalesce/merge.ts';

/** SQS SendMessageBatch: at most 10 entries per call. */
export const MAX_BATCH_ENTRIES = 10;

export interface BatchEntry {
  /** Entry id, unique in its batch (SQS: alphanumeric, - and _, ≤ 80 chars). */
  readonly id: string;
  readonly body: string;
  readonly message: ReconcileMessage;
}

export class SendBuffer {
  readonly #max: number;
  #entries = new Map<string, ReconcileMessage>();

  constructor(maxMessages: number) {
    this.#max = maxMessages;
  }

  get size(): number {
    return this.#entries.size;
  }

  get capacity(): number {
    return this.#max;
  }

  /** Adds a message; returns the messages dropped to stay within the bound (usually none). */
  push(message: ReconcileMessage): ReconcileMessage[] {
    const key = objectKey(message);
    const existing = this.#entries.get(key);
    if (existing) {
      this.#entries.set(key, mergeMessages(existing, message));
      return [];
    }
    this.#entries.set(key, message);
    return this.#trim();
  }

  /** Puts unsent messages back at the front (a failed send), merging with newer arrivals. */
  putBack(messages: readonly ReconcileMessage[]): ReconcileMessage[] {
    if (messages.length === 0) return [];
    const next = new Map<string, ReconcileMessage>();
    for (const m of messages) {
      const key = objectKey(m);
      const prior = next.get(key);
      next.set(key, prior ? mergeMessages(prior, m) : m);
    }
    for (const [key, m] of this.#entries) {
      const older = next.get(key);
      next.set(key, older ? mergeMessages(older, m) : m);
    }
    this.#entries = next;
    return this.#trim();
  }

  /**
   * Removes and returns the next batch: up to 10 entries whose encoded bodies sum to at
   * most `maxBatchBytes` (always at least one entry while valid messages wait). A message
   * that fails to encode is removed and handed to `onInvalid` with the reason instead.
   */
  takeBatch(maxBatchBytes: number, onInvalid: (message: ReconcileMessage, reason: string) => void = () => {}): BatchEntry[] {
    const batch: BatchEntry[] = [];
    let bytes = 0;
    for (const [key, message] of this.#entries) {
      if (batch.length >= MAX_BATCH_ENTRIES) break;
      let body: string;
      try {
        body = encodeMessage(message);
      } catch (err) {
        this.#entries.delete(key);
        onInvalid(message, err instanceof Error ? err.message : String(err));
        continue;
      }
      const size = Buffer.byteLength(body, 'utf8');
      if (batch.length > 0 && bytes + size > maxBatchBytes) break;
      batch.push({ id: `m${batch.length}`, body, message });
      bytes += size;
      this.#entries.delete(key);
    }
    return batch;
  }

  /** Removes everything (leadership lost: the next leader resyncs). */
  clear(): ReconcileMessage[] {
    const all = [...this.#entries.values()];
    this.#entries.clear();
    return all;
  }

  #trim(): ReconcileMessage[] {
    const dropped: ReconcileMessage[] = [];
    for (const [key, m] of this.#entries) {
      if (this.#entries.size <= this.#max) break;
      dropped.push(m);
      this.#entries.delete(key);
    }
    return dropped;
  }
}
