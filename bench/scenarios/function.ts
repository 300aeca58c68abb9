/**
 * The function as shipped: bundle size of each function (esbuild with serverless.yml's
 * settings), and cold start — a fresh Node 24 process importing the `.mjs` and finishing a
 * first reconcile of a converged object — against a warm call in the same process. The
 * bundles are built by scripts/bundle.ts with serverless.yml's `custom.esbuild`, plugins
 * included (src/build/esbuild-plugins.ts), so they are the shipped ones.
 *
 * The same bundle under Lambda's own runtime: AWS's runtime interface client under AWS's
 * Runtime Interface Emulator (src/testing/lambda-emulator.ts), a fresh emulator per run, the
 * same event twice — the runtime's init (`INIT REPORT`), the first invocation's and the second
 * one's `REPORT … Duration`, as Lambda's own log lines give them.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { buildSqsEvent } from '../../src/local/lambda-runner.ts';
import { copyBundle, ROOT, type BundleResult } from '../../scripts/bundle.ts';
import { startLambdaEmulator } from '../../src/testing/lambda-emulator.ts';
import { median } from '../lib/stats.ts';
import { createMemcacheds } from '../lib/objects.ts';
import { CLUSTER_ID, MEMCACHED_KIND, type BenchEnv } from '../lib/systems.ts';
import { startTracker } from '../lib/tracker.ts';

const run = promisify(execFile);

export interface FunctionResult {
  /** Per function: `bytes` what a cold start loads (entry + static chunks), `totalBytes` with the lazy chunks, `files` how many. */
  readonly bundles: { readonly name: string; readonly bytes: number; readonly totalBytes?: number; readonly files?: number }[];
  readonly runs: number;
  readonly bootMs: number;
  readonly importMs: number;
  readonly coldMs: number;
  /** CPU time (user + system) of import + first reconcile: steadier than `coldMs` on a loaded machine. */
  readonly coldCpuMs: number;
  readonly warmMs: number;
  /** Under aws-lambda-ric + aws-lambda-rie (medians over `runs` fresh emulators). */
  readonly lambdaRuntime?: LambdaRuntimeTimings;
}

export interface LambdaRuntimeTimings {
  readonly runs: number;
  /** The runtime's init: the emulator's `INIT REPORT(durationMs)` (Lambda's `Init Duration`). */
  readonly initMs: number;
  /** `REPORT … Duration` of the first invocation (the emulator counts the init inside it). */
  readonly firstInvocationMs: number;
  /** `REPORT … Duration` of the second invocation (warm). */
  readonly warmInvocationMs: number;
}

interface Timing {
  bootMs: number;
  importMs: number;
  coldMs: number;
  coldCpuMs: number;
  warmMs: number;
  failures: number;
}

