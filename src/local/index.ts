/**
 * `operless/local`: the local stand-ins for AWS, for development and tests — the embedded
 * SQS-compatible queue (an in-memory model plus a loopback server speaking the SQS JSON
 * protocol) and the local Lambda runner that consumes a queue the way Lambda's SQS event
 * source mapping does. This folder (src/local/, with the simulated kubelet of the dev loop)
 * is never imported by production code: the production SQS code is src/queue/.
 */
export * from './memory-queue.ts';
export * from './memory-queue-server.ts';
export * from './lambda-runner.ts';
export * from './lambda-invoke-server.ts';
