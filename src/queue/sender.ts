/**
 * `MessageSender`: how the runtime puts a message on a queue. One method, so the handler
 * can be driven by the real SQS client (sqs.ts) in production and tests alike.
 *
 * Contract: `send` resolves only once the queue accepted the message, and rejects otherwise
 * — the handler acknowledges a record only after its follow-up was accepted.
 *
 * `lazySqsSender()` is the handler's default: it imports `@aws-sdk/client-sqs` on the first
 * send (the Lambda runtime provides the SDK; a cold start that sends nothing never loads
 * it). The SDK's default configuration chain applies, including `AWS_ENDPOINT_URL_SQS`.
 */
import type { SendMessageCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import { errorMessage } from '../observability/log.ts';

export interface OutgoingMessage {
  readonly body: string;
  /** 0–900. */
  readonly delaySeconds?: number;
  /** String message attributes (DLQ metadata). */
  readonly attributes?: Readonly<Record<string, string>>;
}

export interface MessageSender {
  send(queueUrl: string, message: OutgoingMessage): Promise<void>;
}

export class QueueSendError extends Error {
  override readonly name = 'QueueSendError';
  readonly queueUrl: string;
  constructor(queueUrl: string, cause: unknown) {
    super(`could not send to queue ${queueUrl}: ${errorMessage(cause)}`, { cause });
    this.queueUrl = queueUrl;
  }
}

/** The `SendMessage` input for a message. Pure. */
export function sendMessageInput(queueUrl: string, message: OutgoingMessage): SendMessageCommandInput {
  const attributes = message.attributes
    ? Object.fromEntries(Object.entries(message.attributes).map(([k, v]) => [k, { DataType: 'String', StringValue: v }]))
    : undefined;
  return {
    QueueUrl: queueUrl,
    MessageBody: message.body,
    ...(message.delaySeconds ? { DelaySeconds: message.delaySeconds } : {}),
    ...(attributes ? { MessageAttributes: attributes } : {}),
  };
}

/** A sender over `client`, or over a default client created on first use; the SDK is imported lazily. */
export function lazySqsSender(client?: SQSClient): MessageSender {
  let ready: Promise<{ sqs: SQSClient; Command: typeof import('@aws-sdk/client-sqs').SendMessageCommand }> | undefined;
  const load = () => {
    ready ??= import('@aws-sdk/client-sqs').then((sdk) => ({ sqs: client ?? new sdk.SQSClient({}), Command: sdk.SendMessageCommand }));
    ready.catch(() => { ready = undefined; });
    return ready;
  };
  return {
    async send(queueUrl, message) {
      try {
        const { sqs, Command } = await load();
        await sqs.send(new Command(sendMessageInput(queueUrl, message)));
      } catch (err) {
        throw new QueueSendError(queueUrl, err);
      }
    },
  };
}
