/**
 * The fault harness: the real pieces of an Operless deployment, each one a process a fault
 * case can stop, kill or freeze, plus a workload driver and the invariant checker that says
 * "nothing was lost".
 *
 * - A real control plane (etcd + kube-apiserver + kube-controller-manager with the workload
 *   controllers and garbage collection) with the Memcached CRD; ElasticMQ with the queues of
 *   each ordering the env carries (`orderings`, the names `operless dev` gives them,
 *   `devQueueNames`): `unordered`, a standard work queue and its DLQ; `per-key`, a FIFO work
 *   queue and FIFO DLQ and a standard delay queue with its DLQ (docs/architecture.md, "Per-key
 *   ordering") — every work and delay queue redriven to its DLQ after `maxReceiveCount`
 *   receives; optionally persisting messages so it can be restarted; a counting proxy in front
 *   of it (sqs-proxy.ts). A case picks its ordering when it starts the forwarder and the
 *   function, injects and checks (each option's `ordering`, default `unordered`).
 * - The forwarder as the process the image runs (its esbuild bundle), 1 or 2 replicas with
 *   leader election on short lease timings, under its own identity: the ServiceAccount and
 *   RBAC of the shipped manifests (test/support/identities.ts), its Lease the one of the
 *   shipped config in the namespace its Role covers — never as admin.
 * - The function as the bundle `serverless package` ships, run by the local Lambda runner in
 *   its own process (function-process.ts), under the function's own RBAC (infra/rbac) — or a
 *   test controller's module under that controller's own identity. Per-key: the FIFO work
 *   queue and the delay queue are both its event sources (the delay mover's batches), as
 *   serverless.yml deploys it. Only the test itself (the user's changes, the checker) and the
 *   pod simulator (the kubelet stand-in) use admin.
 * - The pod simulator (the kubelet stand-in), so Deployments become available.
 *
 * The invariant (`converge`): every object reaches its latest spec with `Available=True` at
 * its current generation and a Deployment of `spec.size` replicas; the work queue (per-key: and
 * the delay queue) drains completely, delayed requeues included (no message loops forever); the
 * DLQ holds exactly the expected messages (per-key: the delay queue's DLQ holds none),
 * each with its `operless.reason`; no object was reconciled more than a bound. Each case ends
 * with one line: case, duration, messages sent, reconciles run, objects converged/total.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { stringify } from 'yaml';
import { startBroker, startControlPlane, WORKLOAD_CONTROLLERS, type Broker, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { createKubeClient, type BoundKubeClient } from '../../src/kube/client.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { memcachedController } from '../../src/memcached/controller.ts';
import { MEMCACHED } from '../../src/memcached/types.ts';
import { DEPLOYMENTS } from '../../src/kube/kinds.ts';
import { startPodSimulator, type PodSimulator } from '../../src/local/pod-simulator.ts';
import { watchesFor } from '../../src/devloop/project.ts';
import { devQueueNames } from '../../src/devloop/dev-queues.ts';
import { ORDERINGS, type Ordering } from '../../src/contract/ordering.ts';
import { bodyGroupId, isFifoQueueUrl } from '../../src/queue/fifo.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { extractBundle, packageService, ROOT } from '../../scripts/package.ts';
import { startSqsProxy, type SqsProxy } from './sqs-proxy.ts';
import type { FunctionProcessConfig } from './function-process.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { faultKnobs, type FaultKnobs } from './knobs.ts';
import { applyForwarderIdentity, applyMemcachedFunctionIdentity, type ForwarderIdentity } from '../support/identities.ts';

export const CLUSTER = 'faults';
export const MEMCACHED_CRD = join(ROOT, 'infra', 'crds', 'memcacheds.cache.example.com.yaml');
const FUNCTION_PROCESS = join(import.meta.dirname, 'function-process.ts');

/** Every `OPERLESS_FAULTS_*` knob, validated when the suite loads (a bad value fails the file at once, naming it). */
export const KNOBS: FaultKnobs = faultKnobs();

/** Objects per case: the issue's 200 by default; `OPERLESS_FAULTS_OBJECTS` overrides. */
export function objectsPerCase(fallback = 200): number {
  return KNOBS.objects ?? fallback;
}

/**
 * The orderings a case of both orderings runs in: both, or the one `OPERLESS_FAULTS_ORDERING`
 * names. A file with such cases starts its env with `orderings: ORDERINGS`.
 */
export const CASE_ORDERINGS: readonly Ordering[] = KNOBS.ordering ? [KNOBS.ordering] : ORDERINGS;

/** A case's title in an ordering: unordered keeps the title it always had; per-key adds ` [per-key]`. */
export function titled(title: string, ordering: Ordering): string {
  return ordering === 'unordered' ? title : `${title} [per-key]`;
}

/** The name a case gives its namespace or process in an ordering (`-pk` added for per-key). */
export function named(name: string, ordering: Ordering): string {
  return ordering === 'unordered' ? name : `${name}-pk`;
}

