/**
 * Performing a follow-up: a delayed message back to the work queue, or the unchanged body to
 * the DLQ with its reason, error and time as message attributes (contract/dlq.ts). The result
 * is the key's outcome (outcome.ts): acknowledged only once the queue accepted the follow-up;
 * a send that fails is `sendFailed` (logged with the key's logger), so SQS delivers the
 * records again. Never throws.
 *
 * A missing queue URL is a failed send naming the variable to set, not a crash: the records
 * come back and, after maxReceiveCount, reach the DLQ by the queue's redrive policy.
 *
 * Per-key mode (the work queue is FIFO, docs/architecture.md "Per-key ordering"): FIFO takes
 * no per-message delay, so a follow-up with a delay goes to the delay queue
 * (`OPERLESS_DELAY_QUEUE_URL`), where the mover (per-key/mover.ts) moves it into the work queue when
 * due, with a deduplication id the mover derives from the body and its due time (per-key/mover.ts):
 * nothing the sender attaches is trusted there. A requeue is merged by the key's
 * pending-requeue mark (per-key/requeue-merge.ts), which names it by its due time (`notBefore`). A
 * hand-back (no delay) goes straight to the work queue, never merged.
 *
 * A record handed back because its follow-up could not be sent (`sendFailed`: a throttled or
 * unreachable queue) waits a short backoff, not the queue's whole visibility timeout
 * (`shortenRetryWait`: ChangeMessageVisibility to 5 s × 2^(receives − 1), at most 60 s) — in
 * per-key mode the key's FIFO group is held while it waits (361 s by default). Best effort: a
 * failure to change it only leaves the timeout as it was (logged). Crashed and unfinished work
 * keeps the full timeout (an unfinished reconcile may still be running).
 */
import { encodeMessage, type ReconcileMessage } from '../../contract/message.ts';
import type { Ordering } from '../../contract/ordering.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_FAILED_AT, DLQ_ATTRIBUTE_REASON, truncateError, type DlqReason } from '../../contract/dlq.ts';
import { errorMessage, type Logger } from '../../observability/log.ts';
import type { Span } from '@opentelemetry/api';
import type { EntryTrace } from '../../queue/port.ts';
import type { MessageSender } from '../../queue/sender.ts';
import type { FollowUp } from './followup.ts';
import type { SQSRecord } from 'aws-lambda';
import type { Metrics } from './metrics.ts';
import { deliveredOutcome, type KeyOutcome } from './outcome.ts';
import { withFollowUpSpan } from './reconcile-spans.ts';

/** Where follow-ups go and how they are sent. */
export interface DeliveryTarget {
  readonly queueUrl: string | undefined;
  readonly deadLetterQueueUrl: string | undefined;
  /** Per-key mode: the standard queue that holds delayed follow-ups until they are due. */
  readonly delayQueueUrl: string | undefined;
  /** The handler's ordering, resolved once (handler/ordering.ts): per-key sends a delayed follow-up through the delay queue. */
  readonly ordering: Ordering;
  readonly sender: () => Promise<MessageSender>;
  readonly metrics: Metrics;
  readonly now: () => number;
}

/** Sends `followUp` for a key (its raw `body` is what a dead letter carries), in a span under the key's `span` (core/reconcile/reconcile-spans.ts). */
export async function deliver(target: DeliveryTarget, log: Logger, controllerName: string, body: string, followUp: FollowUp, span?: Span): Promise<KeyOutcome> {
  try {
    if (followUp.type === 'send') {
      await withFollowUpSpan('send', span, (trace) => sendFollowUp(target, followUp.message, followUp.delaySeconds, trace));
    } else if (followUp.type === 'deadLetter') {
      await withFollowUpSpan('deadLetter', span, (trace) => sendDeadLetter(target, body, followUp.reason, followUp.error, trace));
      target.metrics.deadLetter(controllerName, followUp.reason);
    }
    return deliveredOutcome(followUp);
  } catch (err) {
    log.error('could not send the follow-up message; the records will be delivered again', {
      followUp: followUp.type,
      error: errorMessage(err),
    });
    return { type: 'sendFailed', followUp: followUp.type, error: errorMessage(err) };
  }
}

