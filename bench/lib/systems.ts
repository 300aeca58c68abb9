/**
 * The two systems under test on one shared environment, started and stopped one after the
 * other:
 *
 * - the environment: a real control plane (etcd + kube-apiserver + kube-controller-manager
 *   with the Deployment/ReplicaSet/GC controllers), the simulated kubelet, the embedded
 *   SQS-compatible queue behind a counting proxy, and the function bundles as shipped
 *   (esbuild, serverless.yml's settings);
 * - Operless: the forwarder (in-process, `startForwarder`; or its bundle as its own process,
 *   `forwarderProcess`) → queue → the local Lambda runner invoking the shipped `.mjs` bundle in
 *   this process;
 * - the baseline: `src/baseline` (watches + work queue + workers in this process);
 * - controller-runtime itself: the Go operator of `bench/controller-runtime`, its own process
 *   (`controller-runtime.ts`).
 *
 * Each system instance watches only its own namespace, so what one side left behind never
 * reaches the other.
 */
import { NAMESPACES } from '../../src/kube/kinds.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SQSClient, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { startBaselineController, type BaselineController, type BaselineReconcile } from '../../src/baseline/controller.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { defineController, type Controller } from '../../src/core/controller.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { startPodSimulator, type PodSimulator } from '../../src/local/pod-simulator.ts';
import { startForwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import { createKubeClient, type BoundKubeClient } from '../../src/kube/client.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { memcachedController } from '../../src/memcached/controller.ts';
import { watchesFor } from '../../src/devloop/project.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { loadHandler, startLambdaRunner, type HandlerModule, type LambdaRunner, type SQSHandlerFn } from '../../src/local/lambda-runner.ts';
import { startMemoryQueueServer, type MemoryQueueServer } from '../../src/local/memory-queue-server.ts';
import { startControlPlane, WORKLOAD_CONTROLLERS, type ControlPlane } from '../../src/testing/index.ts';
import { bundleFunctions, copyBundle, ROOT, type BundleResult } from '../../scripts/bundle.ts';
import { scrapeRequestSnapshot, scrapeRequestTotals, type RequestCounts, type RequestSnapshot } from './apiserver-metrics.ts';
import { controllerWatches, startForwarderProcess } from './forwarder-process.ts';
import { processCpuSeconds } from './process.ts';
import { startSqsCounter, type SqsCounter } from './sqs-counter.ts';

export const CLUSTER_ID = 'bench';
/** The cluster's controllers must not be the bottleneck of the comparison (see startBenchEnv). */
export const KCM_BENCH_ARGS = ['--kube-api-qps=1000', '--kube-api-burst=2000', '--concurrent-deployment-syncs=20', '--concurrent-replicaset-syncs=20'];
export const CRD = join(ROOT, 'infra', 'crds', 'memcacheds.cache.example.com.yaml');
export const MEMCACHED_KIND = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true } as const;

