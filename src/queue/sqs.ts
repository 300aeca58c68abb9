/**
 * The production SQS clients over the queue port (port.ts, sqs-port.ts), for code that has
 * the SDK loaded: the forwarder's lanes (`createSqsQueue`: one queue, a client of its own with
 * bounded timeouts), and the `MessageSender` over an explicit `SQSClient` or the process-wide
 * default one (`createSqsSender`: tests, the CLI). The reconcile handler's default sender is
 * `lazySqsSender()` in sender.ts, which defers loading the SDK.
 *
 * Clients created here use the SDK's configuration chain, so the region, credentials and an
 * endpoint override (`AWS_ENDPOINT_URL_SQS`, e.g. ElasticMQ or the embedded queue) come from
 * the standard AWS environment variables (IRSA / EKS Pod Identity in a cluster). They have
 * connection and request timeouts (`DEFAULT_SQS_TIMEOUTS`, sender.ts) unless told otherwise,
 * so a queue that accepts connections and never answers, or stalls mid-response, fails the
 * call with a TimeoutError instead of holding the caller. Send failures reject with a
 * `QueueSendError` naming the queue and the SDK error.
 */
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { SQS_COMMANDS } from './batch-send.ts';
import { messageSender, type MessageSender, type QueuePort } from './port.ts';
import { DEFAULT_SQS_TIMEOUTS, sqsRequestHandler, type SqsTimeouts } from './sender.ts';
import { sqsQueuePort } from './sqs-port.ts';

export { QueueSendError } from './port.ts';

let shared: SQSClient | undefined;

/** The process-wide SQS client (created on first use; `config` applies only then). */
export function sharedSqsClient(config: SQSClientConfig = {}): SQSClient {
  shared ??= new SQSClient({ requestHandler: sqsRequestHandler(), ...config });
  return shared;
}

export function createSqsSender(client: SQSClient = sharedSqsClient()): MessageSender {
  return messageSender((queueUrl) => sqsQueuePort(SQS_COMMANDS, client, queueUrl));
}

export interface SqsQueueOptions {
  readonly queueUrl: string;
  readonly region: string;
  readonly endpoint?: string;
  /** Timeouts of the client created here (default `DEFAULT_SQS_TIMEOUTS`); ignored with `client`. */
  readonly timeouts?: SqsTimeouts;
  /** A client of the caller's (tests); it keeps its own configuration and is not destroyed by close(). */
  readonly client?: SQSClient;
}

/** The port of one queue, on a client of its own (`maxAttempts: 1`: the caller owns retries) that `close()` destroys. */
export function createSqsQueue(options: SqsQueueOptions): QueuePort {
  if (options.client) return sqsQueuePort(SQS_COMMANDS, options.client, options.queueUrl);
  const client = new SQSClient({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    maxAttempts: 1,
    requestHandler: sqsRequestHandler(options.timeouts ?? DEFAULT_SQS_TIMEOUTS),
  });
  return sqsQueuePort(SQS_COMMANDS, client, options.queueUrl, () => client.destroy());
}
