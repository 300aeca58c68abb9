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
 * (`OPERLESS_DELAY_QUEUE_URL`), where the mover (mover.ts) moves it into the work queue when
 * due, with a deduplication id the mover derives from the body and its due time (mover.ts):
 * nothing the sender attaches is trusted there. A requeue is merged by the key's
 * pending-requeue mark (requeue-merge.ts), which names it by its due time (`notBefore`). A
 * hand-back (no delay) goes straight to the work queue, never merged.
 */
import { encodeMessage, objectKey, type ReconcileMessage } from '../contract/message.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_FAILED_AT, DLQ_ATTRIBUTE_REASON, truncateError, type DlqReason } from '../contract/dlq.ts';
import { errorMessage, type Logger } from '../observability/log.ts';
import type { Span } from '@opentelemetry/api';
import type { EntryTrace } from '../queue/port.ts';
import { isFifoQueueUrl } from '../queue/fifo.ts';
import type { MessageSender } from '../queue/sender.ts';
import type { FollowUp } from './followup.ts';
import type { Metrics } from './metrics.ts';
import { deliveredOutcome, type KeyOutcome } from './outcome.ts';
import { withFollowUpSpan } from './trace.ts';

/** Where follow-ups go and how they are sent. */
export interface DeliveryTarget {
  readonly queueUrl: string | undefined;
  readonly deadLetterQueueUrl: string | undefined;
  /** Per-key mode: the standard queue that holds delayed follow-ups until they are due. */
  readonly delayQueueUrl: string | undefined;
  readonly sender: () => Promise<MessageSender>;
  readonly metrics: Metrics;
  readonly now: () => number;
}

/** Sends `followUp` for a key (its raw `body` is what a dead letter carries), in a span under the key's `span` (core/trace.ts). */
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
      followUp: followUp.type, error: errorMessage(err),
    });
    return { type: 'sendFailed', followUp: followUp.type, error: errorMessage(err) };
  }
}

async function sendFollowUp(target: DeliveryTarget, message: ReconcileMessage, delaySeconds: number, trace?: EntryTrace): Promise<void> {
  if (!target.queueUrl) {
    throw new Error('OPERLESS_QUEUE_URL is not set: the function cannot requeue or retry; set it to the work queue URL (serverless.yml does)');
  }
  const sender = await target.sender();
  const body = encodeMessage(message);
  if (delaySeconds === 0 || !isFifoQueueUrl(target.queueUrl)) {
    await sender.send(target.queueUrl, { body, delaySeconds, ...(trace ? { trace } : {}) });
    return;
  }
  if (!target.delayQueueUrl) {
    throw new Error('OPERLESS_DELAY_QUEUE_URL is not set: the work queue is FIFO (per-key ordering), which takes no delayed message; set it to the delay queue URL (serverless.yml does with ordering: per-key)');
  }
  await sender.send(target.delayQueueUrl, { body, delaySeconds, ...(trace ? { trace } : {}) });
}

/** Moves `body`, unchanged, to the DLQ with why. Throws when the DLQ did not accept it. */
export async function sendDeadLetter(target: DeliveryTarget, body: string, reason: DlqReason, error: string, trace?: EntryTrace): Promise<void> {
  if (!target.deadLetterQueueUrl) {
    throw new Error('OPERLESS_DLQ_URL is not set: the function cannot move a failed message to the dead-letter queue; set it to the DLQ URL (serverless.yml does)');
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
