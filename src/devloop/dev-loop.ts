/**
 * The whole Operless pipeline on one machine, for `npm start` / `operless dev`:
 *
 *   real kube-apiserver + etcd + controller-manager (or your kubeconfig context)
 *     → forwarder (in-process) → a queue + DLQ per function (embedded SQS-compatible server,
 *       ElasticMQ, or SQS) → a local Lambda runner per function → the project's own function
 *       modules (same code as on Lambda)
 *
 * plus a simulated kubelet (pods become Ready; no container runs) so Deployments report
 * availability; with `traces`, each change's trace printed as a tree (trace-tree.ts); and the
 * project's webhook functions (webhooks.ts in this folder): the API server calls the
 * forwarder's HTTPS endpoint (a test CA), which invokes them through the local Lambda Invoke
 * API. It installs the CRDs and samples, prints what happens as it happens, and
 * writes `.operless/dev.json` so `operless status|enqueue|dlq` in another terminal talk to it.
 *
 * Queues as serverless.yml lays them out: every reconcile function gets its own work queue and
 * DLQ (`operless-dev-<function>`, `…-dlq`), its runner consumes only that queue, its module is
 * loaded with OPERLESS_QUEUE_URL/OPERLESS_DLQ_URL naming them (as its `environment:` does on
 * Lambda), and the forwarder routes each function's primaries (and their owned objects) to it.
 * With `ordering: 'per-key'` (serverless.yml's `ordering` parameter) the work queue and DLQ
 * are FIFO (`….fifo`: message group = object key) and each function also gets a standard delay
 * queue (`…-delay`, with its DLQ) in OPERLESS_DELAY_QUEUE_URL, consumed by a second runner of
 * the same function (its second event source on Lambda), which moves due follow-ups into the
 * FIFO queue.
 *
 * Guarantees: `stop()` stops every component in reverse order of start and leaves no process
 * behind (the control plane's processes are also killed by its exit hooks if this process dies).
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { parseAllDocuments } from 'yaml';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { CUSTOMRESOURCEDEFINITIONS } from '../kube/kinds.ts';
import type { KindRef, KubeObject, Condition } from '../kube/types.ts';
import { createKubeClient, type BoundKubeClient } from '../kube/client.ts';
import { createTransport } from '../kube/transport.ts';
import { startForwarder, type Forwarder } from '../forwarder/forwarder.ts';
import { startLambdaRunner, type LambdaRunner, type SQSHandlerFn } from '../local/lambda-runner.ts';
import { startMemoryQueueServer } from '../local/memory-queue-server.ts';
import { createLogger, errorMessage } from '../observability/log.ts';
import { removeDevState, writeDevState } from './dev-state.ts';
import { functionWatches, importFunction, loadProjectLayout, type LoadedFunction, type ProjectLayout } from './project.ts';
import { startPodSimulator, type PodSimulator } from '../local/pod-simulator.ts';
import { importWebhookFunction, registerWebhooks, startWebhookInvokeApi, webhookObjects, writeTestTls, type WebhookFunction } from './webhooks.ts';
import type { WebhooksConfig } from '../forwarder/config.ts';
import type { Ordering } from '../contract/ordering.ts';

export type BrokerChoice =
  | { readonly type: 'embedded' }
  | { readonly type: 'elasticmq' }
  | { readonly type: 'sqs'; readonly queueUrl: string; readonly dlqUrl: string; readonly region: string };

export interface DevLoopOptions {
  readonly root: string;
  readonly broker: BrokerChoice;
  /** Use this context of the kubeconfig (`kubeconfigPath` or KUBECONFIG) instead of a local control plane. */
  readonly context?: string;
  readonly kubeconfigPath?: string;
  readonly clusterId?: string;
  /** Apply `infra/samples/*.yaml` once everything runs (default true). */
  readonly applySamples?: boolean;
  /** Where human-readable lines go (default stdout). */
  readonly write?: (line: string) => void;
  /** Component logs at debug level (default false: forwarded events and invocations still show). */
  readonly verbose?: boolean;
  /** Run the kube-controller-manager and the pod simulator (local control plane only; default true). */
  readonly simulateWorkloads?: boolean;
  /**
   * Where the functions run: `inprocess` (default: imported into this process, fast) or
   * `emulator` (each in Lambda's own runtime: AWS's runtime interface client under AWS's Runtime
   * Interface Emulator, a process per concurrent invocation, the deadline and init as on Lambda).
   */
  readonly runtime?: FunctionRuntime;
  /**
   * Serve the project's webhook functions (default: only with the loop's own control plane — a
   * cluster reached with `context` usually cannot call back into this machine).
   */
  readonly webhooks?: boolean;
  /**
   * Print each change's trace as a tree (trace-tree.ts): an OpenTelemetry SDK registered in
   * this process sees the forwarder's and the functions' spans (`inprocess` runtime only).
   */
  readonly traces?: boolean;
  /** Queue ordering (default `unordered`): `per-key` gives FIFO work queues and a delay queue per function. */
  readonly ordering?: Ordering;
}

