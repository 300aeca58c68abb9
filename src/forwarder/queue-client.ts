/**
 * The forwarder's queue port and its SQS adapter: send up to 10 bodies in one
 * SendMessageBatch, report which entries failed; probe reachability and read the queue's
 * depth (for the backlog estimate, backlog.ts) with GetQueueAttributes. Credentials and endpoint come from the AWS SDK's default chain
 * (IRSA / EKS Pod Identity in a cluster, `AWS_ENDPOINT_URL_SQS` for local brokers).
 *
 * Guarantees: a thrown error means "nothing is known to have been sent" (the caller
 * retries the whole batch); a returned result lists exactly the entries SQS rejected.
 * Every request of the client this adapter creates ends within its timeouts
 * (`send.connectTimeoutMs`, `send.requestTimeoutMs`; sqsRequestHandler in
 * src/queue/sender.ts): a queue that accepts connections and never answers, or stalls
 * mid-response, fails the call with a TimeoutError instead of holding the lane.
 */
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { sendMessageBatch, type EntryFailure } from '../queue/batch-send.ts';
import { DEFAULT_SQS_TIMEOUTS, sqsRequestHandler, type SqsTimeouts } from '../queue/sender.ts';

export type { EntryFailure } from '../queue/batch-send.ts';

export interface QueuePort {
  sendBatch(entries: readonly { id: string; body: string }[]): Promise<{ failed: EntryFailure[] }>;
  /** Resolves when the queue answers; rejects with the reason otherwise. */
  probe(): Promise<void>;
  /** The queue's approximate counts; optional (ports without it never widen the coalescing window). */
  depth?(): Promise<QueueDepth>;
  close?(): void;
}

export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

const DEPTH_ATTRIBUTES = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] as const;

export interface SqsQueueOptions {
  readonly queueUrl: string;
  readonly region: string;
  readonly endpoint?: string;
  /** Timeouts of the client created here (default `DEFAULT_SQS_TIMEOUTS`); ignored with `client`. */
  readonly timeouts?: SqsTimeouts;
  /** A client of the caller's (tests); it keeps its own configuration and is not destroyed by close(). */
  readonly client?: SQSClient;
}

export function createSqsQueue(options: SqsQueueOptions): QueuePort {
  const ownsClient = !options.client;
  const client = options.client ?? new SQSClient({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    maxAttempts: 1, // the sender owns retries and backoff
    requestHandler: sqsRequestHandler(options.timeouts ?? DEFAULT_SQS_TIMEOUTS),
  });
  return {
    sendBatch: (entries) => sendMessageBatch(client, options.queueUrl, entries),
    async probe() {
      await client.send(new GetQueueAttributesCommand({ QueueUrl: options.queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));
    },
    async depth() {
      const out = await client.send(new GetQueueAttributesCommand({ QueueUrl: options.queueUrl, AttributeNames: [...DEPTH_ATTRIBUTES] }));
      const count = (name: (typeof DEPTH_ATTRIBUTES)[number]) => Number(out.Attributes?.[name] ?? 0) || 0;
      return { visible: count('ApproximateNumberOfMessages'), inFlight: count('ApproximateNumberOfMessagesNotVisible'), delayed: count('ApproximateNumberOfMessagesDelayed') };
    },
    close() {
      if (ownsClient) client.destroy();
    },
  };
}
