/**
 * The function runner as its own process, so a fault case can SIGKILL it mid-batch the way
 * Lambda kills a crashed or timed-out sandbox: `startLambdaRunner` (src/local/lambda-runner.ts)
 * consuming the work queue and invoking a handler module (the shipped `.mjs` bundle, or a
 * test controller's `.ts`).
 *
 *   FAULTS_RUNNER='{"queueUrl":…,"endpoint":…,"region":…,"module":…}' node test/faults/function-process.ts
 *
 * The function's own configuration comes from the environment, as on Lambda (OPERLESS_*,
 * AWS_*). Every line on stdout is JSON: the handler's logs; per invocation an `invocation
 * started` line (request id, message ids) before the handler runs, an `invocation handled`
 * line once it returned or threw (before the runner deletes anything), and an `invocation`
 * line with its outcome after the deletes. So a process killed between the first two died
 * with a batch in hand: none of those records was deleted. SIGTERM stops polling, waits for
 * in-flight invocations and exits 0.
 *
 * Per-key ordering (`delayQueueUrl` set): the same handler has a second event source, the delay
 * queue, as serverless.yml gives the packaged function (its batches go to the delay mover);
 * that runner's lines are `delay invocation started`, `delay invocation handled` and `delay
 * invocation`, so the lines above stay those of the work queue.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { loadHandler, startLambdaRunner, type SQSHandlerFn } from '../../src/local/lambda-runner.ts';
import { createLogger } from '../../src/observability/log.ts';

export interface FunctionProcessConfig {
  readonly queueUrl: string;
  /** Per-key ordering: the delay queue, consumed by a second runner with the same handler. */
  readonly delayQueueUrl?: string;
  readonly endpoint: string;
  readonly region: string;
  readonly module: string;
  readonly export?: string;
  readonly functionName?: string;
  readonly batchSize?: number;
  readonly batchWindowSeconds?: number;
  readonly maxConcurrency?: number;
  readonly timeoutSeconds?: number;
}

const raw = process.env.FAULTS_RUNNER;
if (!raw) {
  console.error('FAULTS_RUNNER is not set: pass the runner configuration as JSON (queueUrl, endpoint, region, module)');
  process.exit(2);
}
const config = JSON.parse(raw) as FunctionProcessConfig;
const log = createLogger({ level: 'info' });
const sqs = new SQSClient({ endpoint: config.endpoint, region: config.region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
const inner = await loadHandler({ module: config.module, export: config.export ?? 'handler' });
/** The handler, logging each invocation's start and end under `prefix` (`''` or `'delay '`). */
const logged =
  (prefix: string): SQSHandlerFn =>
  async (event, context) => {
    log.info(`${prefix}invocation started`, {
      requestId: context.awsRequestId,
      records: event.Records.length,
      messageIds: event.Records.map((r) => r.messageId),
    });
    try {
      return await inner(event, context);
    } finally {
      log.info(`${prefix}invocation handled`, { requestId: context.awsRequestId });
    }
  };
const start = (queueUrl: string, prefix: string) =>
  startLambdaRunner({
    queueUrl,
    sqs,
    handler: logged(prefix),
    functionName: config.functionName ?? 'faults',
    batchSize: config.batchSize ?? 10,
    batchWindowSeconds: config.batchWindowSeconds ?? 1,
    maxConcurrency: config.maxConcurrency ?? 3,
    timeoutSeconds: config.timeoutSeconds ?? 6,
    logger: log,
    onInvoke: (report) =>
      log.info(`${prefix}invocation`, {
        requestId: report.requestId,
        outcome: report.outcome,
        records: report.records,
        deleted: report.deleted.length,
        retried: report.retried.length,
        durationMs: report.durationMs,
      }),
  });
const runners = [await start(config.queueUrl, ''), ...(config.delayQueueUrl ? [await start(config.delayQueueUrl, 'delay ')] : [])];
log.info('function runner started', { pid: process.pid });
process.on('SIGTERM', () => {
  void Promise.all(runners.map((r) => r.stop())).then(() => {
    sqs.destroy();
    process.exit(0);
  });
});