export interface BenchEnv {
  readonly cp: ControlPlane;
  readonly admin: BoundKubeClient;
  readonly queues: MemoryQueueServer;
  readonly sqsCounter: SqsCounter;
  /** An SQS client through the counting proxy. */
  readonly sqs: SQSClient;
  readonly bundles: readonly BundleResult[];
  readonly controller: Controller<KubeObject>;
  readonly workDir: string;
  startSimulator(): void;
  stopSimulator(): Promise<void>;
  apiRequests(): Promise<RequestCounts>;
  /** The API server's request counters, all answers and the 409s alone, from one scrape. */
  apiRequestSnapshot(): Promise<RequestSnapshot>;
  /**
   * Creates a queue (and its DLQ when given); returns URLs whose host is the counting proxy,
   * since the AWS SDK sends to the QueueUrl's host whatever its endpoint says.
   */
  createQueue(name: string, dlq?: string): Promise<{ queueUrl: string; dlqUrl: string | undefined }>;
  /** Creates a namespace (idempotent). */
  namespace(name: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startBenchEnv(): Promise<BenchEnv> {
  const workDir = mkdtempSync(join(tmpdir(), 'operless-bench-'));
  // Inside the repository: what a bundle leaves to the runtime (@aws-sdk/client-ssm) resolves from node_modules.
  const bundleDir = join(ROOT, 'bench', '.work', `functions-${process.pid}`);
  const bundles = await bundleFunctions(bundleDir);
  // kube-controller-manager's own client is limited to 20 requests/s by default
  // (--kube-api-qps=20, burst 30): creating N ReplicaSets and pods and writing their status then
  // takes ~N/4 s whatever the controller under test does, and every system converges in the same
  // time (measured: 240 s for N=1000 for all three). Lifted so the controllers are compared.
  const cp = await startControlPlane({ controllers: WORKLOAD_CONTROLLERS, crds: [CRD], controllerManagerArgs: KCM_BENCH_ARGS });
  const queues = await startMemoryQueueServer();
  const sqsCounter = await startSqsCounter(queues.endpoint);
  const sqs = new SQSClient({ region: queues.region, endpoint: sqsCounter.endpoint, credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  const admin = createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'bench' });
  let simulator: PodSimulator | undefined;
  const env: BenchEnv = {
    cp, admin, queues, sqsCounter, sqs, bundles, workDir,
    controller: defineController(memcachedController) as unknown as Controller<KubeObject>,
    startSimulator() {
      simulator ??= startPodSimulator(createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'bench-kubelet' }), { log: silentLogger, intervalMs: 300 });
    },
    async stopSimulator() {
      await simulator?.stop();
      simulator = undefined;
    },
    apiRequests: () => scrapeRequestTotals(cp.server, cp.admin.token!, cp.caPem),
    apiRequestSnapshot: () => scrapeRequestSnapshot(cp.server, cp.admin.token!, cp.caPem),
    async createQueue(name, dlq) {
      const viaCounter = (url: string) => `${sqsCounter.endpoint}${new URL(url).pathname}`;
      const dlqUrl = dlq ? viaCounter(await queues.createQueue({ name: dlq })) : undefined;
      const queueUrl = viaCounter(await queues.createQueue({ name, visibilityTimeoutSeconds: 60, ...(dlq ? { dlq: { name: dlq, maxReceiveCount: 5 } } : {}) }));
      return { queueUrl, dlqUrl };
    },
    async namespace(name) {
      await admin.apply(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch(async () => {
        await admin.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      });
      return name;
    },
    async stop() {
      await env.stopSimulator();
      sqs.destroy();
      await sqsCounter.stop();
      await queues.stop();
      await cp.stop();
      rmSync(workDir, { recursive: true, force: true });
      rmSync(bundleDir, { recursive: true, force: true });
    },
  };
  env.startSimulator();
  return env;
}

/** What every system under test offers the scenarios. */
export interface SystemUnderTest {
  readonly label: string;
  readonly ready: Promise<void>;
  /** Reconciles finished so far (keys reconciled, not messages). */
  reconciles(): number;
  /** Brings `reconciles()` up to date, for a system counted from another process's metrics. */
  refresh?(): Promise<void>;
  /** Asks for one reconcile of each object, bypassing the watches (API-cost windows). */
  enqueue(namespace: string, names: readonly string[], reason?: 'Resync' | 'Requeue'): Promise<void>;
  /** Pauses the watch stage (API-cost windows); reconciles already queued still run. */
  stopWatching(): Promise<void>;
  /**
   * A system whose periodic resync is its own (controller-runtime's cache): lets that resync
   * reconcile `n` objects while the watch stage is paused. Absent: a resync is an `enqueue` with
   * reason `Resync` (Operless's forwarder sends exactly such messages).
   */
  periodicResync?(n: number, timeoutMs: number): Promise<void>;
  /** CPU seconds used so far by the part of the system that runs in the cluster all the time, when it is its own process. */
  cpuSeconds?(): number;
  stop(): Promise<void>;
}

export interface OperlessOptions {
  readonly namespace: string;
  /** Concurrent invocations (the event source mapping's MaximumConcurrency). */
  readonly maxConcurrency: number;
  /** Keys reconciled at once inside one invocation (OPERLESS_CONCURRENCY). */
  readonly keysPerInvocation: number;
  readonly batchSize?: number;
  readonly coalesceWindowMs?: number;
  /** The forwarder's `coalesceMaxWindowMs` (equal to the window: no widening under a backlog). */
  readonly coalesceMaxWindowMs?: number;
  /** The event source mapping's MaximumBatchingWindowInSeconds (default 0). */
  readonly batchWindowSeconds?: number;
  /**
   * `per-key`: a FIFO work queue by object key and a delay queue whose batches the same
   * handler moves (docs/architecture.md, "Per-key ordering"). Default `unordered`.
   */
  readonly ordering?: 'per-key' | 'unordered';
  /** Start without the forwarder (messages come from `enqueue` only). */
  readonly watch?: boolean;
  /**
   * Run the forwarder as it ships, its bundle as its own process (bench/lib/forwarder-process.ts),
   * instead of in this process: its CPU and memory are then its own. Default false.
   */
  readonly forwarderProcess?: boolean;
  /** Also watch the controller's related kinds (Memcached: ConfigMaps named by `spec.configMapRef.name`), as shipped. */
  readonly related?: boolean;
  readonly label?: string;
  /** Experiments: called after each invocation with its event and when the handler ran. */
  readonly observe?: (event: SQSEvent, startedAt: number, doneAt: number) => void;
}

export interface OperlessSystem extends SystemUnderTest {
  readonly runner: LambdaRunner;
  /** Durations of invocations (ms) and the records each carried. */
  readonly invocations: { durationMs: number; records: number }[];
}

let instance = 0;

export async function startOperless(env: BenchEnv, options: OperlessOptions): Promise<OperlessSystem> {
  instance += 1;
  const perKey = options.ordering === 'per-key';
  const suffix = perKey ? '.fifo' : '';
  const queueName = `bench-${instance}${suffix}`;
  const dlqName = `bench-${instance}-dlq${suffix}`;
  const { queueUrl, dlqUrl } = await env.createQueue(queueName, dlqName);
  const delayQueueUrl = perKey ? (await env.createQueue(`bench-${instance}-delay`)).queueUrl : '';
  const fn = env.bundles.find((b) => b.name === 'memcached');
  if (!fn) throw new Error(`the function bundles have no "memcached" function (built: ${env.bundles.map((b) => b.name).join(', ')})`);
  // A fresh copy of the bundle (entry and chunks) per instance: its handler reads the environment when imported.
  const module = copyBundle(fn, join(dirname(fn.path), `instance-${instance}`));
  Object.assign(process.env, {
    OPERLESS_QUEUE_URL: queueUrl,
    OPERLESS_DLQ_URL: dlqUrl!,
    OPERLESS_DELAY_QUEUE_URL: delayQueueUrl,
    OPERLESS_CLUSTER: CLUSTER_ID,
    OPERLESS_KUBECONFIG: env.cp.kubeconfigPath,
    OPERLESS_METRICS: 'off',
    OPERLESS_LOG_LEVEL: 'error',
    OPERLESS_CONCURRENCY: String(options.keysPerInvocation),
    AWS_REGION: env.queues.region,
    AWS_ENDPOINT_URL_SQS: env.sqsCounter.endpoint,
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
  });
  const invocations: { durationMs: number; records: number }[] = [];
  const observe = options.observe;
  const handler: SQSHandlerFn | HandlerModule = observe ? observed(await loadHandler({ module }), observe) : { module, export: 'handler' };
  const runner = await startLambdaRunner({
    queueUrl,
    sqs: env.sqs,
    handler,
    functionName: 'memcached',
    batchSize: options.batchSize ?? 10,
    batchWindowSeconds: options.batchWindowSeconds ?? 0,
    maxConcurrency: options.maxConcurrency,
    timeoutSeconds: 30,
    memoryLimitMB: 256,
    logger: silentLogger,
    onInvoke: (r) => invocations.push({ durationMs: r.durationMs, records: r.records }),
  });
  // per-key: the same function also consumes the delay queue (it moves due follow-ups).
  const mover = perKey
    ? await startLambdaRunner({ queueUrl: delayQueueUrl, sqs: env.sqs, handler, functionName: 'memcached', maxConcurrency: 2, timeoutSeconds: 30, memoryLimitMB: 256, logger: silentLogger })
    : undefined;
  const port = createSqsQueue({ queueUrl, region: env.queues.region, client: env.sqs });
  let forwarder: { readonly ready: Promise<void>; stop(options?: { graceMs?: number }): Promise<unknown> } | undefined;
  let forwarderPid: number | undefined;
  const forwarderConfig = {
    clusterId: CLUSTER_ID,
    ...controllerWatches(env.controller, options.namespace),
    ...(options.related ? { related: (watchesFor([env.controller]).related ?? []).map((r) => ({ ...r, namespaces: [options.namespace] })) } : {}),
    leaderElection: { enabled: false },
    ...(options.coalesceWindowMs !== undefined ? { coalesceWindowMs: options.coalesceWindowMs } : {}),
    ...(options.coalesceMaxWindowMs !== undefined ? { coalesceMaxWindowMs: options.coalesceMaxWindowMs } : {}),
  };
  if (options.watch !== false && options.forwarderProcess) {
    const proc = await startForwarderProcess({
      workDir: env.workDir, kubeconfigPath: env.cp.kubeconfigPath, sqsEndpoint: env.sqsCounter.endpoint, name: queueName,
      config: { ...forwarderConfig, queue: { url: queueUrl, region: env.queues.region } },
    });
    forwarderPid = proc.pid;
    forwarder = { ready: Promise.resolve(), stop: () => proc.stop() };
  } else if (options.watch !== false) {
    forwarder = startForwarder(
      { ...forwarderConfig, queue: { url: queueUrl, region: env.queues.region, endpoint: env.sqsCounter.endpoint } },
      { kubeConfig: env.cp.kubeConfig, logger: silentLogger, serve: false, queue: createSqsQueue({ queueUrl, region: env.queues.region, client: env.sqs }) },
    );
  }
  const label = options.label ?? `Operless (${options.maxConcurrency} invocations × ${options.keysPerInvocation})`;
  return {
    label,
    runner,
    invocations,
    ready: forwarder ? forwarder.ready : Promise.resolve(),
    reconciles: () => runner.stats.recordsDeleted,
    ...(forwarderPid !== undefined ? { cpuSeconds: () => processCpuSeconds(forwarderPid) } : {}),
    async enqueue(namespace, names, reason = 'Resync') {
      // Through the queue port: to a FIFO queue it adds the key's group.
      for (let i = 0; i < names.length; i += 10) {
        const entries = names.slice(i, i + 10).map((name, j) => ({
          id: String(j),
          body: encodeMessage(newMessage({ cluster: CLUSTER_ID, apiVersion: MEMCACHED_KIND.apiVersion, kind: MEMCACHED_KIND.kind, namespace, name }, reason)),
        }));
        const { failed } = await port.sendBatch(entries);
        if (failed.length > 0) throw new Error(`enqueue: ${failed.length} entries rejected: ${failed[0]!.code} ${failed[0]!.message}`);
      }
    },
    async stopWatching() {
      await forwarder?.stop({ graceMs: 2000 });
      forwarder = undefined;
    },
    async stop() {
      await forwarder?.stop({ graceMs: 2000 });
      await Promise.all([runner.stop(), mover?.stop()]);
    },
  };
}

/** The handler, reporting each invocation's event and timing to `observe`. */
function observed(inner: SQSHandlerFn, observe: NonNullable<OperlessOptions['observe']>): SQSHandlerFn {
  return async (event, context) => {
    const startedAt = Date.now();
    try {
      return await inner(event, context);
    } finally {
      observe(event, startedAt, Date.now());
    }
  };
}

export async function queueDepth(env: BenchEnv, queueUrl: string): Promise<number> {
  const out = await env.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] }));
  const a = out.Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) + Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
}

