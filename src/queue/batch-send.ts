/**
 * `SendMessageBatch` to one queue: up to 10 entries in one request, with the per-entry
 * outcome SQS reports. The one adapter for batched sends — the forwarder's sender, the
 * scheduled resync and the CLI all go through it.
 *
 * Guarantees: a thrown error means "nothing is known to have been sent" (retry the whole
 * batch); a returned result lists exactly the entries SQS rejected, each with whether SQS
 * blames the request (`senderFault`: retrying unchanged will likely fail again).
 */
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** SendMessageBatch accepts at most 10 entries. */
export const BATCH_LIMIT = 10;

export interface BatchEntry {
  /** Unique within the batch: letters, digits, `-` and `_`, at most 80 characters. */
  readonly id: string;
  readonly body: string;
  /** 0–900. */
  readonly delaySeconds?: number;
}

export interface EntryFailure {
  readonly id: string;
  readonly senderFault: boolean;
  readonly code: string;
  readonly message: string;
}

export async function sendMessageBatch(client: SQSClient, queueUrl: string, entries: readonly BatchEntry[]): Promise<{ failed: EntryFailure[] }> {
  if (entries.length === 0) return { failed: [] };
  if (entries.length > BATCH_LIMIT) throw new RangeError(`SendMessageBatch takes at most ${BATCH_LIMIT} entries, got ${entries.length}`);
  const out = await client.send(new SendMessageBatchCommand({
    QueueUrl: queueUrl,
    Entries: entries.map((e) => ({ Id: e.id, MessageBody: e.body, ...(e.delaySeconds ? { DelaySeconds: e.delaySeconds } : {}) })),
  }));
  return {
    failed: (out.Failed ?? []).map((f) => ({
      id: f.Id ?? '',
      senderFault: f.SenderFault === true,
      code: f.Code ?? 'Unknown',
      message: f.Message ?? '',
    })),
  };
}