/** The queues of one ordering, as the forwarder and the function see them (through the proxy). */
export interface QueueLayout {
  readonly ordering: Ordering;
  /** The work queue: standard, or FIFO (`.fifo`, message group = object key) for per-key. */
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Per-key: the standard delay queue (OPERLESS_DELAY_QUEUE_URL) and its DLQ. */
  readonly delay?: { readonly queueUrl: string; readonly dlqUrl: string };
}

/** The function name the fault suite's queues are named after (`devQueueNames`). */
const QUEUE_FUNCTION = 'faults';

export interface FaultEnvOptions {
  /** Keep messages across broker restarts (ElasticMQ's H2 store). */
  readonly persistMessages?: boolean;
  readonly watchCache?: boolean;
  readonly apiServerArgs?: readonly string[];
  /** More CRDs besides Memcached. */
  readonly crds?: readonly string[];
  /** RBAC and other manifests to apply (kubectl apply -f) before the case starts. */
  readonly manifests?: readonly string[];
  /** Work queue visibility timeout (default 12 s: a killed invocation's records return fast). */
  readonly visibilityTimeoutSeconds?: number;
  readonly maxReceiveCount?: number;
  /** The orderings whose queues the broker holds (default unordered only). */
  readonly orderings?: readonly Ordering[];
  /** Package the Memcached function (default true). */
  readonly memcachedFunction?: boolean;
}