export interface BaselineSystemOptions {
  readonly namespace: string;
  readonly workers: number;
  /** Experiments: called after each reconcile. */
  readonly onReconcile?: (report: BaselineReconcile) => void;
}

export function startBaseline(env: BenchEnv, options: BaselineSystemOptions): SystemUnderTest & { readonly baseline: BaselineController } {
  let baseline = startBaselineController({
    kubeConfig: env.cp.kubeConfig, controller: env.controller, workers: options.workers, namespaces: [options.namespace], clusterId: CLUSTER_ID,
    ...(options.onReconcile ? { onReconcile: options.onReconcile } : {}),
  });
  return {
    label: `baseline (${options.workers} workers)`,
    baseline,
    ready: baseline.ready,
    reconciles: () => baseline.stats.reconciles,
    async enqueue(namespace, names, reason) {
      for (const name of names) baseline.enqueue({ namespace, name }, reason);
    },
    async stopWatching() {
      // The baseline's watch stage and queue live together: keep the queue, stop the watches
      // by restarting without them is not possible, so stop and start a watch-less twin.
      await baseline.stop();
      baseline = startBaselineController({ kubeConfig: env.cp.kubeConfig, controller: env.controller, workers: options.workers, namespaces: ['bench-none'], clusterId: CLUSTER_ID });
      await baseline.ready;
    },
    async stop() {
      await baseline.stop();
    },
  };
}
