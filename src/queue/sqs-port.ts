/**
 * The queue port (port.ts) over SQS: `SendMessageBatch` for sends, `GetQueueAttributes` for
 * probe and depth, on an `SQSClient` the caller made (its timeouts: sender.ts,
 * `sqsRequestHandler`). The SDK's command classes are passed in, and this module imports the
 * SDK for its types only, so a caller that loads the SDK on first use (the function's
 * sender) keeps it out of its cold start.
 *
 * Guarantees (the port's): a thrown error means "nothing is known to have been sent"; a
 * returned result lists exactly the entries SQS rejected, with SQS's `SenderFault`, code and
 * message; an empty batch sends nothing; more than `BATCH_LIMIT` entries is refused before
 * any request. The adapter never closes a client it was given. A queue whose URL ends in
 * `.fifo` gets each entry's group and deduplication id (fifo.ts): that is SQS's wire format for
 * a FIFO queue (its name says what it is), decided once per port — not the ordering mode, which
 * the function resolves once from its configuration (core/handler/ordering.ts).
 */
import type {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  QueueAttributeName,
  SendMessageBatchCommand,
  SendMessageBatchCommandInput,
  SendMessageBatchCommandOutput,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { TRACEPARENT_ATTRIBUTE } from '../observability/trace-context.ts';
import { fifoEntry, isFifoQueueUrl } from './fifo.ts';
import type { BatchEntry, EntryFailure, QueueDepth, QueuePort } from './port.ts';

/** SendMessageBatch accepts at most 10 entries. */
export const BATCH_LIMIT = 10;

/** The SDK classes the adapter sends (from `@aws-sdk/client-sqs`, loaded by the caller). */
export interface SqsCommands {
  readonly SendMessageBatchCommand: typeof SendMessageBatchCommand;
  readonly GetQueueAttributesCommand: typeof GetQueueAttributesCommand;
  /** Without it the port has no `changeVisibility`. */
  readonly ChangeMessageVisibilityBatchCommand?: typeof ChangeMessageVisibilityBatchCommand;
}

const DEPTH_ATTRIBUTES = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const satisfies readonly QueueAttributeName[];

/**
 * The `SendMessageBatch` input for `entries`: a delay only when non-zero, attributes as
 * strings, the trace context as the `traceparent` attribute and the `AWSTraceHeader` system
 * attribute; to a FIFO queue, each entry's group and deduplication id (fifo.ts, which refuses a
 * delay). `fifo`: the port's, decided once from the queue's name. Pure.
 */
export function batchInput(queueUrl: string, entries: readonly BatchEntry[], fifo: boolean = isFifoQueueUrl(queueUrl)): SendMessageBatchCommandInput {
  return {
    QueueUrl: queueUrl,
    Entries: entries.map((entry) => {
      const e = fifo ? fifoEntry(entry) : entry;
      const attributes = { ...e.attributes, ...(e.trace?.traceparent ? { [TRACEPARENT_ATTRIBUTE]: e.trace.traceparent } : {}) };
      return {
        Id: e.id,
        MessageBody: e.body,
        ...(e.delaySeconds ? { DelaySeconds: e.delaySeconds } : {}),
        ...(Object.keys(attributes).length > 0
          ? { MessageAttributes: Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, { DataType: 'String', StringValue: v }])) }
          : {}),
        ...(e.trace?.awsTraceHeader ? { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: e.trace.awsTraceHeader } } } : {}),
        ...(fifo ? { MessageGroupId: e.groupId, MessageDeduplicationId: e.deduplicationId } : {}),
      };
    }),
  };
}

/** The entries SQS rejected in `output`. Pure. */
export function batchFailures(output: Pick<SendMessageBatchCommandOutput, 'Failed'>): EntryFailure[] {
  return (output.Failed ?? []).map((f) => ({ id: f.Id ?? '', senderFault: f.SenderFault === true, code: f.Code ?? 'Unknown', message: f.Message ?? '' }));
}

/** The port of the queue at `queueUrl` over `client`; `close` runs `onClose` (nothing by default). */
export function sqsQueuePort(sdk: SqsCommands, client: SQSClient, queueUrl: string, onClose?: () => void): QueuePort {
  const fifo = isFifoQueueUrl(queueUrl);
  const attributes = async (names: readonly QueueAttributeName[]): Promise<Partial<Record<string, string>>> =>
    (await client.send(new sdk.GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [...names] }))).Attributes ?? {};
  return {
    async sendBatch(entries) {
      if (entries.length === 0) return { failed: [] };
      if (entries.length > BATCH_LIMIT) throw new RangeError(`SendMessageBatch takes at most ${BATCH_LIMIT} entries, got ${entries.length}`);
      return { failed: batchFailures(await client.send(new sdk.SendMessageBatchCommand(batchInput(queueUrl, entries, fifo)))) };
    },
    async probe() {
      await attributes(['ApproximateNumberOfMessages']);
    },
    async depth(): Promise<QueueDepth> {
      const found = await attributes(DEPTH_ATTRIBUTES);
      const count = (name: (typeof DEPTH_ATTRIBUTES)[number]) => Number(found[name] ?? 0) || 0;
      return {
        visible: count('ApproximateNumberOfMessages'),
        inFlight: count('ApproximateNumberOfMessagesNotVisible'),
        delayed: count('ApproximateNumberOfMessagesDelayed'),
      };
    },
    ...(sdk.ChangeMessageVisibilityBatchCommand ? { changeVisibility: changeVisibilityOver(sdk.ChangeMessageVisibilityBatchCommand, client, queueUrl) } : {}),
    close() {
      onClose?.();
    },
  };
}

/** `changeVisibility` over SQS's ChangeMessageVisibilityBatch: rejects when the request or any entry failed. */
function changeVisibilityOver(
  command: typeof ChangeMessageVisibilityBatchCommand,
  client: SQSClient,
  queueUrl: string,
): NonNullable<QueuePort['changeVisibility']> {
  return async (entries) => {
    if (entries.length === 0) return;
    if (entries.length > BATCH_LIMIT) throw new RangeError(`ChangeMessageVisibilityBatch takes at most ${BATCH_LIMIT} entries, got ${entries.length}`);
    const output = await client.send(
      new command({
        QueueUrl: queueUrl,
        Entries: entries.map((e, i) => ({ Id: `v${i}`, ReceiptHandle: e.receiptHandle, VisibilityTimeout: e.seconds })),
      }),
    );
    const [failed] = output.Failed ?? [];
    if (failed) throw new Error(`ChangeMessageVisibility refused: ${failed.Code}: ${failed.Message ?? ''}`);
  };
}
