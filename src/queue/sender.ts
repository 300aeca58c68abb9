/**
 * `MessageSender` over SQS for the reconcile runtime: how a function puts a follow-up or a
 * dead-letter message on a queue — the queue port (port.ts) as the runtime sees it, one
 * message to any queue, sent as a batch of one through the SQS adapter (sqs-port.ts).
 *
 * Contract: `send` resolves only once the queue accepted the message, and rejects otherwise
 * (a `QueueSendError` naming the queue) — the handler acknowledges a record only after its
 * follow-up was accepted.
 *
 * `lazySqsSender()` is the handler's default: it imports `@aws-sdk/client-sqs` on the first
 * send (the function bundles carry the client — container images under aws-lambda-ric have no
 * SDK — and a cold start that sends nothing never evaluates it). The SDK's default configuration chain applies, including `AWS_ENDPOINT_URL_SQS`.
 *
 * Timeouts (`sqsRequestHandler`): every SQS client Operless creates — the function's sender,
 * the shared client, the forwarder's lanes — bounds the connection phase
 * (`connectTimeoutMs`) and the wait for an answer (`requestTimeoutMs`: no response headers
 * within it, or a response that then goes silent for that long, fails the request with a
 * `TimeoutError`). Without them the SDK waits up to 15 minutes on a connection that accepts
 * and never answers.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { messageSender, type MessageSender, type QueuePort } from './port.ts';
import { sqsQueuePort } from './sqs-port.ts';

export { QueueSendError, type MessageSender, type OutgoingMessage } from './port.ts';
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

/**
 * A sender over `client`, or over a default client (with `timeouts`) created on first use;
 * the SDK is imported lazily.
 */
export function lazySqsSender(client?: SQSClient, timeouts: SqsTimeouts = DEFAULT_SQS_TIMEOUTS): MessageSender {
  let ready: Promise<(queueUrl: string) => QueuePort> | undefined;
  const load = () => {
    ready ??= import('@aws-sdk/client-sqs').then((sdk) => {
      const sqs = client ?? new sdk.SQSClient({ requestHandler: sqsRequestHandler(timeouts) });
      return (queueUrl: string) => sqsQueuePort(sdk, sqs, queueUrl);
    });
    ready.catch(() => {
      ready = undefined;
    });
    return ready;
  };
  return messageSender(async (queueUrl) => (await load())(queueUrl));
}