export type FunctionRuntime = 'inprocess' | 'emulator';

/** One function's queues. */
export interface FunctionQueues {
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Per-key ordering: the delay queue (OPERLESS_DELAY_QUEUE_URL). */
  readonly delayQueueUrl?: string;
}

export interface DevLoop {
  readonly kubeconfigPath: string;
  /** The first function's work queue (the default target of the CLI). */
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Every reconcile function's queues, by function name (serverless.yml order). */
  readonly queues: ReadonlyMap<string, FunctionQueues>;
  readonly sqsEndpoint: string | undefined;
  stop(): Promise<void>;
}

interface Stoppable {
  readonly name: string;
  stop(): Promise<unknown>;
}

const QUEUE_PREFIX = 'operless-dev';

/** The local queues of a function, by name. */
export interface DevQueueNames {
  readonly queue: string;
  readonly dlq: string;
  /** Per-key ordering: the standard delay queue and its DLQ. */
  readonly delay?: { readonly queue: string; readonly dlq: string };
}

/**
 * The local queue names of a function: `operless-dev-<function>` and its `-dlq`; with per-key
 * ordering both end in `.fifo`, and the delay queue `…-delay` (with `…-delay-dlq`) is added. Pure.
 */
export function devQueueNames(functionName: string, ordering: Ordering = 'unordered'): DevQueueNames {
  const base = `${QUEUE_PREFIX}-${functionName.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 55)}`;
  if (ordering === 'unordered') return { queue: base, dlq: `${base}-dlq` };
  return { queue: `${base}.fifo`, dlq: `${base}-dlq.fifo`, delay: { queue: `${base}-delay`, dlq: `${base}-delay-dlq` } };
}

