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
 * - the baseline: `bench/baseline` (watches + work queue + workers in this process);
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
import { startBaselineController, type BaselineController, type BaselineReconcile } from '../baseline/controller.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { defineController, type Controller } from '../../src/core/controller/controller.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { startForwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import { createKubeClient, type BoundKubeClient } from '../../src/kube/client.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { memcachedController } from '../../src/memcached/controller.ts';
import { POD_LISTING_VARIABLE, type PodListing } from '../../src/memcached/plan.ts';
import { watchesFor } from '../../src/devloop/project.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { loadHandler, startLambdaRunner, type HandlerModule, type LambdaRunner, type SQSHandlerFn } from '../../src/local/lambda-runner.ts';
import { startMemoryQueueServer, type MemoryQueueServer } from '../../src/local/memory-queue-server.ts';
import { startControlPlane, WORKLOAD_CONTROLLERS, type ControlPlane } from '../../src/testing/index.ts';
import { bundleFunctions, copyBundle, ROOT, type BundleResult } from '../../scripts/bundle.ts';
import { scrapeRequestSnapshot, scrapeRequestTotals, type RequestCounts, type RequestSnapshot } from './apiserver-metrics.ts';
import { controllerWatches, startForwarderProcess } from './forwarder-process.ts';
import { processCpuSeconds } from './process.ts';
import type { ClusterSnapshot } from './cluster-cost.ts';
import {
  allCpus,
  CONTROL_PLANE_CPUS,
  findProcess,
  threadCpus,
  OPERATOR_CPUS,
  pinProcess,
  verifyPins,
  type PinnedProcess,
  type Pinning,
  type PinReport,
} from './pinning.ts';
import { startPodSimulatorProcess, type PodSimulatorProcess } from './pod-simulator-process.ts';
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
  /** Whether the control plane and the operator side run on CPUs of their own (bench/lib/pinning.ts). */
  readonly pinning: Pinning;
  /** Starts the simulated kubelet (its own process, pinned with the control plane) unless it runs. */
  startSimulator(): Promise<void>;
  stopSimulator(): Promise<void>;
  /** kube-apiserver's and etcd's CPU seconds so far and the API server's request counters. */
  clusterSnapshot(): Promise<ClusterSnapshot>;
  /**
   * The allowed CPUs of every thread of the control plane's processes, the simulator, the bench
   * process and `others` (the system's own processes), read back from /proc.
   */
  verifyPins(others?: readonly { name: string; pid: number }[]): PinReport[];
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

export async function startBenchEnv(options: { pinning?: Pinning } = {}): Promise<BenchEnv> {
  const pinning = options.pinning ?? 'unpinned';
  const pinned = pinning === 'pinned';
  const workDir = mkdtempSync(join(tmpdir(), 'operless-bench-'));
  // Inside the repository: what a bundle leaves to the runtime (@aws-sdk/client-ssm) resolves from node_modules.
  const bundleDir = join(ROOT, 'bench', '.work', `functions-${process.pid}`);
  const bundles = await bundleFunctions(bundleDir);
  // kube-controller-manager's own client is limited to 20 requests/s by default
  // (--kube-api-qps=20, burst 30): creating N ReplicaSets and pods and writing their status then
  // takes ~N/4 s whatever the controller under test does, and every system converges in the same
  // time (measured: 240 s for N=1000 for all three). Lifted so the controllers are compared.
  // Pinned: the control plane's processes inherit the control plane's CPU from their start (Go
  // sizes its scheduler by the CPUs it may use then); the bench process moves to the operator's CPU after.
  if (pinned) pinProcess(process.pid, CONTROL_PLANE_CPUS);
  else if (threadCpus(process.pid) !== allCpus()) pinProcess(process.pid, allCpus()); // an earlier pinned environment moved it
  const raw = await startControlPlane({ controllers: WORKLOAD_CONTROLLERS, crds: [CRD], controllerManagerArgs: KCM_BENCH_ARGS });
  const controlPlaneProcess = (name: string): number | undefined => findProcess(name, raw.dataDir);
  const pinControlPlane = () => {
    if (!pinned) return;
    for (const name of ['etcd', 'kube-apiserver', 'kube-controller-manager']) {
      const pid = controlPlaneProcess(name);
      if (pid !== undefined) pinProcess(pid, CONTROL_PLANE_CPUS);
    }
  };
  // A controller manager started again later (the API-cost windows pause it) is started by the
  // bench process, on the operator's CPU: it goes back to the control plane's.
  const cp: ControlPlane = {
    ...raw,
    startControllerManager: async () => {
      await raw.startControllerManager();
      pinControlPlane();
    },
  };
  const queues = await startMemoryQueueServer();
  const sqsCounter = await startSqsCounter(queues.endpoint);
  const sqs = new SQSClient({ region: queues.region, endpoint: sqsCounter.endpoint, credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  const admin = createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'bench' });
  let simulator: PodSimulatorProcess | undefined;
  let apiServerPid: number | undefined;
  let etcdPid: number | undefined;
  const cpuOf = (name: 'kube-apiserver' | 'etcd'): number => {
    const cached = name === 'etcd' ? etcdPid : apiServerPid;
    let seconds = cached === undefined ? Number.NaN : processCpuSeconds(cached);
    if (Number.isNaN(seconds)) {
      const pid = controlPlaneProcess(name);
      if (name === 'etcd') etcdPid = pid;
      else apiServerPid = pid;
      seconds = pid === undefined ? Number.NaN : processCpuSeconds(pid);
    }
    return seconds;
  };
  const env: BenchEnv = {
    cp,
    admin,
    queues,
    sqsCounter,
    sqs,
    bundles,
    workDir,
    pinning,
    controller: defineController(memcachedController) as unknown as Controller<KubeObject>,
    async startSimulator() {
      if (simulator) return;
      simulator = await startPodSimulatorProcess(cp.kubeconfigPath);
      if (pinned) pinProcess(simulator.pid, CONTROL_PLANE_CPUS);
    },
    async stopSimulator() {
      await simulator?.stop();
      simulator = undefined;
    },
    async clusterSnapshot() {
      const requests = await scrapeRequestTotals(cp.server, cp.admin.token!, cp.caPem);
      return { at: Date.now(), requests, apiServerCpuSeconds: cpuOf('kube-apiserver'), etcdCpuSeconds: cpuOf('etcd') };
    },
    verifyPins(others = []) {
      const processes: PinnedProcess[] = [
        ...['etcd', 'kube-apiserver', 'kube-controller-manager'].flatMap((name) => {
          const pid = controlPlaneProcess(name);
          return pid === undefined ? [] : [{ name, pid, cpus: CONTROL_PLANE_CPUS }];
        }),
        ...(simulator ? [{ name: 'pod simulator', pid: simulator.pid, cpus: CONTROL_PLANE_CPUS }] : []),
        { name: 'bench process', pid: process.pid, cpus: OPERATOR_CPUS },
        ...others.map((o) => ({ ...o, cpus: OPERATOR_CPUS })),
      ];
      return verifyPins(processes, pinning);
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
  await env.startSimulator();
  if (pinned) pinProcess(process.pid, OPERATOR_CPUS);
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
  /** The system's own processes beside the bench process (controller-runtime's operator, the forwarder's process), for the pinning's read-back. */
  readonly processes?: readonly { readonly name: string; readonly pid: number }[];
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
  /**
   * Unordered: a bulk queue consumed by a runner of its own at this concurrency (serverless.yml's
   * bulkMaximumConcurrency); `enqueue` of `Resync`s and the forwarder's resyncs go there.
   * Absent: no bulk queue, everything on the work queue (as before it existed).
   */
  readonly bulkMaxConcurrency?: number;
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
  /**
   * The Memcached function's pod listing (`OPERLESS_MEMCACHED_POD_LISTING`, src/memcached/plan.ts);
   * absent: the default. `every-change` is the rule before issue 33, for a before/after run.
   */
  readonly podListing?: PodListing;
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
  const bulkQueueUrl = !perKey && options.bulkMaxConcurrency !== undefined ? (await env.createQueue(`bench-${instance}-bulk`, dlqName)).queueUrl : undefined;
  const fn = env.bundles.find((b) => b.name === 'memcached');
  if (!fn) throw new Error(`the function bundles have no "memcached" function (built: ${env.bundles.map((b) => b.name).join(', ')})`);
  // A fresh copy of the bundle (entry and chunks) per instance: its handler reads the environment when imported.
  const module = copyBundle(fn, join(dirname(fn.path), `instance-${instance}`));
  Object.assign(process.env, {
    OPERLESS_QUEUE_URL: queueUrl,
    OPERLESS_DLQ_URL: dlqUrl!,
    OPERLESS_DELAY_QUEUE_URL: delayQueueUrl,
    OPERLESS_BULK_QUEUE_URL: bulkQueueUrl ?? '',
    OPERLESS_CLUSTER: CLUSTER_ID,
    OPERLESS_KUBECONFIG: env.cp.kubeconfigPath,
    OPERLESS_METRICS: 'off',
    OPERLESS_LOG_LEVEL: 'error',
    OPERLESS_CONCURRENCY: String(options.keysPerInvocation),
    [POD_LISTING_VARIABLE]: options.podListing ?? '',
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
    ? await startLambdaRunner({
        queueUrl: delayQueueUrl,
        sqs: env.sqs,
        handler,
        functionName: 'memcached',
        maxConcurrency: 2,
        timeoutSeconds: 30,
        memoryLimitMB: 256,
        logger: silentLogger,
      })
    : undefined;
  // The bulk queue: the same function through a mapping of its own, at its own cap.
  const bulk = bulkQueueUrl
    ? await startLambdaRunner({
        queueUrl: bulkQueueUrl,
        sqs: env.sqs,
        handler,
        functionName: 'memcached',
        batchSize: options.batchSize ?? 10,
        maxConcurrency: options.bulkMaxConcurrency!,
        timeoutSeconds: 30,
        memoryLimitMB: 256,
        logger: silentLogger,
      })
    : undefined;
  const port = createSqsQueue({ queueUrl, region: env.queues.region, client: env.sqs });
  const bulkPort = bulkQueueUrl ? createSqsQueue({ queueUrl: bulkQueueUrl, region: env.queues.region, client: env.sqs }) : port;
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
      workDir: env.workDir,
      kubeconfigPath: env.cp.kubeconfigPath,
      sqsEndpoint: env.sqsCounter.endpoint,
      name: queueName,
      config: { ...forwarderConfig, queue: { url: queueUrl, ...(bulkQueueUrl ? { bulkUrl: bulkQueueUrl } : {}), region: env.queues.region } },
    });
    forwarderPid = proc.pid;
    forwarder = { ready: Promise.resolve(), stop: () => proc.stop() };
  } else if (options.watch !== false) {
    forwarder = startForwarder(
      {
        ...forwarderConfig,
        queue: { url: queueUrl, ...(bulkQueueUrl ? { bulkUrl: bulkQueueUrl } : {}), region: env.queues.region, endpoint: env.sqsCounter.endpoint },
      },
      { kubeConfig: env.cp.kubeConfig, logger: silentLogger, serve: false, queues: (url) => (url === bulkQueueUrl ? bulkPort : port) },
    );
  }
  const label = options.label ?? `Operless (${options.maxConcurrency} invocations × ${options.keysPerInvocation})`;
  return {
    label,
    runner,
    invocations,
    ready: forwarder ? forwarder.ready : Promise.resolve(),
    reconciles: () => runner.stats.recordsDeleted + (bulk?.stats.recordsDeleted ?? 0),
    ...(forwarderPid !== undefined ? { cpuSeconds: () => processCpuSeconds(forwarderPid), processes: [{ name: 'forwarder', pid: forwarderPid }] } : {}),
    async enqueue(namespace, names, reason = 'Resync') {
      // Through the queue port: to a FIFO queue it adds the key's group. Resyncs go where the resync function sends them: the bulk queue, when there is one.
      const target = reason === 'Resync' ? bulkPort : port;
      for (let i = 0; i < names.length; i += 10) {
        const entries = names.slice(i, i + 10).map((name, j) => ({
          id: String(j),
          body: encodeMessage(newMessage({ cluster: CLUSTER_ID, apiVersion: MEMCACHED_KIND.apiVersion, kind: MEMCACHED_KIND.kind, namespace, name }, reason)),
        }));
        const { failed } = await target.sendBatch(entries);
        if (failed.length > 0) throw new Error(`enqueue: ${failed.length} entries rejected: ${failed[0]!.code} ${failed[0]!.message}`);
      }
    },
    async stopWatching() {
      await forwarder?.stop({ graceMs: 2000 });
      forwarder = undefined;
    },
    async stop() {
      await forwarder?.stop({ graceMs: 2000 });
      await Promise.all([runner.stop(), mover?.stop(), bulk?.stop()]);
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
  const out = await env.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
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
    kubeConfig: env.cp.kubeConfig,
    controller: env.controller,
    workers: options.workers,
    namespaces: [options.namespace],
    clusterId: CLUSTER_ID,
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
      baseline = startBaselineController({
        kubeConfig: env.cp.kubeConfig,
        controller: env.controller,
        workers: options.workers,
        namespaces: ['bench-none'],
        clusterId: CLUSTER_ID,
      });
      await baseline.ready;
    },
    async stop() {
      await baseline.stop();
    },
  };
}