export async function measureFunction(env: BenchEnv, namespace: string, runs: number): Promise<FunctionResult> {
  await env.namespace(namespace);
  const tracker = await startTracker(env.cp.kubeConfig, namespace);
  const fn = env.bundles.find((b) => b.name === 'memcached')!;
  const event = buildSqsEvent(
    [
      {
        MessageId: 'cold-1',
        ReceiptHandle: 'r',
        Body: encodeMessage(
          newMessage({ cluster: CLUSTER_ID, apiVersion: MEMCACHED_KIND.apiVersion, kind: MEMCACHED_KIND.kind, namespace, name: 'cold' }, 'Resync'),
        ),
        Attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: String(Date.now()),
          ApproximateFirstReceiveTimestamp: String(Date.now()),
          SenderId: 'bench',
        },
      },
    ],
    { eventSourceARN: `arn:aws:sqs:${env.queues.region}:000000000000:bench`, awsRegion: env.queues.region },
  );
  const childEnv = {
    PATH: process.env.PATH,
    OPERLESS_QUEUE_URL: process.env.OPERLESS_QUEUE_URL ?? '',
    OPERLESS_DLQ_URL: process.env.OPERLESS_DLQ_URL ?? '',
    OPERLESS_CLUSTER: CLUSTER_ID,
    OPERLESS_KUBECONFIG: env.cp.kubeconfigPath,
    OPERLESS_METRICS: 'off',
    OPERLESS_LOG_LEVEL: 'error',
    AWS_REGION: env.queues.region,
    AWS_ENDPOINT_URL_SQS: env.sqsCounter.endpoint,
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    // Tracing's cost: run the bench with OTEL_* set (say, OTEL_EXPORTER_OTLP_ENDPOINT) and the function turns the SDK on.
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('OTEL_'))),
  };
  const once = async (): Promise<Timing> => {
    const { stdout } = await run(process.execPath, [join(ROOT, 'bench', 'cold-start-child.ts'), fn.path, JSON.stringify(event)], {
      env: childEnv,
      cwd: env.workDir,
    });
    const line = stdout.trim().split('\n').pop()!;
    return JSON.parse(line) as Timing;
  };
  try {
    await createMemcacheds(env.admin, namespace, ['cold'], 1);
    // Converge the object first (the first runs do the creating work and poll until Available).
    for (let i = 0; i < 30 && tracker.availableCount() < 1; i++) {
      await once();
      await new Promise((r) => setTimeout(r, 1000));
    }
    await once(); // the status now matches: every following run is a steady-state reconcile
    const timings: Timing[] = [];
    for (let i = 0; i < runs; i++) timings.push(await once());
    const failures = timings.reduce((a, t) => a + t.failures, 0);
    if (failures > 0) throw new Error(`the function reported ${failures} failed records during cold-start runs`);
    const lambdaRuntime = await underLambdaRuntime(fn, event, childEnv, runs);
    return {
      lambdaRuntime,
      bundles: env.bundles.map((b) => ({ name: b.name, bytes: b.bytes, totalBytes: b.totalBytes, files: b.files.length })),
      runs,
      bootMs: median(timings.map((t) => t.bootMs)),
      importMs: median(timings.map((t) => t.importMs)),
      coldMs: median(timings.map((t) => t.coldMs)),
      coldCpuMs: median(timings.map((t) => t.coldCpuMs)),
      warmMs: median(timings.map((t) => t.warmMs)),
    };
  } finally {
    await tracker.stop();
  }
}

/** `runs` cold starts of the bundle under aws-lambda-ric + aws-lambda-rie, each invoked twice. */
async function underLambdaRuntime(bundle: BundleResult, event: unknown, env: Record<string, string | undefined>, runs: number): Promise<LambdaRuntimeTimings> {
  const taskRoot = mkdtempSync(join(tmpdir(), 'operless-bench-task-'));
  copyBundle(bundle, join(taskRoot, 'functions'), 'memcached.mjs');
  const functionEnv = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[0] !== 'PATH' && e[1] !== undefined));
  const samples: { init: number; first: number; warm: number }[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const emulator = await startLambdaEmulator({
        taskRoot,
        handler: 'functions/memcached.handler',
        timeoutSeconds: 60,
        functionName: 'memcached',
        env: functionEnv,
      });
      try {
        const first = await emulator.invoke(event);
        const warm = await emulator.invoke(event);
        const failed = [first, warm].find(
          (r) => r.status !== 200 || (r.payload as { batchItemFailures?: unknown[] } | undefined)?.batchItemFailures?.length !== 0,
        );
        if (failed) throw new Error(`under aws-lambda-ric the function answered ${failed.status} ${failed.body.slice(0, 300)}`);
        if (first.runtimeInitMs === undefined || !first.report || !warm.report) throw new Error('the emulator printed no INIT REPORT / REPORT lines');
        samples.push({ init: first.runtimeInitMs, first: first.report.durationMs, warm: warm.report.durationMs });
      } finally {
        await emulator.stop();
      }
    }
  } finally {
    rmSync(taskRoot, { recursive: true, force: true });
  }
  return {
    runs,
    initMs: median(samples.map((x) => x.init)),
    firstInvocationMs: median(samples.map((x) => x.first)),
    warmInvocationMs: median(samples.map((x) => x.warm)),
  };
}
