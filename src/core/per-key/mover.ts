/**
 * `toDelayMoverHandler(options?)`: the mover of per-key mode (docs/architecture.md, "Per-key
 * ordering"). It consumes the delay queue — a standard queue, because FIFO queues take no
 * per-message delay; with an EventBridge bus also the rule's target, since a rule can set only
 * one static FIFO group — and moves each due message into the FIFO work queue, where the
 * queue port groups it by its object key.
 *
 * Guarantees:
 * - The `MessageDeduplicationId` is derived from what the mover can trust, never taken from
 *   the record: the SHA-256 of the exact body it moves and its due time — the body's
 *   `notBefore`, else the record's `SentTimestamp` (set by SQS) — (queue/fifo.ts
 *   `moveDeduplicationId`). So a record moved twice (redelivered after its move) and a requeue
 *   sent twice for one due time become one message, and a message can only ever be merged
 *   with an identical one: whoever can send to the delay queue cannot choose an id that drops
 *   another follow-up (issue 29 item 10; the queue's policy keeps such senders out too). A
 *   record with neither a `notBefore` nor a `SentTimestamp` gets a fresh random id.
 * - A record is acknowledged only once the work queue (or, for a message still short of its
 *   `notBefore`, the delay queue again) accepted it; a failed send returns
 *   the record in `batchItemFailures`, so SQS delivers it again — nothing is lost. A merged
 *   send is accepted by SQS (it answers success and drops it), so merging is not a failure.
 * - The body is moved unchanged; a body that is not a reconcile message is moved too, and
 *   the work queue's function dead-letters it with reason `InvalidMessage` (its own group).
 * - It answers before the invocation's timeout, as the reconcile handler does (invocation/budget.ts
 *   `answerAfterMs`): a move still in flight at the answer deadline (a queue that accepts and
 *   never answers, each send with the SDK's retries) and a move not started by then return
 *   their records in `batchItemFailures`. A timed-out invocation would acknowledge nothing and
 *   move nothing; this one acknowledges what it moved. A cut move the queue still takes is
 *   moved again on redelivery: merged by its deduplication id into the work queue, or due at
 *   the same time from the delay queue — at least once, never lost.
 * - No Kubernetes client: the mover never reads or writes the cluster.
 *
 * Configuration: `OPERLESS_QUEUE_URL` (the FIFO work queue) and `OPERLESS_DELAY_QUEUE_URL`,
 * or the options of the same names; `OPERLESS_CONCURRENCY` bounds the sends in flight;
 * `OPERLESS_MAX_DELAY_SECONDS` (tests only) lowers the longest single re-delay.
 */
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { decodeMessage, displayKey } from '../../contract/message.ts';
import { createLogger, errorMessage, type Logger } from '../../observability/log.ts';
import { moveDeduplicationId } from '../../queue/fifo.ts';
import { lazySqsSender, type MessageSender } from '../../queue/sender.ts';
import { answerAfterMs, resolveReserveMs } from '../invocation/budget.ts';
import { mapBounded } from '../invocation/concurrency.ts';
import { answerDeadline } from '../invocation/deadline.ts';
import { isDue, MAX_DELAY_VARIABLE, resolveMaxDelaySeconds, scheduleUntil } from '../invocation/schedule.ts';

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
  | { readonly to: 'delay'; readonly delaySeconds: number }
);

/**
 * The move of a record at `now`: back to the delay queue while its `notBefore` is ahead, else
 * into the work queue with a deduplication id of its body and due time (module doc). Its
 * message attributes are never read.
 */
