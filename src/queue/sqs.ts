/**
 * The production `MessageSender` over an explicit `SQSClient` (and the process-wide default
 * client), for code that already has the SDK loaded: tests, the resync function. The reconcile
 * handler's default sender is `lazySqsSender()` in sender.ts, which defers loading the SDK.
 *
 * The default client uses the SDK's configuration chain, so the region, credentials and an
 * endpoint override (`AWS_ENDPOINT_URL_SQS`, e.g. ElasticMQ or the embedded queue) come from
 * the standard AWS environment variables. It has connection and request timeouts
 * (`DEFAULT_SQS_TIMEOUTS`, sender.ts) unless the config names its own `requestHandler`.
 * Failures reject with a `QueueSendError` naming the queue and the SDK error.
 */
import { SendMessageCommand, SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { QueueSendError, sendMessageInput, sqsRequestHandler, type MessageSender } from './sender.ts';

export { QueueSendError } from './sender.ts';

let shared: SQSClient | undefined;

/** The process-wide SQS client (created on first use; `config` applies only then). */
export function sharedSqsClient(config: SQSClientConfig = {}): SQSClient {
  shared ??= new SQSClient({ requestHandler: sqsRequestHandler(), ...config });
  return shared;
}

export function createSqsSender(client: SQSClient = sharedSqsClient()): MessageSender {
  return {
    async send(queueUrl, message) {
      try {
        await client.send(new SendMessageCommand(sendMessageInput(queueUrl, message)));
      } catch (err) {
        throw new QueueSendError(queueUrl, err);
      }
    },
  };
}
