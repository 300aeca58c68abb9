/**
 * `toDelayMoverHandler(options?)`: the mover of per-key mode (docs/architecture.md, "Per-key
 * ordering"). It consumes the delay queue — a standard queue, because FIFO queues take no
 * per-message delay — and moves each due follow-up into the FIFO work queue, with the merge
 * id the function gave it (`operless.mergeId`) as `MessageDeduplicationId`, so equal requeues
 * of a key that come due within one bucket become one message: the first moved survives, SQS
 * drops the rest for its 5-minute deduplication window.
 *
 * Guarantees:
 * - A record is acknowledged only once the work queue (or, for a message still short of its
 *   `notBefore`, the delay queue again, with its merge id) accepted it; a failed send returns
 *   the record in `batchItemFailures`, so SQS delivers it again — nothing is lost. A merged
 *   send is accepted by SQS (it answers success and drops it), so merging is not a failure.
 * - The body is moved unchanged; a body that is not a reconcile message is moved too, and
 *   the work queue's function dead-letters it with reason `InvalidMessage` (its own group).
 * - No Kubernetes client: the mover never reads or writes the cluster.
 *
 * Configuration: `OPERLESS_QUEUE_URL` (the FIFO work queue) and `OPERLESS_DELAY_QUEUE_URL`,
 * or the options of the same names; `OPERLESS_CONCURRENCY` bounds the sends in flight;
 * `OPERLESS_MAX_DELAY_SECONDS` (tests only) lowers the longest single re-delay.
 */
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { decodeMessage, displayKey } from '../contract/message.ts';
import { createLogger, errorMessage, type Logger } from '../observability/log.ts';
import { MERGE_ID_ATTRIBUTE } from '../queue/fifo.ts';
import { lazySqsSender, type MessageSender } from '../queue/sender.ts';
import { mapBounded } from './concurrency.ts';
import { isDue, MAX_DELAY_VARIABLE, resolveMaxDelaySeconds, scheduleUntil } from './schedule.ts';

export interface MoverOptions {
  /** The FIFO work queue (default `OPERLESS_QUEUE_URL`). */
  readonly queueUrl?: string;
  /** The delay queue this mover consumes (default `OPERLESS_DELAY_QUEUE_URL`). */
  readonly delayQueueUrl?: string;
  /** Sends in flight at once (default 10). */
  readonly concurrency?: number;
  readonly sender?: MessageSender;
  readonly log?: Logger;
  readonly now?: () => number;
  /** The longest single re-delay (default `OPERLESS_MAX_DELAY_SECONDS` or SQS's 900 s). */
  readonly maxDelaySeconds?: number;
}

/** Where one delay-queue record goes. Pure. */
export type Move = { readonly key: string | undefined } & (
  | { readonly to: 'work'; readonly deduplicationId: string | undefined }
  | { readonly to: 'delay'; readonly delaySeconds: number; readonly mergeId: string | undefined });

/** The move of a record at `now`: back to the delay queue while its `notBefore` is ahead, else into the work queue. */
export function moveOf(record: Pick<SQSRecord, 'body' | 'messageAttributes'>, now: number, maxDelaySeconds?: number): Move {
  const mergeId = record.messageAttributes?.[MERGE_ID_ATTRIBUTE]?.stringValue || undefined;
  const decoded = decodeMessage(record.body);
  const notBefore = decoded.ok ? decoded.message.notBefore : undefined;
  const key = decoded.ok ? displayKey(decoded.message) : undefined;
  if (notBefore !== undefined && !isDue(notBefore, now)) {
    const { delaySeconds } = scheduleUntil(notBefore, now, maxDelaySeconds);
    if (delaySeconds > 0) return { key, to: 'delay', delaySeconds, mergeId };
  }
  return { key, to: 'work', deduplicationId: mergeId };
}

export function toDelayMoverHandler(options: MoverOptions = {}): (event: SQSEvent) => Promise<SQSBatchResponse> {
  const queueUrl = options.queueUrl ?? (process.env.OPERLESS_QUEUE_URL || undefined);
  const delayQueueUrl = options.delayQueueUrl ?? (process.env.OPERLESS_DELAY_QUEUE_URL || undefined);
  const log = options.log ?? createLogger();
  const now = options.now ?? Date.now;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? (Number(process.env.OPERLESS_CONCURRENCY) || 10)));
  const maxDelaySeconds = options.maxDelaySeconds !== undefined
    ? resolveMaxDelaySeconds(options.maxDelaySeconds, 'the maxDelaySeconds option of toDelayMoverHandler')
    : resolveMaxDelaySeconds(process.env[MAX_DELAY_VARIABLE]);
  let sender: MessageSender | undefined;
  const send = () => (sender ??= options.sender ?? lazySqsSender());
  return async (event) => {
    const records = event.Records ?? [];
    const moves = records.map((record) => moveOf(record, now(), maxDelaySeconds));
    const results = await mapBounded(records, concurrency, async (record, index) => {
      const move = moves[index]!;
      const target = move.to === 'work' ? queueUrl : delayQueueUrl;
      if (!target) throw new Error(`${move.to === 'work' ? 'OPERLESS_QUEUE_URL' : 'OPERLESS_DELAY_QUEUE_URL'} is not set: the mover cannot move a delayed follow-up; set it (serverless.yml does with ordering: per-key)`);
      if (move.to === 'work') {
        await send().send(target, { body: record.body, ...(move.deduplicationId ? { deduplicationId: move.deduplicationId } : {}) });
      } else {
        await send().send(target, { body: record.body, delaySeconds: move.delaySeconds, ...(move.mergeId ? { attributes: { [MERGE_ID_ATTRIBUTE]: move.mergeId } } : {}) });
      }
      return move;
    });
    const batchItemFailures: { itemIdentifier: string }[] = [];
    results.forEach((result, index) => {
      const record = records[index]!;
      const key = moves[index]!.key;
      if (result.status === 'fulfilled') {
        log.info(result.value.to === 'work' ? 'moved a due follow-up into the work queue' : 'not due yet: back to the delay queue', {
          ...(key ? { key } : {}), messageId: record.messageId, mergeable: result.value.to === 'work' && result.value.deduplicationId !== undefined,
        });
        return;
      }
      log.error('could not move a delayed follow-up; it will be delivered again', { ...(key ? { key } : {}), messageId: record.messageId, error: errorMessage(result.reason) });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    });
    return { batchItemFailures };
  };
}
