/**
 * The production `MessageSender`: `SendMessage` through `@aws-sdk/client-sqs`. The client
 * is created once per process (reused across warm invocations) with the SDK's default
 * configuration chain, so the region, credentials and an endpoint override
 * (`AWS_ENDPOINT_URL_SQS`, e.g. ElasticMQ or the embedded queue) come from the standard
 * AWS environment variables.
 *
 * Failures reject with an error that names the queue and the SDK error, so a log line is
 * enough to see what went wrong.
 */
import { SendMessageCommand, SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { errorMessage } from '../observability/log.ts';
import type { MessageSender, OutgoingMessage } from './sender.ts';

let shared: SQSClient | undefined;

/** The process-wide SQS client (created on first use). */
export function sharedSqsClient(config: SQSClientConfig = {}): SQSClient {
  shared ??= new SQSClient(config);
  return shared;
}

export class QueueSendError extends Error {
  override readonly name = 'QueueSendError';
  readonly queueUrl: string;
  constructor(queueUrl: string, cause: unknown) {
    super(`could not send to queue ${queueUrl}: ${errorMessage(cause)}`, { cause });
    this.queueUrl = queueUrl;
  }
}

export function createSqsSender(client: SQSClient = sharedSqsClient()): MessageSender {
  return {
    async send(queueUrl: string, message: OutgoingMessage): Promise<void> {
      const attributes = message.attributes
        ? Object.fromEntries(Object.entries(message.attributes).map(([k, v]) => [k, { DataType: 'String', StringValue: v }]))
        : undefined;
      try {
        await client.send(new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: message.body,
          ...(message.delaySeconds ? { DelaySeconds: message.delaySeconds } : {}),
          ...(attributes ? { MessageAttributes: attributes } : {}),
        }));
      } catch (err) {
        throw new QueueSendError(queueUrl, err);
      }
    },
  };
}
