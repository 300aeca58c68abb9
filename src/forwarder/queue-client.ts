/**
 * The forwarder's queue: the one queue port of Operless (src/queue/port.ts) and its SQS
 * adapter (`createSqsQueue`, src/queue/sqs.ts), under the names the forwarder's files import.
 * The forwarder's lanes send SendMessageBatch, probe reachability and read the queue's depth
 * (for the backlog estimate, backlog.ts) through it; its guarantees are the port's.
 */
export { createSqsQueue, type SqsQueueOptions } from '../queue/sqs.ts';
export type { EntryFailure, QueueDepth, QueuePort } from '../queue/port.ts';