export interface LoggedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  readonly lines: Record<string, unknown>[];
  /** Resolves once stdout has ended: after an exit, every line the process wrote is in `lines`. */
  readonly output: Promise<void>;
  /** The first JSON log line (from now on or already seen) whose msg matches. */
  line(msg: RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** The next JSON log line (not one already seen) that matches, resolved in the tick it is read. */
  nextLine(matches: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** SIGTERM (or the given signal) and wait for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ForwarderProcess extends LoggedProcess {
  /** The probe server's URL (after `forwarder running`). */
  probes(): Promise<string>;
  /** Sum of a Prometheus counter/gauge over its labels. */
  metric(name: string): Promise<number>;
}

export interface ReconcileRecord {
  readonly process: string;
  readonly key: string;
  readonly msg: string;
  readonly endMs: number;
  readonly durationMs: number;
  readonly gone: boolean;
  readonly result: string;
}

export interface FunctionOptions {
  readonly module?: string;
  readonly identity?: Identity;
  readonly batchSize?: number;
  readonly batchWindowSeconds?: number;
  readonly maxConcurrency?: number;
  readonly timeoutSeconds?: number;
  readonly env?: Readonly<Record<string, string>>;
  /** Whose queues it consumes (default unordered); per-key also runs the delay mover on the delay queue. */
  readonly ordering?: Ordering;
}

export interface ForwarderOptions {
  readonly leaderElection?: boolean;
  /** Watch only these namespaces (each case has its own, so a start does not resync the others'). */
  readonly namespaces?: readonly string[];
  /** Extra config fields (merged on top). */
  readonly config?: Readonly<Record<string, unknown>>;
  /** Which work queue it sends to (default unordered; per-key: the FIFO one). */
  readonly ordering?: Ordering;
}

const RECONCILE_LINES = new Set([
  'reconciled',
  'reconcile failed; retrying',
  'reconcile retries exhausted; giving up',
  'reconcile failed terminally; not retrying',
]);

export class FaultEnv {
  readonly cp: ControlPlane;
  readonly broker: Broker;
  readonly proxy: SqsProxy;
  readonly work: string;
  readonly admin: BoundKubeClient;
  readonly sqs: SQSClient;
  readonly reconciles: ReconcileRecord[] = [];
  readonly fnIdentity: Identity;
  /** The forwarder's shipped identity (ServiceAccount, RBAC, Lease name and namespace). */
  readonly forwarderIdentity: ForwarderIdentity;
  readonly memcachedBundle: string | undefined;
  private readonly forwarderBundle: string;
  private readonly children = new Set<LoggedProcess>();
  private readonly functions = new Set<LoggedProcess>();
  private simulator: PodSimulator | undefined;
  private readonly layouts: ReadonlyMap<Ordering, QueueLayout>;

  private constructor(parts: {
    cp: ControlPlane;
    broker: Broker;
    proxy: SqsProxy;
    work: string;
    fnIdentity: Identity;
    forwarderIdentity: ForwarderIdentity;
    memcachedBundle: string | undefined;
    forwarderBundle: string;
    orderings: readonly Ordering[];
  }) {
    this.cp = parts.cp;
    this.broker = parts.broker;
    this.proxy = parts.proxy;
    this.work = parts.work;
    this.fnIdentity = parts.fnIdentity;
    this.forwarderIdentity = parts.forwarderIdentity;
    this.memcachedBundle = parts.memcachedBundle;
    this.forwarderBundle = parts.forwarderBundle;
    this.admin = createKubeClient(createTransport(this.cp.kubeConfig), { fieldManager: 'faults-admin' });
    this.sqs = new SQSClient({ endpoint: this.proxy.endpoint, region: this.broker.region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    const url = (name: string) => this.proxy.url(this.broker.queueUrl(name));
    this.layouts = new Map(
      parts.orderings.map((ordering) => {
        const names = devQueueNames(QUEUE_FUNCTION, ordering);
        return [
          ordering,
          {
            ordering,
            queueUrl: url(names.queue),
            dlqUrl: url(names.dlq),
            ...(names.delay ? { delay: { queueUrl: url(names.delay.queue), dlqUrl: url(names.delay.dlq) } } : {}),
          },
        ];
      }),
    );
  }

  /** The queues of `ordering`; throws when the env was not started with it. */
  layout(ordering: Ordering = 'unordered'): QueueLayout {
    const layout = this.layouts.get(ordering);
    assert.ok(layout, `the fault env has no ${ordering} queues: start it with orderings including '${ordering}'`);
    return layout;
  }

  static async start(options: FaultEnvOptions = {}): Promise<FaultEnv> {
    const work = mkdtempSync(join(tmpdir(), 'operless-faults-'));
    // The bundle leaves the AWS SDK to the runtime (Lambda's nodejs24.x provides it): here
    // the repository's node_modules stands in for it.
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
    const orderings = options.orderings ?? ['unordered'];
    const redrive = { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 12, maxReceiveCount: options.maxReceiveCount ?? 5 };
    const queues = orderings.flatMap((ordering) => {
      const names = devQueueNames(QUEUE_FUNCTION, ordering);
      const pair = (name: string, dlq: string) => ({
        name,
        visibilityTimeoutSeconds: redrive.visibilityTimeoutSeconds,
        dlq: { name: dlq, maxReceiveCount: redrive.maxReceiveCount },
      });
      return [pair(names.queue, names.dlq), ...(names.delay ? [pair(names.delay.queue, names.delay.dlq)] : [])];
    });
    const [cp, broker] = await Promise.all([
      startControlPlane({
        controllers: WORKLOAD_CONTROLLERS,
        crds: [MEMCACHED_CRD, ...(options.crds ?? [])],
        ...(options.watchCache !== undefined ? { watchCache: options.watchCache } : {}),
        ...(options.apiServerArgs ? { apiServerArgs: options.apiServerArgs } : {}),
      }),
      startBroker({
        persistMessages: options.persistMessages ?? false,
        queues,
      }),
    ]);
    const proxy = await startSqsProxy(broker.endpoint);
    const fnIdentity = await applyMemcachedFunctionIdentity(cp);
    const forwarderIdentity = await applyForwarderIdentity(cp);
    for (const manifest of options.manifests ?? []) {
      const result = await cp.kubectl(['apply', '-f', manifest]);
      assert.equal(result.code, 0, result.stderr);
    }
    let memcachedBundle: string | undefined;
    if (options.memcachedFunction ?? true) {
      const packaged = await packageService({ outDir: join(work, 'package') });
      const fn = packaged.functions.find((f) => f.name === 'memcached');
      assert.ok(fn, 'serverless package produced the memcached function');
      memcachedBundle = extractBundle(fn, join(work, 'bundle'));
    }
    const forwarderBundle = (await bundleForwarder(join(work, 'forwarder.mjs'))).outFile;
    return new FaultEnv({ cp, broker, proxy, work, fnIdentity, forwarderIdentity, memcachedBundle, forwarderBundle, orderings });
  }

  /**
   * The forwarder bundle as its own process, watching what the shipped forwarder config
   * watches (the Memcached primaries and their Deployments), under the shipped ServiceAccount;
   * with leader election it competes for the shipped Lease. It sends to the work queue of its
   * ordering (per-key: the FIFO queue, each message in its object key's group).
   */
  async startForwarder(name: string, options: ForwarderOptions = {}): Promise<ForwarderProcess> {
    // What the shipped config watches — its RBAC grants exactly that (a kind the controller
    // owns beyond it would be forbidden: see shippedWatchGaps).
    const shipped = this.forwarderIdentity.config as { primaries?: object[]; owned?: object[] };
    const scoped = (list: readonly object[] | undefined) =>
      (list ?? []).map((w) => ({ ...w, ...(options.namespaces ? { namespaces: [...options.namespaces] } : {}) }));
    const config = {
      clusterId: CLUSTER,
      queue: { url: this.layout(options.ordering).queueUrl, region: this.broker.region },
      primaries: scoped(shipped.primaries),
      owned: scoped(shipped.owned),
      leaderElection: options.leaderElection
        ? {
            enabled: true,
            namespace: this.forwarderIdentity.namespace,
            leaseName: this.forwarderIdentity.leaseName,
            identity: name,
            leaseDurationSeconds: 3,
            renewDeadlineSeconds: 2,
            retryPeriodSeconds: 0.5,
          }
        : { enabled: false },
      server: { port: 0 },
      coalesceWindowMs: 200,
      send: { backoffInitialMs: 200, backoffMaxMs: 3000 },
      watch: { backoffInitialMs: 300, backoffMaxMs: 3000 },
      shutdownGraceMs: 5000,
      ...options.config,
    };
    const path = join(this.work, `${name}.yaml`);
    writeFileSync(path, stringify(config));
    const proc = this.spawnLogged(
      name,
      [this.forwarderBundle],
      {
        OPERLESS_FORWARDER_CONFIG: path,
        KUBECONFIG: this.forwarderIdentity.identity.kubeconfigPath,
        POD_NAMESPACE: this.forwarderIdentity.namespace,
        POD_NAME: name,
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_ENDPOINT_URL_SQS: this.proxy.endpoint,
        OPERLESS_LOG_LEVEL: 'info',
      },
      () => {},
    );
    const probes = async () => String((await proc.line(/forwarder running/, 60_000)).probes);
    return {
      ...proc,
      probes,
      metric: async (metricName) => {
        const text = await (await fetch(`${await probes()}/metrics`)).text();
        return text
          .split('\n')
          .filter((l) => l.startsWith(`${metricName}{`) || l.startsWith(`${metricName} `))
          .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
      },
    };
  }

  /**
   * The function runner in its own process (default: the shipped Memcached bundle under its
   * RBAC), consuming the work queue of its ordering — per-key, the delay queue too.
   */
  async startFunction(name: string, options: FunctionOptions = {}): Promise<LoggedProcess> {
    const module = options.module ?? this.memcachedBundle;
    assert.ok(module, 'no function module: start the env with memcachedFunction or pass module');
    const layout = this.layout(options.ordering);
    const runner: FunctionProcessConfig = {
      queueUrl: layout.queueUrl,
      ...(layout.delay ? { delayQueueUrl: layout.delay.queueUrl } : {}),
      endpoint: this.proxy.endpoint,
      region: this.broker.region,
      module,
      functionName: name,
      batchSize: options.batchSize ?? 10,
      batchWindowSeconds: options.batchWindowSeconds ?? 1,
      maxConcurrency: options.maxConcurrency ?? 3,
      timeoutSeconds: options.timeoutSeconds ?? 6,
    };
    const proc = this.spawnLogged(
      name,
      [FUNCTION_PROCESS],
      {
        FAULTS_RUNNER: JSON.stringify(runner),
        OPERLESS_QUEUE_URL: layout.queueUrl,
        OPERLESS_DLQ_URL: layout.dlqUrl,
        ...(layout.delay ? { OPERLESS_DELAY_QUEUE_URL: layout.delay.queueUrl } : {}),
        OPERLESS_CLUSTER: CLUSTER,
        OPERLESS_KUBECONFIG: (options.identity ?? this.fnIdentity).kubeconfigPath,
        OPERLESS_METRICS: 'off',
        OPERLESS_LOG_LEVEL: 'info',
        AWS_REGION: this.broker.region,
        AWS_ENDPOINT_URL_SQS: this.proxy.endpoint,
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        ...options.env,
      },
      (line) => {
        if (!RECONCILE_LINES.has(String(line.msg)) || typeof line.key !== 'string') return;
        const durationMs = Number(line.durationMs ?? 0);
        this.reconciles.push({
          process: name,
          key: line.key,
          msg: String(line.msg),
          endMs: Date.parse(String(line.time)),
          durationMs,
          gone: line.gone !== undefined,
          result: String(line.result ?? ''),
        });
      },
    );
    this.functions.add(proc);
    void proc.exited.then(() => this.functions.delete(proc));
    await proc.line(/function runner started/, 30_000);
    return proc;
  }

  /** SIGTERMs every function runner still running (in-flight invocations finish first). */
  async stopFunctions(): Promise<void> {
    await Promise.all([...this.functions].map((f) => f.stop()));
  }

  startSimulator(): void {
    this.simulator ??= startPodSimulator(createKubeClient(createTransport(this.cp.kubeConfig), { fieldManager: 'faults-kubelet' }), {
      log: silentLogger,
      intervalMs: 400,
    });
  }

  private spawnLogged(name: string, args: string[], env: Record<string, string>, onLine: (line: Record<string, unknown>) => void): LoggedProcess {
    const child = spawn(process.execPath, args, {
      cwd: this.work,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    const lines: Record<string, unknown>[] = [];
    // OPERLESS_FAULTS_LOGS=<dir> keeps every process's output, one file per process.
    const logDir = KNOBS.logDir;
    if (logDir) mkdirSync(logDir, { recursive: true });
    const keep = logDir ? (text: string) => appendFileSync(join(logDir, `${name}.log`), `${text}\n`) : () => {};
    const waiters: { matches: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];
    let stderr = '';
    const reader = createInterface({ input: child.stdout! });
    const output = new Promise<void>((resolve) => reader.once('close', () => resolve()));
    reader.on('line', (text) => {
      keep(text);
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return;
      }
      if (line._aws) return; // metrics lines
      lines.push(line);
      onLine(line);
      for (const w of [...waiters]) {
        if (w.matches(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    });
    child.stderr!.on('data', (d: Buffer) => {
      keep(d.toString());
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const awaitLine = (what: string, matches: (l: Record<string, unknown>) => boolean, timeoutMs: number) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `${name}: no log line ${what} within ${timeoutMs} ms; stderr:\n${stderr}\nlast lines:\n${lines
                  .slice(-10)
                  .map((l) => JSON.stringify(l))
                  .join('\n')}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          matches,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
      });
    const proc: LoggedProcess = {
      name,
      child,
      exited,
      lines,
      output,
      line: (re, timeoutMs = 30_000) => {
        const found = lines.find((l) => re.test(String(l.msg)));
        if (found) return Promise.resolve(found);
        return awaitLine(String(re), (l) => re.test(String(l.msg)), timeoutMs);
      },
      nextLine: (matches, timeoutMs = 30_000) => awaitLine('matching the predicate', matches, timeoutMs),
      stop: async (signal = 'SIGTERM') => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGCONT'); // a frozen process cannot handle SIGTERM
          child.kill(signal);
          const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          void exited.then(() => clearTimeout(killer));
        }
        return exited;
      },
    };
    this.children.add(proc);
    void exited.then(() => this.children.delete(proc));
    return proc;
  }

  /**
   * One raw body for the work queue of `ordering`, as a producer sends it: to a FIFO queue in
   * its object key's group (a body that is no message: a group of its own) with a fresh
   * deduplication id, as every Operless producer does (src/queue/fifo.ts).
   */
  sendInput(body: string, ordering: Ordering = 'unordered'): SendMessageCommandInput {
    const queueUrl = this.layout(ordering).queueUrl;
    return {
      QueueUrl: queueUrl,
      MessageBody: body,
      ...(isFifoQueueUrl(queueUrl) ? { MessageGroupId: bodyGroupId(body), MessageDeduplicationId: randomUUID() } : {}),
    };
  }

  /** Sends raw bodies straight into the work queue of `ordering` (through the counting proxy). */
  async inject(bodies: readonly string[], ordering: Ordering = 'unordered'): Promise<void> {
    await eachBounded(bodies, 8, async (body) => {
      await this.sqs.send(new SendMessageCommand(this.sendInput(body, ordering)));
    });
  }

  /** Messages left in the work queue of `ordering`, its delay queue's included (per-key). */
  async pending(ordering: Ordering = 'unordered'): Promise<{ visible: number; inFlight: number; delayed: number }> {
    const layout = this.layout(ordering);
    const depths = await Promise.all([layout.queueUrl, ...(layout.delay ? [layout.delay.queueUrl] : [])].map((url) => this.queueDepth(url)));
    return depths.reduce((a, b) => ({ visible: a.visible + b.visible, inFlight: a.inFlight + b.inFlight, delayed: a.delayed + b.delayed }));
  }

  async queueDepth(url: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
    const attrs = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
      }),
    );
    const n = (k: string) => Number(attrs.Attributes?.[k as keyof typeof attrs.Attributes] ?? 0);
    return {
      visible: n('ApproximateNumberOfMessages'),
      inFlight: n('ApproximateNumberOfMessagesNotVisible'),
      delayed: n('ApproximateNumberOfMessagesDelayed'),
    };
  }

  /** Receives and deletes everything in the DLQs of `ordering` (per-key: the delay queue's too). */
  async drainDlq(ordering: Ordering = 'unordered'): Promise<DeadLetter[]> {
    const layout = this.layout(ordering);
    const out: DeadLetter[] = [];
    for (const [from, url] of [['dlq', layout.dlqUrl], ...(layout.delay ? [['delay-dlq', layout.delay.dlqUrl] as const] : [])] as const) {
      for (let empty = 0; empty < 2; ) {
        const got = await this.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }),
        );
        const messages: Message[] = got.Messages ?? [];
        if (messages.length === 0) {
          empty++;
          continue;
        }
        for (const m of messages) out.push({ from, body: m.Body ?? '', reason: m.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue });
        await this.sqs.send(
          new DeleteMessageBatchCommand({ QueueUrl: url, Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })) }),
        );
      }
    }
    return out;
  }

  /** Reconciles (not counting "object gone" skips) per key whose key contains `filter`. */
  reconcileCounts(filter: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of this.reconciles) if (!r.gone && r.key.includes(filter)) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
    return counts;
  }

  /** Stops every forwarder and function process still running (between cases). */
  async stopProcesses(): Promise<void> {
    await Promise.all([...this.children].map((c) => c.stop()));
  }

  async stop(): Promise<void> {
    await this.simulator?.stop();
    await Promise.all([...this.children].map((c) => c.stop('SIGKILL')));
    this.sqs.destroy();
    await this.proxy.close();
    await Promise.all([this.broker.stop(), this.cp.stop()]);
    rmSync(this.work, { recursive: true, force: true });
  }
}

/**
 * The lifecycle a fault file shares: one `FaultEnv` for the file, started in `before` (with
 * the pod simulator when `simulator` is set), every forwarder and function process stopped
 * after each case, the env stopped after the last. Call it at the top level of the file; the
 * returned function gives the started env (inside a case, or a `before` registered after it).
 */
export function useFaultEnv(options: FaultEnvOptions & { readonly simulator?: boolean } = {}): () => FaultEnv {
  let env: FaultEnv | undefined;
  before(async () => {
    env = await FaultEnv.start(options);
    if (options.simulator) env.startSimulator();
  });
  afterEach(async () => {
    await env?.stopProcesses();
  });
  after(async () => {
    await env?.stop();
  });
  return () => {
    assert.ok(env, 'the fault env is started in before()');
    return env;
  };
}

/**
 * A reconcile's run time as its log line gives it: it ended at the line's `time` (ms) and
 * started `durationMs` before. Both are rounded to the millisecond, so two runs of one key
 * handed from one invocation to the next (a delete, a receive and an invoke apart: many ms)
 * may seem to touch; only an overlap longer than `OVERLAP_TOLERANCE_MS` counts.
 */
export const OVERLAP_TOLERANCE_MS = 2;

/**
 * Every pair of reconciles of one key whose run times overlap, described (key, process and
 * times); with `acrossProcesses`, only pairs run by two different runner processes. Pure.
 */
export function overlappingReconciles(records: readonly ReconcileRecord[], options: { acrossProcesses?: boolean } = {}): string[] {
  const out: string[] = [];
  const byKey = new Map<string, ReconcileRecord[]>();
  for (const r of records) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
  const span = (r: ReconcileRecord) => `${r.process} ${new Date(r.endMs - r.durationMs).toISOString().slice(11)}–${new Date(r.endMs).toISOString().slice(11)}`;
  for (const [key, list] of byKey) {
    for (let a = 0; a < list.length; a++) {
      for (let b = a + 1; b < list.length; b++) {
        const x = list[a]!;
        const y = list[b]!;
        if (options.acrossProcesses && x.process === y.process) continue;
        const overlap = Math.min(x.endMs, y.endMs) - Math.max(x.endMs - x.durationMs, y.endMs - y.durationMs);
        if (overlap > OVERLAP_TOLERANCE_MS) out.push(`${key}: ${span(x)} and ${span(y)} (${overlap.toFixed(0)} ms)`);
      }
    }
  }
  return out;
}

/** One invocation a function runner process started (its `invocation started` line, function-process.ts). */
export interface StartedInvocation {
  readonly requestId: string;
  readonly messageIds: readonly string[];
}

/** Every invocation the runner process started, in order. */
export function invocationsStarted(fn: LoggedProcess): StartedInvocation[] {
  return fn.lines
    .filter((l) => l.msg === 'invocation started')
    .map((l) => ({ requestId: String(l.requestId), messageIds: Array.isArray(l.messageIds) ? l.messageIds.map(String) : [] }));
}

/**
 * Invocations whose handler had not returned (no `invocation handled` line): their records
 * were received and never deleted — a batch in hand. Read it after `fn.output` for a process
 * that was killed, so every line it wrote is counted.
 */
export function invocationsInHand(fn: LoggedProcess): StartedInvocation[] {
  const handled = new Set(fn.lines.filter((l) => l.msg === 'invocation handled').map((l) => String(l.requestId)));
  return invocationsStarted(fn).filter((i) => !handled.has(i.requestId));
}

/**
 * Invocations whose handler returned (`invocation handled`) but whose acknowledgement never
 * completed (no `invocation` line, logged after the deletes): their follow-ups were sent and
 * their records were not deleted. Read it after `fn.output` for a process that was killed.
 */
export function invocationsUnacknowledged(fn: LoggedProcess): StartedInvocation[] {
  const handled = new Set(fn.lines.filter((l) => l.msg === 'invocation handled').map((l) => String(l.requestId)));
  const acknowledged = new Set(fn.lines.filter((l) => l.msg === 'invocation').map((l) => String(l.requestId)));
  return invocationsStarted(fn).filter((i) => handled.has(i.requestId) && !acknowledged.has(i.requestId));
}

/**
 * Kinds the Memcached controller owns (`watchesFor`, what `operless dev` watches) that the
 * shipped forwarder config does not watch — changes to those children reach the function
 * only through the periodic resync. Reported by the suite, not hidden.
 */
export function shippedWatchGaps(env: FaultEnv): string[] {
  const shipped = (env.forwarderIdentity.config as { owned?: { kind?: string }[] }).owned ?? [];
  const wanted = watchesFor([defineController(memcachedController)]).owned ?? [];
  return wanted.filter((w) => !shipped.some((s) => s.kind === w.kind)).map((w) => w.kind);
}

export interface DeadLetter {
  /** The work queue's DLQ, or (per-key) the delay queue's. */
  readonly from: 'dlq' | 'delay-dlq';
  readonly body: string;
  readonly reason: string | undefined;
}

const NAMESPACES: KindRef = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

interface Mc extends KubeObject {
  spec: { size: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
}
interface Deploy extends KubeObject {
  spec?: { replicas?: number };
}

/** Objects of one namespace whose convergence a case checks. */
export interface Workload {
  readonly namespace: string;
  /** One pass over the live objects: how many converged, and why the others have not. */
  check(): Promise<{ converged: number; total: number; pending: string[] }>;
}

/** Creates and updates Memcached objects in one namespace, remembering each one's latest spec. */
export class MemcachedWorkload implements Workload {
  readonly expected = new Map<string, number>();
  private readonly env: FaultEnv;
  readonly namespace: string;

  constructor(env: FaultEnv, namespace: string) {
    this.env = env;
    this.namespace = namespace;
  }

  static objectName(i: number): string {
    return `mc-${String(i).padStart(3, '0')}`;
  }

  async createNamespace(): Promise<void> {
    await this.env.admin.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.namespace } }).catch((err: { status?: number }) => {
      if (err.status !== 409) throw err;
    });
  }

  /** Creates objects [from, to) with size 1, `parallel` at a time. */
  async create(from: number, to: number, parallel = 6): Promise<void> {
    await eachBounded(range(from, to), parallel, async (i) => {
      const name = MemcachedWorkload.objectName(i);
      await this.env.admin.create(MEMCACHED, {
        apiVersion: MEMCACHED.apiVersion,
        kind: MEMCACHED.kind,
        metadata: { name, namespace: this.namespace },
        spec: { size: 1 },
      });
      this.expected.set(name, 1);
    });
  }

  /** Sets spec.size of existing objects (a new generation each). Retries while the API server is away. */
  async resize(indexes: readonly number[], size: (i: number) => number, parallel = 6): Promise<void> {
    await eachBounded(indexes, parallel, async (i) => {
      const name = MemcachedWorkload.objectName(i);
      await retrying(() => this.env.admin.mergePatch(MEMCACHED, name, this.namespace, { spec: { size: size(i) } }));
      this.expected.set(name, size(i));
    });
  }

  /** One pass over the live objects: which have converged, and why the others have not. */
  async check(): Promise<{ converged: number; total: number; pending: string[] }> {
    const [mcs, deploys] = await Promise.all([
      this.env.admin.list<Mc>(MEMCACHED, { namespace: this.namespace }),
      this.env.admin.list<Deploy>(DEPLOYMENTS, { namespace: this.namespace }),
    ]);
    const replicas = new Map(deploys.items.map((d) => [d.metadata.name, d.spec?.replicas]));
    const live = new Map(mcs.items.map((m) => [m.metadata.name, m]));
    const pending: string[] = [];
    let converged = 0;
    for (const [name, size] of this.expected) {
      const mc = live.get(name);
      const problem = !mc
        ? 'missing'
        : mc.spec.size !== size
          ? `spec.size ${mc.spec.size} != ${size}`
          : mc.status?.observedGeneration !== mc.metadata.generation
            ? `observedGeneration ${mc.status?.observedGeneration} != generation ${mc.metadata.generation}`
            : !mc.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True')
              ? 'not Available'
              : replicas.get(name) !== size
                ? `Deployment replicas ${replicas.get(name)} != ${size}`
                : undefined;
      if (problem) pending.push(`${name}: ${problem}`);
      else converged++;
    }
    return { converged, total: this.expected.size, pending };
  }
}

/** A Memcached case's pieces (`startMemcachedCase`). */
export interface MemcachedCase {
  readonly workload: MemcachedWorkload;
  readonly fn: LoggedProcess;
  readonly forwarder: ForwarderProcess;
}

/**
 * The usual start of a Memcached case in `ordering`: the function `fn-<name>`, the forwarder
 * `fwd-<name>` watching only the namespace `<name>` (running once it answers its probes), and
 * that namespace created — every name with `-pk` added per-key (`named`).
 */
export async function startMemcachedCase(env: FaultEnv, name: string, ordering: Ordering = 'unordered'): Promise<MemcachedCase> {
  const workload = new MemcachedWorkload(env, named(name, ordering));
  const fn = await env.startFunction(named(`fn-${name}`, ordering), { ordering });
  const forwarder = await env.startForwarder(named(`fwd-${name}`, ordering), { ordering, namespaces: [workload.namespace] });
  await forwarder.probes();
  await workload.createNamespace();
  return { workload, fn, forwarder };
}

export interface InvariantOptions {
  /** How long convergence and the drain may take (default 180 s). */
  readonly timeoutMs?: number;
  /** Expected dead letters as `reason` → count (default: none). */
  readonly dlq?: Readonly<Record<string, number>>;
  /** At most this many reconciles of any one object (default 60). */
  readonly maxReconcilesPerObject?: number;
  /** Whose queues to check (default unordered). */
  readonly ordering?: Ordering;
}

export interface CaseResult {
  readonly converged: number;
  readonly total: number;
  readonly deadLetters: DeadLetter[];
  readonly reconciles: number;
  /** The most reconciles any one object had. */
  readonly maxPerObject: number;
}

/**
 * Waits until every object converged and the work queue (per-key: and the delay queue) holds
 * nothing visible, in flight or delayed, then asserts the DLQ content — the delay queue's DLQ
 * counts as `(delay queue) <reason>`, so it must hold nothing unless a case expects it — and
 * the per-object reconcile bound.
 */
export async function assertNothingLost(env: FaultEnv, workload: Workload, options: InvariantOptions = {}): Promise<CaseResult> {
  const timeoutMs = options.timeoutMs ?? 180_000;
  const deadline = Date.now() + timeoutMs;
  let last: { converged: number; total: number; pending: string[] } = { converged: 0, total: 0, pending: ['not checked yet'] };
  let depth = { visible: -1, inFlight: -1, delayed: -1 };
  // Dead letters come at the end of a retry chain: wait for as many as are expected.
  const expectedLetters = Object.values(options.dlq ?? {}).reduce((a, b) => a + b, 0);
  while (Date.now() < deadline) {
    try {
      last = await workload.check();
      depth = await env.pending(options.ordering);
      const letters = expectedLetters > 0 ? (await env.queueDepth(env.layout(options.ordering).dlqUrl)).visible : 0;
      if (last.pending.length === 0 && depth.visible === 0 && depth.inFlight === 0 && depth.delayed === 0 && letters >= expectedLetters) break;
    } catch {
      // the API server or broker may still be coming back
    }
    await sleep(1000);
  }
  assert.deepEqual(
    last.pending.slice(0, 10),
    [],
    `${last.converged}/${last.total} converged within ${timeoutMs} ms; first pending:\n${last.pending.slice(0, 10).join('\n')}`,
  );
  // No message loops forever: once everything has settled every requeue chain ends, so the
  // queue empties completely, delayed messages included.
  assert.equal(
    depth.visible + depth.inFlight + depth.delayed,
    0,
    `the work queue${options.ordering === 'per-key' ? ' and the delay queue' : ''} drained, delayed messages included (visible ${depth.visible}, in flight ${depth.inFlight}, delayed ${depth.delayed})`,
  );
  const deadLetters = await env.drainDlq(options.ordering);
  const byReason: Record<string, number> = {};
  for (const d of deadLetters) {
    const reason = `${d.from === 'delay-dlq' ? '(delay queue) ' : ''}${d.reason ?? '(redrive)'}`;
    byReason[reason] = (byReason[reason] ?? 0) + 1;
  }
  assert.deepEqual(
    byReason,
    options.dlq ?? {},
    `the DLQ holds exactly the expected messages: ${deadLetters.map((d) => `${d.reason}: ${d.body.slice(0, 200)}`).join('\n')}`,
  );
  const counts = env.reconcileCounts(`/${workload.namespace}/`);
  const max = Math.max(0, ...counts.values());
  assert.ok(
    max <= (options.maxReconcilesPerObject ?? 60),
    `no object loops: at most ${options.maxReconcilesPerObject ?? 60} reconciles per object, saw ${max} (${[...counts]
      .filter(([, n]) => n === max)
      .map(([k]) => k)
      .join(', ')})`,
  );
  return { converged: last.converged, total: last.total, deadLetters, reconciles: [...counts.values()].reduce((a, b) => a + b, 0), maxPerObject: max };
}

/**
 * Waits until every object of the workload converged, without waiting for the queue to drain
 * (for a case's warm-up phase: its last progress polls may still be pending).
 */
export async function untilConverged(workload: Workload, timeoutMs = 180_000): Promise<void> {
  let last = '';
  await waitUntil(
    `every object in ${workload.namespace} converged`,
    async () => {
      const { pending } = await workload.check();
      last = pending.slice(0, 5).join('; ');
      return pending.length === 0;
    },
    { timeoutMs, intervalMs: 1000, context: () => `first pending: ${last}` },
  );
}

/** The one line every case prints. */
export function caseLine(name: string, startedMs: number, sentBefore: number, env: FaultEnv, result: CaseResult, note = ''): string {
  const seconds = ((Date.now() - startedMs) / 1000).toFixed(1);
  return `fault case: ${name} | ${seconds} s | messages sent ${env.proxy.total() - sentBefore} | reconciles ${result.reconciles} (at most ${result.maxPerObject} per object) | converged ${result.converged}/${result.total}${note ? ` | ${note}` : ''}`;
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}

export async function eachBounded<T>(items: readonly T[], parallel: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Retries an API call for up to 60 s (the API server may be restarting). */
export async function retrying<T>(fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

export const until = (what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> => waitUntil(what, check, { timeoutMs });
