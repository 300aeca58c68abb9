/**
 * The production EventBridge client over the queue port (eventbridge-port.ts), for the
 * forwarder's EventBridge sink: one bus, a client of its own with the same bounded timeouts
 * as the SQS lanes (`sqsRequestHandler`, sender.ts) and `maxAttempts: 1` (the lane owns
 * retries and backoff). The SDK's configuration chain applies: region, credentials (IRSA / EKS
 * Pod Identity) and an endpoint override (`AWS_ENDPOINT_URL_EVENTBRIDGE`, or `endpoint`).
 */
import { DescribeEventBusCommand, EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { QueuePort } from './port.ts';
import { eventBridgePort, type EventBridgeCommands, type EventBusTarget } from './eventbridge-port.ts';
import { DEFAULT_SQS_TIMEOUTS, sqsRequestHandler, type SqsTimeouts } from './sender.ts';

const COMMANDS: EventBridgeCommands = { PutEventsCommand, DescribeEventBusCommand };

export interface EventBusOptions extends EventBusTarget {
  readonly region: string;
  readonly endpoint?: string;
  readonly timeouts?: SqsTimeouts;
  /** A client of the caller's (tests); not destroyed by close(). */
  readonly client?: EventBridgeClient;
}

/** The port of one event bus; `close()` destroys the client made here. */
export function createEventBusPort(options: EventBusOptions): QueuePort {
  const target = { bus: options.bus, source: options.source };
  if (options.client) return eventBridgePort(COMMANDS, options.client, target);
  const client = new EventBridgeClient({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    maxAttempts: 1,
    requestHandler: sqsRequestHandler(options.timeouts ?? DEFAULT_SQS_TIMEOUTS),
  });
  return eventBridgePort(COMMANDS, client, target, () => client.destroy());
}
