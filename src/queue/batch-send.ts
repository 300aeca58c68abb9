/**
 * `SendMessageBatch` to one queue with the SDK loaded: up to 10 entries in one request, with
 * the per-entry outcome SQS reports — the queue port's `sendBatch` (sqs-port.ts) for callers
 * that hold an `SQSClient` rather than a port (the scheduled resync, the CLI).
 *
 * Guarantees (the port's, port.ts): a thrown error means "nothing is known to have been sent"
 * (retry the whole batch); a returned result lists exactly the entries SQS rejected, each with
 * whether SQS blames the request (`senderFault`: retrying unchanged will likely fail again).
 */
import { ChangeMessageVisibilityBatchCommand, GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { BatchEntry, EntryFailure } from './port.ts';
import { sqsQueuePort, type SqsCommands } from './sqs-port.ts';

export type { BatchEntry, EntryFailure } from './port.ts';
export { BATCH_LIMIT } from './sqs-port.ts';

/** The SDK's command classes, loaded with this module (see sender.ts for the lazy path). */
export const SQS_COMMANDS: SqsCommands = { SendMessageBatchCommand, GetQueueAttributesCommand, ChangeMessageVisibilityBatchCommand };

export function sendMessageBatch(client: SQSClient, queueUrl: string, entries: readonly BatchEntry[]): Promise<{ failed: EntryFailure[] }> {
  return sqsQueuePort(SQS_COMMANDS, client, queueUrl).sendBatch(entries);
}
