/**
 * What became of one key's records (or one poison record) in an invocation: a typed outcome
 * per unit of work, folded into the Lambda response in one place (`batchResponse`), the way
 * Powertools' batch processor records a success or failure per record and builds
 * `batchItemFailures` at the end.
 *
 * | outcome        | when                                                              | records           |
 * | -------------- | ----------------------------------------------------------------- | ----------------- |
 * | `acknowledged` | nothing to send (done, object gone)                               | deleted by SQS    |
 * | `sent`         | a requeue, retry, re-delay or hand-back was accepted by the queue | deleted by SQS    |
 * | `deadLettered` | the unchanged body was accepted by the DLQ, with its reason       | deleted by SQS    |
 * | `sendFailed`   | the follow-up or dead letter could not be sent                    | delivered again   |
 * | `crashed`      | an unexpected exception while handling the key                    | delivered again   |
 * | `unfinished`   | the answer deadline came first (follow-up pending, not started)   | delivered again   |
 *
 * Guarantees (pure): a record is acknowledged only when the work it belongs to ended with an
 * acknowledging outcome; a record no outcome covers is reported as a failure, so nothing is
 * lost; failures keep the order of the batch's records, each reported once. From a FIFO queue
 * (records carry `MessageGroupId`), Lambda's rule holds: after a group's first failed record,
 * every later record of that group is reported failed too, so SQS never delivers a group's
 * later message before an earlier one.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { DlqReason } from '../../contract/dlq.ts';
import type { FollowUp, OutcomeLabel } from './followup.ts';

/**
 * What became of one key's records after its attempt and follow-up (acknowledged, a follow-up
 * sent, dead-lettered, a failed send, a crash, unfinished at the deadline): the handler folds
 * these into the batch response, record by record (`batchResponse`).
 */
export type KeyOutcome =
  | { readonly type: 'acknowledged'; readonly label: OutcomeLabel }
  | { readonly type: 'sent'; readonly label: OutcomeLabel; readonly delaySeconds: number }
  | { readonly type: 'deadLettered'; readonly reason: DlqReason }
  | { readonly type: 'sendFailed'; readonly followUp: FollowUp['type']; readonly error: string }
  | { readonly type: 'crashed'; readonly error: string }
  | { readonly type: 'unfinished' };

/** One unit of work's records with what became of them. */
export interface SettledWork {
  readonly records: readonly SQSRecord[];
  readonly outcome: KeyOutcome;
}

/** The outcome the answer deadline gives every piece of work that has not ended. */
export const UNFINISHED: KeyOutcome = Object.freeze({ type: 'unfinished' });

/** The outcome of a follow-up the queue accepted. Pure. */
export function deliveredOutcome(followUp: FollowUp): KeyOutcome {
  switch (followUp.type) {
    case 'none':
      return { type: 'acknowledged', label: followUp.label };
    case 'send':
      return { type: 'sent', label: followUp.label, delaySeconds: followUp.delaySeconds };
    case 'deadLetter':
      return { type: 'deadLettered', reason: followUp.reason };
  }
}

/** Must SQS deliver the records of this outcome again? Pure. */
export function redelivers(outcome: KeyOutcome): boolean {
  switch (outcome.type) {
    case 'acknowledged':
    case 'sent':
    case 'deadLettered':
      return false;
    case 'sendFailed':
    case 'crashed':
    case 'unfinished':
      return true;
  }
}

/**
 * The response for a batch: every record whose work must be delivered again, and every record
 * no settled work covers, in the order of `records`. Pure.
 */
export function batchResponse(records: readonly SQSRecord[], settled: readonly SettledWork[]): SQSBatchResponse {
  const acknowledged = new Set<string>();
  const failed = new Set<string>();
  for (const work of settled) {
    const into = redelivers(work.outcome) ? failed : acknowledged;
    for (const record of work.records) into.add(record.messageId);
  }
  const reported = new Set<string>();
  const failedGroups = new Set<string>();
  const batchItemFailures: { itemIdentifier: string }[] = [];
  for (const { messageId, attributes } of records) {
    if (reported.has(messageId)) continue;
    const group = (attributes as { MessageGroupId?: string } | undefined)?.MessageGroupId;
    const groupFailed = group !== undefined && failedGroups.has(group);
    if (groupFailed || failed.has(messageId) || !acknowledged.has(messageId)) {
      reported.add(messageId);
      if (group !== undefined) failedGroups.add(group);
      batchItemFailures.push({ itemIdentifier: messageId });
    }
  }
  return { batchItemFailures };
}
