/**
 * Queues for local development and tests: the embedded SQS-compatible queue (an in-memory
 * model plus a loopback server speaking the SQS JSON protocol) and the local Lambda runner
 * that consumes a queue the way Lambda's SQS event source mapping does.
 */
export * from './memory-queue.ts';
export * from './memory-queue-server.ts';
export * from './lambda-runner.ts';