export async function startDevLoop(options: DevLoopOptions): Promise<DevLoop> {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const say = (line: string) => write(`» ${line}`);
  const log = createLogger({ format: 'pretty', write, level: options.verbose ? 'debug' : 'info' });
  const started: Stoppable[] = [];
  const stopAll = async () => {
    for (const part of started.reverse()) {
      try {
        await part.stop();
      } catch (err) {
        write(`could not stop ${part.name} cleanly: ${errorMessage(err)}`);
      }
    }
    started.length = 0;
    removeDevState(options.root);
  };

  try {
    if (options.traces) {
      if (options.runtime === 'emulator') throw new Error('--traces needs the inprocess runtime: under the emulator the functions run in processes of their own');
      const { startTracePrinter } = await import('./trace-tree.ts');
      const printer = startTracePrinter(write);
      started.push({ name: 'trace printer', stop: () => printer.stop() });
      say('traces: each change\'s trace is printed as a tree once it goes quiet');
    }
    const layout = loadProjectLayout(options.root);
    const stateDir = join(options.root, '.operless');
    mkdirSync(stateDir, { recursive: true });
    const clusterId = options.clusterId ?? 'dev';

    // 1. A cluster.
    const cluster = await startCluster(options, layout, stateDir, started, say);
    const client = createKubeClient(createTransport(cluster.kubeConfig), { fieldManager: 'operless-dev' });
    if (!cluster.local) await applyFiles(client, layout.crds, [], say, options.root);

    // 2. A queue and DLQ per function.
    const queue = await startQueue(options.broker, layout.functions.map((f) => f.name), options.ordering ?? 'unordered', started, say);
    const queuesOf = (name: string): FunctionQueues => queue.byFunction.get(name)!;
    const first = queuesOf(layout.functions[0]!.name);

    // 3. The functions, loaded in the environment serverless.yml gives them on Lambda.
    const functions = await loadFunctions(options, layout, queue, { clusterId, kubeconfigPath: cluster.kubeconfigPath });
    const controllers = functions.flatMap((f) => f.controllers);

    // 3b. The webhook functions behind the local Lambda Invoke API, with a test CA.
    const webhooks = await startWebhookFunctions(options, layout, cluster.local, stateDir, started, say);

    // 4. A simulated kubelet, so Deployments become available without containers.
    if (cluster.local && options.simulateWorkloads !== false) {
      const simulator: PodSimulator = startPodSimulator(client.with({ fieldManager: 'operless-dev-kubelet' }), { log: log.child({ component: 'kubelet-sim' }) });
      started.push({ name: 'pod simulator', stop: () => simulator.stop() });
    }

    // 5. The forwarder, watching what the controllers reconcile and own.
    const forwarder = await startDevForwarder(clusterId, cluster.kubeConfig, queue, functions, write, webhooks?.config);
    started.push({ name: 'forwarder', stop: () => forwarder.stop({ graceMs: 5000 }) });
    await forwarder.ready;
    if (webhooks && forwarder.webhookUrl) {
      const objects = webhookObjects(webhooks.functions, layout.crds, forwarder.webhookUrl, webhooks.caBundle, 'kube-system');
      const registered = await registerWebhooks(client, objects, layout.crds);
      if (!cluster.local) started.push({ name: 'webhook configurations', stop: () => registered.unregister() });
      say(`webhooks served at ${forwarder.webhookUrl} (test CA ${relative(options.root, webhooks.caFile)}): ${objects.map((o) => `${o.kind} ${o.metadata.name}`).join(', ')}`);
    }

    // 6. The functions, consumed the way Lambda's event source mapping does.
    await startRunners(options, functions, queue, started, write);
    say(`functions running: ${functions.map((f) => `${f.entry.name} (${f.entry.module}, queue ${queuesOf(f.entry.name).queueUrl})`).join(', ')}`);

    // 7. Status changes as they happen.
    const watcher = watchStatuses(client, controllers.map((c) => c.kind), write);
    started.push({ name: 'status watcher', stop: () => watcher.stop() });

    writeDevState({
      pid: process.pid, kubeconfigPath: cluster.kubeconfigPath, sqsEndpoint: queue.endpoint ?? '', region: queue.region,
      queueUrl: first.queueUrl, dlqUrl: first.dlqUrl, cluster: clusterId, ...(forwarder.url ? { forwarderUrl: forwarder.url } : {}),
      functions: Object.fromEntries(functions.map((f) => [f.entry.name, { ...queuesOf(f.entry.name), kinds: f.controllers.map((c) => c.kind.kind) }])),
    }, options.root);

    if (options.applySamples !== false) {
      const known = controllers.flatMap((c) => [c.kind, ...(c.spec.owns ?? []), ...(c.spec.watches ?? []).map((w) => w.kind)]);
      await applyFiles(client, layout.samples, known, say, options.root);
    }

    sayHowToUse(say, cluster.kubeconfigPath, controllers[0]?.kind.kind);
    return { kubeconfigPath: cluster.kubeconfigPath, queueUrl: first.queueUrl, dlqUrl: first.dlqUrl, queues: queue.byFunction, sqsEndpoint: queue.endpoint, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

interface DevCluster {
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  /** True when the loop started its own control plane (no `--context`). */
  readonly local: boolean;
}

/** A local control plane (its kubeconfig copied into `.operless/`), or the chosen context of a kubeconfig. */
async function startCluster(options: DevLoopOptions, layout: ProjectLayout, stateDir: string, started: Stoppable[], say: (line: string) => void): Promise<DevCluster> {
  const kubeconfigPath = join(stateDir, 'kubeconfig');
  if (options.context === undefined) {
    say('starting a local control plane: etcd, kube-apiserver, kube-controller-manager (first run builds them from Go modules)');
    const { startControlPlane, WORKLOAD_CONTROLLERS } = await import('../testing/index.ts');
    const t0 = Date.now();
    const plane = await startControlPlane({
      controllers: options.simulateWorkloads === false ? true : WORKLOAD_CONTROLLERS,
      crds: layout.crds,
    });
    started.push({ name: 'control plane', stop: () => plane.stop() });
    copyFileSync(plane.kubeconfigPath, kubeconfigPath);
    say(`control plane ready in ${((Date.now() - t0) / 1000).toFixed(1)} s at ${plane.server}`);
    return { kubeconfigPath, kubeConfig: plane.kubeConfig, local: true };
  }
  const kubeConfig = new KubeConfig();
  if (options.kubeconfigPath) kubeConfig.loadFromFile(options.kubeconfigPath);
  else kubeConfig.loadFromDefault();
  if (!kubeConfig.getContextObject(options.context)) {
    throw new Error(`kubeconfig has no context "${options.context}" (contexts: ${kubeConfig.getContexts().map((c) => c.name).join(', ') || 'none'})`);
  }
  kubeConfig.setCurrentContext(options.context);
  writeFileSync(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
  say(`using context "${options.context}" (${kubeConfig.getCurrentCluster()?.server})`);
  return { kubeconfigPath, kubeConfig, local: false };
}

/**
 * Sets the functions' environment, exactly as serverless.yml gives it on Lambda, and imports
 * each function module with its own queues in OPERLESS_QUEUE_URL/OPERLESS_DLQ_URL (its
 * handler reads them when the module loads: toSqsHandler); the first function's stay set.
 */
async function loadFunctions(options: DevLoopOptions, layout: ProjectLayout, queue: QueueTarget, cluster: { clusterId: string; kubeconfigPath: string }): Promise<LoadedFunction[]> {
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

/** The forwarder in-process: each function's primaries (and what they own) routed to its queue. */
function startDevForwarder(clusterId: string, kubeConfig: KubeConfig, queue: QueueTarget, functions: readonly LoadedFunction[], write: (line: string) => void, webhooks: Partial<WebhooksConfig> | undefined): Forwarder {
  const queueUrlOf = (fn: LoadedFunction) => queue.byFunction.get(fn.entry.name)!.queueUrl;
  return startForwarder(
    {
      clusterId,
      queue: { url: queueUrlOf(functions[0]!), region: queue.region, ...(queue.endpoint ? { endpoint: queue.endpoint } : {}) },
      ...functionWatches(functions.map((f) => ({ controllers: f.controllers, queueUrl: queueUrlOf(f) }))),
      leaderElection: { enabled: false },
      server: { port: 0, host: '127.0.0.1' },
      coalesceWindowMs: 100,
      ...(webhooks ? { webhooks } : {}),
    },
    { kubeConfig, logger: createLogger({ format: 'pretty', write, level: 'debug' }) },
  );
}

/** The webhooks' function timeout locally: serverless.yml's 9 s (below the webhooks' timeoutSeconds 10). */
const WEBHOOK_TIMEOUT_SECONDS = 9;

interface DevWebhooks {
  readonly functions: readonly WebhookFunction[];
  readonly config: Partial<WebhooksConfig>;
  readonly caBundle: string;
  readonly caFile: string;
}

/** Imports the webhook functions and serves them on the local Invoke API; undefined when there are none or they are off. */
async function startWebhookFunctions(options: DevLoopOptions, layout: ProjectLayout, local: boolean, stateDir: string, started: Stoppable[], say: (line: string) => void): Promise<DevWebhooks | undefined> {
  if (layout.webhookFunctions.length === 0) return undefined;
  if (!(options.webhooks ?? local)) {
    say(`webhook functions (${layout.webhookFunctions.map((f) => f.name).join(', ')}) not served: the cluster of --context cannot call back into this machine`);
    return undefined;
  }
  const functions: WebhookFunction[] = [];
  for (const entry of layout.webhookFunctions) functions.push(await importWebhookFunction(options.root, entry));
  const tls = await writeTestTls(join(stateDir, 'webhook-tls'));
  const invokeApi = await startWebhookInvokeApi(functions, WEBHOOK_TIMEOUT_SECONDS);
  started.push({ name: 'local Lambda Invoke API', stop: () => invokeApi.close() });
  return {
    functions,
    caBundle: tls.caBundle,
    caFile: tls.caFile,
    config: {
      enabled: true, host: '127.0.0.1', port: 0, certFile: tls.certFile, keyFile: tls.keyFile, lambdaEndpoint: invokeApi.endpoint,
      functions: Object.fromEntries(functions.map((f) => [f.alias, f.entry.name])),
    },
  };
}

const RUNNER_CONCURRENCY = 2;
const RUNNER_TIMEOUT_SECONDS = 30;

/** A function's queue variables, as its `environment:` in serverless.yml sets them. Pure. */
export function queueEnvironment(queues: FunctionQueues): Record<string, string> {
  return {
    OPERLESS_QUEUE_URL: queues.queueUrl,
    OPERLESS_DLQ_URL: queues.dlqUrl,
    // Set or cleared: a per-function environment must not leak another function's delay queue.
    OPERLESS_DELAY_QUEUE_URL: queues.delayQueueUrl ?? '',
  };
}

/**
 * A local Lambda runner per function and event source: its work queue, and with per-key
 * ordering its delay queue too (the same handler moves the delay queue's due follow-ups).
 */
async function startRunners(options: DevLoopOptions, functions: readonly LoadedFunction[], queue: QueueTarget, started: Stoppable[], write: (line: string) => void): Promise<void> {
  for (const fn of functions) {
    const queues = queue.byFunction.get(fn.entry.name)!;
    const handler = options.runtime === 'emulator'
      ? await emulatorHandler(options, fn, queues, started, write)
      : { module: join(options.root, fn.entry.module), export: fn.entry.exportName };
    for (const source of [queues.queueUrl, ...(queues.delayQueueUrl ? [queues.delayQueueUrl] : [])]) {
      const runner: LambdaRunner = await startLambdaRunner({
        queueUrl: source,
        sqs: queue.sqs,
        handler,
        functionName: fn.entry.name,
        batchSize: 10,
        batchWindowSeconds: 0,
        maxConcurrency: RUNNER_CONCURRENCY,
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
async function emulatorHandler(options: DevLoopOptions, fn: LoadedFunction, queues: FunctionQueues, started: Stoppable[], write: (line: string) => void): Promise<SQSHandlerFn> {
  const { emulatedHandler } = await import('../testing/lambda-emulator.ts');
  const taskRoot = join(options.root, '.operless', 'lambda', fn.entry.name);
  mkdirSync(taskRoot, { recursive: true });
  const source = pathToFileURL(resolve(options.root, fn.entry.module)).href;
  writeFileSync(join(taskRoot, 'index.mjs'), `export { ${fn.entry.exportName} as handler } from ${JSON.stringify(source)};\n`);
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => (e[0].startsWith('OPERLESS_') || e[0].startsWith('AWS_')) && e[1] !== undefined));
  const emulated = emulatedHandler({
    taskRoot, handler: 'index.handler', timeoutSeconds: RUNNER_TIMEOUT_SECONDS, functionName: fn.entry.name, concurrency: RUNNER_CONCURRENCY,
    env: { ...env, ...queueEnvironment(queues), ...(env.AWS_SESSION_TOKEN ? {} : { AWS_SESSION_TOKEN: 'local' }) },
    onOutput: write,
  });
  started.push({ name: `Lambda runtime emulators of ${fn.entry.name}`, stop: () => emulated.stop() });
  return emulated.handler as SQSHandlerFn;
}

function sayHowToUse(say: (line: string) => void, kubeconfigPath: string, firstKind: string | undefined): void {
  say(`kubectl works against this cluster:  export KUBECONFIG=${relative(process.cwd(), kubeconfigPath) || kubeconfigPath}`);
  const someKind = firstKind?.toLowerCase() ?? '<kind>';
  say(`in another terminal: \`npx operless status\`, \`npx operless enqueue ${someKind} --all\`, \`npx operless dlq list\``);
  say('press Ctrl-C to stop everything');
}

interface QueueTarget {
  readonly byFunction: ReadonlyMap<string, FunctionQueues>;
  readonly region: string;
  readonly endpoint: string | undefined;
  readonly sqs: SQSClient;
}

async function startQueue(choice: BrokerChoice, functionNames: readonly string[], ordering: Ordering, started: Stoppable[], say: (line: string) => void): Promise<QueueTarget> {
  const names = new Map(functionNames.map((fn) => [fn, devQueueNames(fn, ordering)]));
  const pair = (queue: string, dlq: string) => ({ name: queue, visibilityTimeoutSeconds: 60, dlq: { name: dlq, maxReceiveCount: 5 } });
  const queues = [...names.values()].flatMap(({ queue, dlq, delay }) => [pair(queue, dlq), ...(delay ? [pair(delay.queue, delay.dlq)] : [])]);
  const listed = [...names].map(([fn, n]) => `${fn}: ${n.queue} (DLQ ${n.dlq}${n.delay ? `; delay queue ${n.delay.queue}` : ''})`).join(', ');
  const byName = (url: (name: string) => string) =>
    new Map([...names].map(([fn, n]) => [fn, { queueUrl: url(n.queue), dlqUrl: url(n.dlq), ...(n.delay ? { delayQueueUrl: url(n.delay.queue) } : {}) }]));
  if (choice.type === 'embedded') {
    const server = await startMemoryQueueServer({ queues });
    started.push({ name: 'embedded queue', stop: () => server.stop() });
    say(`embedded SQS-compatible queues at ${server.endpoint}, one pair per function (${listed}; DLQ after 5 receives)`);
    return { byFunction: byName((n) => server.queueUrl(n)), region: server.region, endpoint: server.endpoint, sqs: server.sqs() };
  }
  if (choice.type === 'elasticmq') {
    say('starting ElasticMQ (first run resolves it from Maven Central)');
    const { startBroker } = await import('../testing/index.ts');
    const broker = await startBroker({ queues });
    started.push({ name: 'ElasticMQ', stop: () => broker.stop() });
    say(`ElasticMQ at ${broker.endpoint}, one queue pair per function (${listed})`);
    return { byFunction: byName((n) => broker.queueUrl(n)), region: broker.region, endpoint: broker.endpoint, sqs: broker.sqs() };
  }
  if (ordering === 'per-key') {
    throw new Error('--broker sqs takes the queues you name, so --ordering does not apply: for per-key ordering deploy with ordering=per-key and give its FIFO work queue as --queue-url, or use the embedded broker or --broker elasticmq locally');
  }
  if (functionNames.length > 1) {
    throw new Error(
      `--broker sqs gives one queue, but serverless.yml has ${functionNames.length} reconcile functions (${functionNames.join(', ')}), each needing its own queue: ` +
        'use the embedded broker or --broker elasticmq locally, or deploy the stack (osls deploy) for real SQS queues',
    );
  }
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  say(`using SQS queue ${choice.queueUrl}`);
  return { byFunction: new Map([[functionNames[0]!, { queueUrl: choice.queueUrl, dlqUrl: choice.dlqUrl }]]), region: choice.region, endpoint: undefined, sqs: new SQSClient({ region: choice.region }) };
}

/** Server-side applies every document of the given YAML files. */
async function applyFiles(client: BoundKubeClient, files: readonly string[], kinds: readonly KindRef[], say: (line: string) => void, root: string): Promise<void> {
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const object = doc.toJS() as KubeObject | null;
      if (!object?.kind) continue;
      const kind = kindOf(object, kinds, relative(root, file));
      if (kind.namespaced && !object.metadata.namespace) object.metadata.namespace = 'default';
      await client.apply(kind, object);
      say(`applied ${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name} from ${relative(root, file)}`);
    }
  }
}

/** REST coordinates of what the loop applies from files: CRDs, and samples of the kinds the controllers know. */
function kindOf(object: KubeObject, kinds: readonly KindRef[], file: string): KindRef {
  if (object.kind === 'CustomResourceDefinition') return CUSTOMRESOURCEDEFINITIONS;
  const found = kinds.find((k) => k.kind === object.kind && k.apiVersion === object.apiVersion);
  if (!found) {
    throw new Error(`${file}: ${object.apiVersion} ${object.kind} is not a kind any controller reconciles, owns or watches; samples must be of the project's kinds`);
  }
  return found;
}

interface StatusSummary {
  readonly line: string;
}

/** One line per object state: generation, conditions, ready count, pod names. Pure. */
export function summariseStatus(object: KubeObject): StatusSummary {
  const status = (object.status ?? {}) as { conditions?: Condition[]; observedGeneration?: number; readyReplicas?: number; nodes?: string[] };
  const conditions = (status.conditions ?? []).map((c) => `${c.type}=${c.status}${c.status === 'True' || !c.reason ? '' : `(${c.reason})`}`).join(' ');
  const spec = (object.spec ?? {}) as { size?: number };
  const ready = status.readyReplicas !== undefined || spec.size !== undefined ? ` ready ${status.readyReplicas ?? 0}/${spec.size ?? '?'}` : '';
  const nodes = status.nodes?.length ? ` nodes ${status.nodes.join(',')}` : '';
  const deleting = object.metadata.deletionTimestamp ? ' (deleting)' : '';
  const where = object.metadata.namespace ? `${object.metadata.namespace}/` : '';
  return {
    line: `${object.kind} ${where}${object.metadata.name} generation ${object.metadata.generation ?? '?'} observed ${status.observedGeneration ?? '-'}${deleting}: ${conditions || 'no conditions yet'}${ready}${nodes}`,
  };
}

function watchStatuses(client: BoundKubeClient, kinds: readonly KindRef[], write: (line: string) => void): { stop(): Promise<void> } {
  const last = new Map<string, string>();
  const announcedAvailable = new Set<string>();
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void (async () => {
      const seen = new Set<string>();
      for (const kind of kinds) {
        const { items } = await client.list(kind);
        for (const object of items) {
          const id = `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
          seen.add(id);
          const { line } = summariseStatus(object);
          if (last.get(id) !== line) {
            last.set(id, line);
            write(`● ${line}`);
          }
          const status = (object.status ?? {}) as { conditions?: Condition[]; observedGeneration?: number };
          const available = status.conditions?.find((c) => c.type === 'Available');
          const key = `${id}@${object.metadata.generation}`;
          if (available?.status === 'True' && status.observedGeneration === object.metadata.generation && !announcedAvailable.has(key)) {
            announcedAvailable.add(key);
            write(`✔ ${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name} is Available (generation ${object.metadata.generation})`);
          }
        }
      }
      for (const id of [...last.keys()]) {
        if (!seen.has(id)) {
          last.delete(id);
          write(`● ${id.replace(/\/\//, '/')} is gone`);
        }
      }
    })().catch(() => {}).finally(() => {
      running = false;
    });
  }, 500);
  return { stop: async () => clearInterval(timer) };
}
