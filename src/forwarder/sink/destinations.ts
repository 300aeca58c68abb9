/**
 * Sinks as destinations: where each primary kind's messages go, as one string per lane. An
 * SQS sink's destination is its queue URL; the EventBridge sink's is `eventbridge:<bus>` (the
 * bus name or ARN), one lane for every kind that sends to the bus. Lanes, metrics labels and
 * readiness treat both alike; only the port behind a lane differs (the forwarder makes an SQS
 * or an EventBridge adapter of the one queue port from the destination).
 *
 * Guarantees: pure; a kind whose sink is `eventbridge` never routes to a queue URL, and a kind
 * whose sink is `sqs` never to the bus; `eventBusOf` inverts `eventBusDestination`.
 */
import type { ForwarderConfig } from '../config/config.ts';
import { queueRoutes, type QueueRoutes } from './queues.ts';

const EVENT_BUS_PREFIX = 'eventbridge:';

/** The destination of the bus `bus` (name or ARN). */
export function eventBusDestination(bus: string): string {
  return `${EVENT_BUS_PREFIX}${bus}`;
}

/** The bus of a destination, or undefined for a queue URL. */
export function eventBusOf(destination: string): string | undefined {
  return destination.startsWith(EVENT_BUS_PREFIX) ? destination.slice(EVENT_BUS_PREFIX.length) : undefined;
}

/** The routes of every primary kind to its destination (queueRoutes over queue URLs and the bus). */
export function sinkRoutes(config: Pick<ForwarderConfig, 'queue' | 'watches' | 'sink' | 'eventBus'>): QueueRoutes {
  const bus = config.eventBus.name === undefined ? undefined : eventBusDestination(config.eventBus.name);
  const toBus = (sink: string | undefined) => bus !== undefined && sink === 'eventbridge';
  const watches = config.watches.map((w) => (toBus(w.sink) ? { ...w, queueUrl: bus } : w));
  return queueRoutes(toBus(config.sink) ? bus! : config.queue.url, watches);
}