export function moveOf(
  record: Pick<SQSRecord, 'body'> & { readonly attributes?: Partial<Pick<SQSRecord['attributes'], 'SentTimestamp'>> },
  now: number,
  maxDelaySeconds?: number,
): Move {
  const decoded = decodeMessage(record.body);
  const notBefore = decoded.ok ? decoded.message.notBefore : undefined;
  const key = decoded.ok ? displayKey(decoded.message) : undefined;
  if (notBefore !== undefined && !isDue(notBefore, now)) {
    const { delaySeconds } = scheduleUntil(notBefore, now, maxDelaySeconds);
    if (delaySeconds > 0) return { key, to: 'delay', delaySeconds };
  }
  const sentAt = Number(record.attributes?.SentTimestamp || Number.NaN);
  const dueAt = notBefore ?? (Number.isSafeInteger(sentAt) && sentAt > 0 ? sentAt : undefined);
  return { key, to: 'work', deduplicationId: dueAt === undefined ? undefined : moveDeduplicationId(record.body, dueAt) };
}

/** Why a move's record was handed back at the answer deadline. */
export class AnswerDeadlineError extends Error {
  constructor(started: boolean) {
    super(started ? "the move was still in flight at the invocation's answer deadline" : "not started: the invocation's answer deadline had passed");
    this.name = 'AnswerDeadlineError';
  }
}

export function toDelayMoverHandler(
  options: MoverOptions = {},
): (event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<SQSBatchResponse> {
  const queueUrl = options.queueUrl ?? (process.env.OPERLESS_QUEUE_URL || undefined);
  const delayQueueUrl = options.delayQueueUrl ?? (process.env.OPERLESS_DELAY_QUEUE_URL || undefined);
  const log = options.log ?? createLogger();
  const now = options.now ?? Date.now;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? (Number(process.env.OPERLESS_CONCURRENCY) || 10)));
  const maxDelaySeconds =
    options.maxDelaySeconds !== undefined
      ? resolveMaxDelaySeconds(options.maxDelaySeconds, 'the maxDelaySeconds option of toDelayMoverHandler')
      : resolveMaxDelaySeconds(process.env[MAX_DELAY_VARIABLE]);
  let sender: MessageSender | undefined;
  const send = () => (sender ??= options.sender ?? lazySqsSender());
  return async (event, context) => {
    const records = event.Records ?? [];
    const moves = records.map((record) => moveOf(record, now(), maxDelaySeconds));
    const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : Number.POSITIVE_INFINITY;
    const deadline = answerDeadline(Number.isFinite(remaining) ? answerAfterMs(remaining, resolveReserveMs(remaining)) : remaining, 'cut' as const);
    const results = await mapBounded(records, concurrency, async (record, index) => {
      if (deadline.passed()) throw new AnswerDeadlineError(false);
      const move = moves[index]!;
      const target = move.to === 'work' ? queueUrl : delayQueueUrl;
      if (!target)
        throw new Error(
          `${move.to === 'work' ? 'OPERLESS_QUEUE_URL' : 'OPERLESS_DELAY_QUEUE_URL'} is not set: the mover cannot move a delayed follow-up; set it (serverless.yml does with ordering: per-key)`,
        );
      const sending =
        move.to === 'work'
          ? send().send(target, { body: record.body, ...(move.deduplicationId ? { deduplicationId: move.deduplicationId } : {}) })
          : send().send(target, { body: record.body, delaySeconds: move.delaySeconds });
      if ((await Promise.race([sending, deadline.reached])) === 'cut') throw new AnswerDeadlineError(true);
      return move;
    });
    deadline.clear();
    const batchItemFailures: { itemIdentifier: string }[] = [];
    results.forEach((result, index) => {
      const record = records[index]!;
      const key = moves[index]!.key;
      if (result.status === 'fulfilled') {
        log.info(result.value.to === 'work' ? 'moved a due follow-up into the work queue' : 'not due yet: back to the delay queue', {
          ...(key ? { key } : {}),
          messageId: record.messageId,
          mergeable: result.value.to === 'work' && result.value.deduplicationId !== undefined,
        });
        return;
      }
      log.error('could not move a delayed follow-up; it will be delivered again', {
        ...(key ? { key } : {}),
        messageId: record.messageId,
        error: errorMessage(result.reason),
      });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    });
    return { batchItemFailures };
  };
}
