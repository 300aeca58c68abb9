/**
 * The Memcached function as Lambda runs it, in its own process, for the security and soak
 * tests: `startLambdaRunner` consuming the work queue and invoking `functions/memcached.ts`'s
 * handler. The function's configuration comes from the environment, as on Lambda
 * (OPERLESS_*, AWS_*). Every line on stdout is the handler's JSON logs plus one
 * `{"msg":"queue record","body":…}` line per record received, so a test sees every message
 * body that went through the queue.
 *
 *   OPERLESS_TEST_RUNNER='{"queueUrl":…,"endpoint":…,"region":…}' node test/security/function-runner.ts
 *
 * SIGTERM stops polling, waits for in-flight invocations and exits 0.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, Context } from 'aws-lambda';
import { startLambdaRunner } from '../../src/local/lambda-runner.ts';
import { createLogger } from '../../src/observability/log.ts';
import { handler } from '../../functions/memcached.ts';

interface RunnerConfig {
  queueUrl: string;
  endpoint: string;
  region: string;
  maxConcurrency?: number;
}

const raw = process.env.OPERLESS_TEST_RUNNER;
if (!raw) {
  console.error('OPERLESS_TEST_RUNNER is not set: pass the runner configuration as JSON (queueUrl, endpoint, region)');
  process.exit(2);
}
const config = JSON.parse(raw) as RunnerConfig;
const log = createLogger({ level: 'info' });
const sqs = new SQSClient({ endpoint: config.endpoint, region: config.region });
const runner = await startLambdaRunner({
  queueUrl: config.queueUrl,
  sqs,
  handler: async (event: SQSEvent, context: Context) => {
    for (const r of event.Records) process.stdout.write(`${JSON.stringify({ msg: 'queue record', body: r.body })}\n`);
    return handler(event, context);
  },
  functionName: 'memcached',
  batchSize: 10,
  batchWindowSeconds: 1,
  maxConcurrency: config.maxConcurrency ?? 3,
  timeoutSeconds: 30,
  logger: log,
});
log.info('function runner started', { pid: process.pid });
process.on('SIGTERM', () => {
  void runner.stop().then(() => {
    sqs.destroy();
    process.exit(0);
  });
});
