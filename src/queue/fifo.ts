/**
 * FIFO work queues (per-key ordering, docs/architecture.md): which message group and which
 * deduplication id an entry carries when its queue is FIFO, decided in one place so that every
 * producer — the forwarder's lanes, the function's follow-ups, the mover, the resync, the CLI —
 * sends the same way through the queue port.
 *
 * - A queue is FIFO exactly when its URL (its name) ends in `.fifo`, as SQS requires.
 * - The group is the object key of the body (`objectKey`), so SQS runs one message of a key at
 *   a time, in order; a key that is not a valid group id (over 128 characters) is replaced by
 *   its SHA-256. A body that is not a reconcile message is a group of its own (its SHA-256), so
 *   poison never blocks a key.
 * - The deduplication id is the entry's own when it names one (the mover's, below), else a
 *   fresh random one: no message is ever merged away unless its producer asked for it. (Not
 *   the body's hash alone: a hand-back or a DLQ redrive sends a body unchanged, and SQS would
 *   drop it as a duplicate of the original for 5 minutes; a duplicate delivery is harmless, a
 *   drop is a loss.)
 * - `moveDeduplicationId`: the mover's id for a follow-up it moves from the delay queue, made
 *   of what the mover can trust — the exact body it moves and its due time (the body's
 *   `notBefore`, else when SQS says it was sent) — never of a value the sender chose: a
 *   message can only be merged with one identical to it, due at the same ms, whose reconcile
 *   is the same; a sender cannot pre-empt another key's, or another body's, follow-up.
 *
 * FIFO queues take no per-message delay: an entry with one is refused before any request.
 * Pure, apart from the random default id.
 */
import { createHash, randomUUID } from 'node:crypto';
import { decodeMessage, objectKey } from '../contract/message.ts';
import type { BatchEntry } from './port.ts';

/** SQS limits of `MessageGroupId` and `MessageDeduplicationId`: 1–128 of these characters. */
const FIFO_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

export function isFifoQueueUrl(queueUrl: string): boolean {
  return queueUrl.endsWith('.fifo');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The group id of an object key: the key itself when SQS accepts it, else its SHA-256. */
export function messageGroupId(key: string): string {
  return FIFO_ID.test(key) ? key : sha256(key);
}

/** The group of a body: its object key's, or a group of its own when it is not a valid message. */
export function bodyGroupId(body: string): string {
  const decoded = decodeMessage(body);
  return decoded.ok ? messageGroupId(objectKey(decoded.message)) : sha256(body);
}

/** `entry` as sent to a FIFO queue: with its group and deduplication id; refuses a delay. */
export function fifoEntry(entry: BatchEntry): BatchEntry & { groupId: string; deduplicationId: string } {
  if (entry.delaySeconds) {
    throw new RangeError(
      `entry ${entry.id}: a FIFO queue takes no per-message delay (DelaySeconds ${entry.delaySeconds}); per-key mode sends delayed follow-ups to the delay queue`,
    );
  }
  return { ...entry, groupId: entry.groupId ?? bodyGroupId(entry.body), deduplicationId: entry.deduplicationId ?? randomUUID() };
}

/**
 * The deduplication id the mover gives a follow-up it moves into the FIFO work queue: the
 * SHA-256 of the exact body and its due time (ms since the epoch). Equal only for the same
 * body due at the same ms — a requeue sent twice for one due time (its `notBefore`), or one
 * delay-queue record moved twice (a redelivery after the move) — so SQS keeps the first and
 * drops the copy, and nothing else is ever merged. Pure.
 */
export function moveDeduplicationId(body: string, dueAt: number): string {
  return sha256(`${dueAt}\n${body}`);
}
