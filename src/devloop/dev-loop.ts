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
 * Each part is a file of its own in this folder: dev-cluster.ts (the cluster and the files
 * applied into it), dev-queues.ts (a work queue and DLQ per function, and the delay or bulk
 * queue; the brokers), dev-functions.ts (the functions loaded as on Lambda and their runners),
 * webhooks.ts, status-watch.ts (the lines printed as objects change), started-parts.ts (what
 * stops, in reverse). This file composes them, and routes each function's primaries (and their
 * owned objects) through the in-process forwarder to that function's queue — its resyncs and
 * relists to its bulk queue (`bulkQueueUrl`), so a change made with kubectl never waits behind a
 * resync.
 *
 * Guarantees: `stop()` stops every component in reverse order of start and leaves no process
 * behind (the control plane's processes are also killed by its exit hooks if this process dies).
 */
import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { Ordering } from '../contract/ordering.ts';
import type { WebhooksConfig } from '../forwarder/config/config.ts';
import { startForwarder, type Forwarder } from '../forwarder/forwarder.ts';
import { createKubeClient } from '../kube/client.ts';
import { createTransport } from '../kube/transport.ts';
import { startPodSimulator, type PodSimulator } from '../local/pod-simulator.ts';
import { createLogger } from '../observability/log.ts';
import { applyFiles, startCluster } from './dev-cluster.ts';
import { loadFunctions, startRunners, type FunctionRuntime } from './dev-functions.ts';
import { startQueue, type BrokerChoice, type FunctionQueues, type QueueTarget } from './dev-queues.ts';
import { removeDevState, writeDevState } from './dev-state.ts';
import { functionWatches, loadProjectLayout, type LoadedFunction } from './project.ts';
import { stopParts, type Stoppable } from './started-parts.ts';
import { watchStatuses } from './status-watch.ts';
import { registerWebhooks, startWebhookFunctions, webhookObjects } from './webhooks.ts';

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

export async function startDevLoop(options: DevLoopOptions): Promise<DevLoop> {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const say = (line: string) => write(`» ${line}`);
  const log = createLogger({ format: 'pretty', write, level: options.verbose ? 'debug' : 'info' });
  const started: Stoppable[] = [];
  const stopAll = async () => {
    await stopParts(started, write);
    removeDevState(options.root);
  };

  try {
    if (options.traces) {
      if (options.runtime === 'emulator')
        throw new Error('--traces needs the inprocess runtime: under the emulator the functions run in processes of their own');
      const { startTracePrinter } = await import('./trace-tree.ts');
      const printer = startTracePrinter(write);
      started.push({ name: 'trace printer', stop: () => printer.stop() });
      say("traces: each change's trace is printed as a tree once it goes quiet");
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
    const queue = await startQueue(
      options.broker,
      layout.functions.map((f) => f.name),
      options.ordering ?? 'unordered',
      started,
      say,
    );
    const queuesOf = (name: string): FunctionQueues => queue.byFunction.get(name)!;
    const first = queuesOf(layout.functions[0]!.name);

    // 3. The functions, loaded in the environment serverless.yml gives them on Lambda.
    const functions = await loadFunctions(options, layout, queue, { clusterId, kubeconfigPath: cluster.kubeconfigPath });
    const controllers = functions.flatMap((f) => f.controllers);

    // 3b. The webhook functions behind the local Lambda Invoke API, with a test CA.
    const webhooks = await startWebhookFunctions(options, layout, cluster.local, stateDir, started, say);

    // 4. A simulated kubelet, so Deployments become available without containers.
    if (cluster.local && options.simulateWorkloads !== false) {
      const simulator: PodSimulator = startPodSimulator(client.with({ fieldManager: 'operless-dev-kubelet' }), {
        log: log.child({ component: 'kubelet-sim' }),
      });
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
      say(
        `webhooks served at ${forwarder.webhookUrl} (test CA ${relative(options.root, webhooks.caFile)}): ${objects.map((o) => `${o.kind} ${o.metadata.name}`).join(', ')}`,
      );
    }

    // 6. The functions, consumed the way Lambda's event source mapping does.
    await startRunners(options, functions, queue, started, write);
    say(`functions running: ${functions.map((f) => `${f.entry.name} (${f.entry.module}, queue ${queuesOf(f.entry.name).queueUrl})`).join(', ')}`);

    // 7. Status changes as they happen.
    const watcher = watchStatuses(
      client,
      controllers.map((c) => c.kind),
      write,
    );
    started.push({ name: 'status watcher', stop: () => watcher.stop() });

    writeDevState(
      {
        pid: process.pid,
        kubeconfigPath: cluster.kubeconfigPath,
        sqsEndpoint: queue.endpoint ?? '',
        region: queue.region,
        queueUrl: first.queueUrl,
        dlqUrl: first.dlqUrl,
        cluster: clusterId,
        ...(forwarder.url ? { forwarderUrl: forwarder.url } : {}),
        functions: Object.fromEntries(functions.map((f) => [f.entry.name, { ...queuesOf(f.entry.name), kinds: f.controllers.map((c) => c.kind.kind) }])),
      },
      options.root,
    );

    if (options.applySamples !== false) {
      const known = controllers.flatMap((c) => [c.kind, ...(c.spec.owns ?? []), ...(c.spec.watches ?? []).map((w) => w.kind)]);
      await applyFiles(client, layout.samples, known, say, options.root);
    }

    sayHowToUse(say, cluster.kubeconfigPath, controllers[0]?.kind.kind);
    return {
      kubeconfigPath: cluster.kubeconfigPath,
      queueUrl: first.queueUrl,
      dlqUrl: first.dlqUrl,
      queues: queue.byFunction,
      sqsEndpoint: queue.endpoint,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** The forwarder in-process: each function's primaries (and what they own) routed to its queue. */
function startDevForwarder(
  clusterId: string,
  kubeConfig: KubeConfig,
  queue: QueueTarget,
  functions: readonly LoadedFunction[],
  write: (line: string) => void,
  webhooks: Partial<WebhooksConfig> | undefined,
): Forwarder {
  const queueUrlOf = (fn: LoadedFunction) => queue.byFunction.get(fn.entry.name)!.queueUrl;
  return startForwarder(
    {
      clusterId,
      queue: { url: queueUrlOf(functions[0]!), region: queue.region, ...(queue.endpoint ? { endpoint: queue.endpoint } : {}) },
      ...functionWatches(
        functions.map((f) => ({ controllers: f.controllers, queueUrl: queueUrlOf(f), bulkQueueUrl: queue.byFunction.get(f.entry.name)!.bulkQueueUrl })),
      ),
      leaderElection: { enabled: false },
      server: { port: 0, host: '127.0.0.1' },
      coalesceWindowMs: 100,
      ...(webhooks ? { webhooks } : {}),
    },
    { kubeConfig, logger: createLogger({ format: 'pretty', write, level: 'debug' }) },
  );
}

function sayHowToUse(say: (line: string) => void, kubeconfigPath: string, firstKind: string | undefined): void {
  say(`kubectl works against this cluster:  export KUBECONFIG=${relative(process.cwd(), kubeconfigPath) || kubeconfigPath}`);
  const someKind = firstKind?.toLowerCase() ?? '<kind>';
  say(`in another terminal: \`npx operless status\`, \`npx operless enqueue ${someKind} --all\`, \`npx operless dlq list\``);
  say('press Ctrl-C to stop everything');
}
