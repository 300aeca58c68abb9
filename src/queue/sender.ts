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
 *
 * Timeouts (`sqsRequestHandler`): every SQS client Operless creates — the function's sender,
 * the shared client, the forwarder's lanes — bounds the connection phase
 * (`connectTimeoutMs`) and the wait for an answer (`requestTimeoutMs`: no response headers
 * within it, or a response that then goes silent for that long, fails the request with a
 * `TimeoutError`). Without them the SDK waits up to 15 minutes on a connection that accepts
 * and never answers.
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

export interface SqsTimeouts {
  /** The TCP (and TLS) connection must be up within this many ms. */
  readonly connectTimeoutMs: number;
  /** Response headers must arrive within this many ms, and the response may not stall for longer. */
  readonly requestTimeoutMs: number;
}

/** The defaults of clients Operless creates (the forwarder takes its own from `send.*`). */
export const DEFAULT_SQS_TIMEOUTS: SqsTimeouts = { connectTimeoutMs: 5_000, requestTimeoutMs: 10_000 };

/** The NodeHttpHandler options `sqsRequestHandler` sets (a subset of the SDK's `NodeHttpHandlerOptions`). */
export interface SqsRequestHandlerOptions {
  readonly connectionTimeout: number;
  readonly requestTimeout: number;
  readonly throwOnRequestTimeout: true;
  readonly socketTimeout: number;
}

/**
 * The SDK's `requestHandler` options (NodeHttpHandler, @smithy/node-http-handler) for these
 * timeouts. `requestTimeout` covers the exchange up to the response headers and needs
 * `throwOnRequestTimeout` to fail (without it the SDK only logs); `socketTimeout` (idle)
 * covers a response whose body stalls after the headers. Pure.
 */
export function sqsRequestHandler(timeouts: SqsTimeouts = DEFAULT_SQS_TIMEOUTS): SqsRequestHandlerOptions {
  return {
    connectionTimeout: timeouts.connectTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    throwOnRequestTimeout: true,
    socketTimeout: timeouts.requestTimeoutMs,
  };
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

/**
 * A sender over `client`, or over a default client (with `timeouts`) created on first use;
 * the SDK is imported lazily.
 */
export function lazySqsSender(client?: SQSClient, timeouts: SqsTimeouts = DEFAULT_SQS_TIMEOUTS): MessageSender {
  let ready: Promise<{ sqs: SQSClient; Command: typeof import('@aws-sdk/client-sqs').SendMessageCommand }> | undefined;
  const load = () => {
    ready ??= import('@aws-sdk/client-sqs').then((sdk) => ({ sqs: client ?? new sdk.SQSClient({ requestHandler: sqsRequestHandler(timeouts) }), Command: sdk.SendMessageCommand }));
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