/** Sends `message` to the work queue after `delaySeconds` (per-key mode: a delayed one through the delay queue). Throws when it was not accepted. */
export async function sendFollowUp(target: DeliveryTarget, message: ReconcileMessage, delaySeconds: number, trace?: EntryTrace): Promise<void> {
  if (!target.queueUrl) {
    throw new Error('OPERLESS_QUEUE_URL is not set: the function cannot requeue or retry; set it to the work queue URL (serverless.yml does)');
  }
  const sender = await target.sender();
  const body = encodeMessage(message);
  if (delaySeconds === 0 || target.ordering === 'unordered') {
    await sender.send(target.queueUrl, { body, delaySeconds, ...(trace ? { trace } : {}) });
    return;
  }
  if (!target.delayQueueUrl) {
    throw new Error(
      'OPERLESS_DELAY_QUEUE_URL is not set: the work queue is FIFO (per-key ordering), which takes no delayed message; set it to the delay queue URL (serverless.yml does with ordering: per-key)',
    );
  }
  await sender.send(target.delayQueueUrl, { body, delaySeconds, ...(trace ? { trace } : {}) });
}

/** Moves `body`, unchanged, to the DLQ with why. Throws when the DLQ did not accept it. */
export async function sendDeadLetter(target: DeliveryTarget, body: string, reason: DlqReason, error: string, trace?: EntryTrace): Promise<void> {
  if (!target.deadLetterQueueUrl) {
    throw new Error(
      'OPERLESS_DLQ_URL is not set: the function cannot move a failed message to the dead-letter queue; set it to the DLQ URL (serverless.yml does)',
    );
  }
  const sender = await target.sender();
  await sender.send(target.deadLetterQueueUrl, {
    body,
    attributes: {
      [DLQ_ATTRIBUTE_REASON]: reason,
      [DLQ_ATTRIBUTE_ERROR]: truncateError(error),
      [DLQ_ATTRIBUTE_FAILED_AT]: new Date(target.now()).toISOString(),
    },
    ...(trace ? { trace } : {}),
  });
}

/** The longest wait `shortenRetryWait` sets: a minute. */
export const RETRY_VISIBILITY_CAP_SECONDS = 60;

/** The visibility timeout of a record handed back after a failed send, by its receive count: 5, 10, 20, 40, 60, 60… s. Pure. */
export function retryVisibilitySeconds(receiveCount: number): number {
  const n = Number.isFinite(receiveCount) && receiveCount >= 1 ? Math.floor(receiveCount) : 1;
  return Math.min(RETRY_VISIBILITY_CAP_SECONDS, 5 * 2 ** Math.min(n - 1, 10));
}

/**
 * Makes `records` (handed back after a failed send, from the work queue) visible again after
 * `retryVisibilitySeconds` instead of the queue's visibility timeout. Never throws: a sender
 * without the capability, or a refused change (e.g. no `sqs:ChangeMessageVisibility`), leaves
 * the timeout as it was, logged.
 */
export async function shortenRetryWait(target: DeliveryTarget, log: Logger, records: readonly SQSRecord[]): Promise<void> {
  const queueName = target.queueUrl?.split('/').pop();
  // Only records received from the work queue itself (its ARN ends with the queue's name).
  const ours = records.filter((r) => queueName && r.eventSourceARN?.split(':').pop() === queueName);
  if (ours.length === 0 || !target.queueUrl) return;
  try {
    const sender = await target.sender();
    if (!sender.changeVisibility) return;
    const entries = ours.map((r) => ({ receiptHandle: r.receiptHandle, seconds: retryVisibilitySeconds(Number(r.attributes?.ApproximateReceiveCount)) }));
    await sender.changeVisibility(target.queueUrl, entries);
  } catch (err) {
    log.warn("could not shorten the wait of records handed back after a failed send; they come back after the queue's visibility timeout", {
      records: ours.length,
      error: errorMessage(err),
    });
  }
}
