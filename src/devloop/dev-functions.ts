/**
 * The project's reconcile functions in the dev loop: loaded in the environment serverless.yml
 * gives them on Lambda, and fed by a local Lambda runner per event source — the work queue,
 * with per-key ordering the delay queue too (the same handler moves its due follow-ups into
 * the FIFO queue: its second event source on Lambda), unordered the bulk queue at a lower
 * concurrency than the work queue's (as serverless.yml's bulkMaximumConcurrency).
 *
 * Guarantees:
 * - Each module is imported with its own queues in OPERLESS_QUEUE_URL/OPERLESS_DLQ_URL (its
 *   handler reads them when the module loads: toSqsHandler); afterwards the first function's stay set.
 * - The `emulator` runtime runs each function under AWS's runtime interface client and Runtime
 *   Interface Emulator with only the OPERLESS_/AWS_ variables and its own queues; every runner
 *   and emulator is registered in `started`, so it stops with the loop.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startLambdaRunner, type LambdaRunner, type SQSHandlerFn } from '../local/lambda-runner.ts';
import { createLogger } from '../observability/log.ts';
import { queueEnvironment } from './dev-queues.ts';
import type { FunctionQueues, QueueTarget } from './dev-queues.ts';
import { importFunction, type LoadedFunction, type ProjectLayout } from './project.ts';
import type { Stoppable } from './started-parts.ts';

export type FunctionRuntime = 'inprocess' | 'emulator';

/** What hosting the functions reads of the loop's options. */
export interface FunctionHostOptions {
  readonly root: string;
  readonly verbose?: boolean;
  readonly runtime?: FunctionRuntime;
}

/**
 * Sets the functions' environment, exactly as serverless.yml gives it on Lambda, and imports
 * each function module with its own queues in OPERLESS_QUEUE_URL/OPERLESS_DLQ_URL (its
 * handler reads them when the module loads: toSqsHandler); the first function's stay set.
 */
export async function loadFunctions(
  options: FunctionHostOptions,
  layout: ProjectLayout,
  queue: QueueTarget,
  cluster: { clusterId: string; kubeconfigPath: string },
): Promise<LoadedFunction[]> {
  Object.assign(process.env, {
    OPERLESS_CLUSTER: cluster.clusterId,
    OPERLESS_KUBECONFIG: cluster.kubeconfigPath,
    AWS_REGION: queue.region,
    OPERLESS_LOG_FORMAT: 'pretty',
    // The loop shows every reconcile: its level wins over one inherited from the shell.
    OPERLESS_LOG_LEVEL: options.verbose ? 'debug' : 'info',
    OPERLESS_METRICS: 'off',
    ...(queue.endpoint ? { AWS_ENDPOINT_URL_SQS: queue.endpoint } : {}),
    ...(queue.endpoint && !process.env.AWS_ACCESS_KEY_ID ? { AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' } : {}),
  });
  const functions: LoadedFunction[] = [];
  for (const entry of layout.functions) {
    const own = queue.byFunction.get(entry.name)!;
    Object.assign(process.env, queueEnvironment(own));
    functions.push(await importFunction(options.root, entry));
  }
  const first = queue.byFunction.get(layout.functions[0]!.name)!;
  Object.assign(process.env, queueEnvironment(first));
  return functions;
}

const RUNNER_CONCURRENCY = 2;
/** The bulk queue's runner: below the work queue's, as serverless.yml's bulkMaximumConcurrency is. */
const BULK_RUNNER_CONCURRENCY = 1;
const RUNNER_TIMEOUT_SECONDS = 30;

/**
 * A local Lambda runner per function and event source: its work queue, and with per-key
 * ordering its delay queue too (the same handler moves the delay queue's due follow-ups),
 * unordered its bulk queue (at `BULK_RUNNER_CONCURRENCY`).
 */
export async function startRunners(
  options: FunctionHostOptions,
  functions: readonly LoadedFunction[],
  queue: QueueTarget,
  started: Stoppable[],
  write: (line: string) => void,
): Promise<void> {
  for (const fn of functions) {
    const queues = queue.byFunction.get(fn.entry.name)!;
    const handler =
      options.runtime === 'emulator'
        ? await emulatorHandler(options, fn, queues, started, write)
        : { module: join(options.root, fn.entry.module), export: fn.entry.exportName };
    const sources = [
      { source: queues.queueUrl, concurrency: RUNNER_CONCURRENCY },
      ...(queues.delayQueueUrl ? [{ source: queues.delayQueueUrl, concurrency: RUNNER_CONCURRENCY }] : []),
      ...(queues.bulkQueueUrl ? [{ source: queues.bulkQueueUrl, concurrency: BULK_RUNNER_CONCURRENCY }] : []),
    ];
    for (const { source, concurrency } of sources) {
      const runner: LambdaRunner = await startLambdaRunner({
        queueUrl: source,
        sqs: queue.sqs,
        handler,
        functionName: fn.entry.name,
        batchSize: 10,
        batchWindowSeconds: 0,
        maxConcurrency: concurrency,
        timeoutSeconds: RUNNER_TIMEOUT_SECONDS,
        logger: createLogger({ format: 'pretty', write, level: options.verbose ? 'debug' : 'info' }),
      });
      started.push({ name: `function ${fn.entry.name} (${source.split('/').pop()})`, stop: () => runner.stop() });
    }
  }
}

/**
 * The function under Lambda's own runtime: a task root holding a one-line module that
 * re-exports the project's handler source as `handler` (Node 24 runs the TypeScript), its
 * environment the one loadFunctions set, with the function's own queues.
 */
async function emulatorHandler(
  options: FunctionHostOptions,
  fn: LoadedFunction,
  queues: FunctionQueues,
  started: Stoppable[],
  write: (line: string) => void,
): Promise<SQSHandlerFn> {
  const { emulatedHandler } = await import('../testing/lambda-emulator.ts');
  const taskRoot = join(options.root, '.operless', 'lambda', fn.entry.name);
  mkdirSync(taskRoot, { recursive: true });
  const source = pathToFileURL(resolve(options.root, fn.entry.module)).href;
  writeFileSync(join(taskRoot, 'index.mjs'), `export { ${fn.entry.exportName} as handler } from ${JSON.stringify(source)};\n`);
  const env = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => (e[0].startsWith('OPERLESS_') || e[0].startsWith('AWS_')) && e[1] !== undefined),
  );
  const emulated = emulatedHandler({
    taskRoot,
    handler: 'index.handler',
    timeoutSeconds: RUNNER_TIMEOUT_SECONDS,
    functionName: fn.entry.name,
    concurrency: RUNNER_CONCURRENCY,
    env: { ...env, ...queueEnvironment(queues), ...(env.AWS_SESSION_TOKEN ? {} : { AWS_SESSION_TOKEN: 'local' }) },
    onOutput: write,
  });
  started.push({ name: `Lambda runtime emulators of ${fn.entry.name}`, stop: () => emulated.stop() });
  return emulated.handler as SQSHandlerFn;
}
