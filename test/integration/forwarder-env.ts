/**
 * Shared setup for the forwarder's integration tests: a small test CRD (`Gadget`, with a
 * status subresource), helpers to create/patch objects through the REAL API server, and a
 * queue reader that drains the REAL broker and decodes messages with the shared contract,
 * `spawnLogged` for the forwarder bundle run as a child process (its JSON log lines), and
 * `startBundleEnv`: the control plane + broker + forwarder bundle the process tests share.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { KubeConfig } from '@kubernetes/client-node';
import { decodeMessage, type ReconcileMessage } from '../../src/contract/message.ts';
import { createKubeApi, type KubeApi } from '../../src/kube/api.ts';
import type { ForwarderConfigInput } from '../../src/forwarder/config/config.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { startBroker, startControlPlane, testCrd, type Broker, type ControlPlane, type QueueSpec } from '../../src/testing/index.ts';

export const GROUP = 'forwarder.test.operless.dev';
export const API_VERSION = `${GROUP}/v1`;

export const GADGET_CRD = testCrd({ group: GROUP, kind: 'Gadget' });

/** A cluster-scoped test kind (`Widget`), for a second primary with its own queue. */
export const WIDGET_CRD = testCrd({ group: GROUP, kind: 'Widget', scope: 'Cluster' });

/** A forwarder config for Gadgets (primary) and Deployments (owned), fast timings for tests. */
export function gadgetConfig(queueUrl: string, region: string, overrides: ForwarderConfigInput = {}): ForwarderConfigInput {
  return {
    clusterId: 'test',
    queue: { url: queueUrl, region },
    primaries: [{ apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true }],
    owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }],
    coalesceWindowMs: 200,
    resyncOnStart: false,
    send: { backoffInitialMs: 50, backoffMaxMs: 1000 },
    watch: { backoffInitialMs: 100, backoffMaxMs: 2000 },
    server: { port: 0, host: '127.0.0.1' },
    ...overrides,
  };
}

export class Objects {
  readonly api: KubeApi;
  constructor(kubeConfig: KubeConfig) {
    this.api = createKubeApi(kubeConfig);
  }

  gadgetPath(namespace: string, name?: string): string {
    return `/apis/${API_VERSION}/namespaces/${namespace}/gadgets${name ? `/${name}` : ''}`;
  }

  async createGadget(namespace: string, name: string, spec: Record<string, unknown> = { size: 1 }): Promise<Record<string, any>> {
    return this.api.requestJson('POST', this.gadgetPath(namespace), { body: { apiVersion: API_VERSION, kind: 'Gadget', metadata: { name, namespace }, spec } });
  }

  async patchGadget(namespace: string, name: string, patch: Record<string, unknown>, subresource = ''): Promise<Record<string, any>> {
    return this.api.requestJson('PATCH', `${this.gadgetPath(namespace, name)}${subresource ? `/${subresource}` : ''}`, {
      body: patch,
      contentType: 'application/merge-patch+json',
    });
  }

  async deleteGadget(namespace: string, name: string): Promise<void> {
    await this.api.requestJson('DELETE', this.gadgetPath(namespace, name));
  }

  async createWidget(name: string, spec: Record<string, unknown> = { size: 1 }): Promise<Record<string, any>> {
    return this.api.requestJson('POST', `/apis/${API_VERSION}/widgets`, { body: { apiVersion: API_VERSION, kind: 'Widget', metadata: { name }, spec } });
  }

  async patchWidget(name: string, patch: Record<string, unknown>): Promise<Record<string, any>> {
    return this.api.requestJson('PATCH', `/apis/${API_VERSION}/widgets/${name}`, { body: patch, contentType: 'application/merge-patch+json' });
  }

  async deleteWidget(name: string): Promise<void> {
    await this.api.requestJson('DELETE', `/apis/${API_VERSION}/widgets/${name}`);
  }

  /** A ConfigMap in `namespace` controlled by an object of any kind (e.g. a cluster-scoped Widget). */
  async createOwnedConfigMap(namespace: string, name: string, owner: { kind: string; name: string; uid: string }): Promise<Record<string, any>> {
    return this.api.requestJson('POST', `/api/v1/namespaces/${namespace}/configmaps`, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace, ownerReferences: [{ apiVersion: API_VERSION, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true }] },
        data: { a: '1' },
      },
    });
  }

  async createNamespace(name: string): Promise<void> {
    await this.api.requestJson('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  }

  /** A Deployment controlled by the gadget (controller owner reference): created, or server-side applied by `applier` as a function would. */
  async createOwnedDeployment(namespace: string, name: string, owner: { name: string; uid: string }, applier?: string): Promise<Record<string, any>> {
    const path = `/apis/apps/v1/namespaces/${namespace}/deployments`;
    return this.api.requestJson(applier ? 'PATCH' : 'POST', applier ? `${path}/${name}?fieldManager=${encodeURIComponent(applier)}&force=true` : path, {
      ...(applier ? { contentType: 'application/apply-patch+yaml' } : {}),
      body: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {
          name,
          namespace,
          ownerReferences: [{ apiVersion: API_VERSION, kind: 'Gadget', name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true }],
        },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: name } },
          template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
        },
      },
    });
  }
}

/** Drains the queue: receives until `until` holds or the timeout passes; deletes what it read. */
export async function collect(
  sqs: SQSClient,
  queueUrl: string,
  options: { until?: (all: ReconcileMessage[]) => boolean; timeoutMs?: number; quietMs?: number } = {},
): Promise<ReconcileMessage[]> {
  const all: ReconcileMessage[] = [];
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    if (options.until?.(all)) break;
    if (!options.until && options.quietMs !== undefined && Date.now() - quietSince >= options.quietMs) break;
    const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const messages = out.Messages ?? [];
    if (messages.length === 0) continue;
    quietSince = Date.now();
    for (const m of messages) {
      const decoded = decodeMessage(m.Body ?? '');
      if (!decoded.ok) throw new Error(`the forwarder sent an invalid message: ${decoded.error}`);
      all.push(decoded.message);
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  return all;
}

export function summary(messages: readonly ReconcileMessage[]): string[] {
  return messages.map((m) => `${m.reason} ${m.kind}/${m.namespace ?? ''}/${m.name}`);
}

/** A child process that logs JSON lines (the forwarder bundle), with a way to wait for a line. */
export interface LoggedChild {
  readonly child: ChildProcess;
  /** The exit code, once the process exited and its last output line was read. */
  readonly exited: Promise<number | null>;
  /** Every JSON log line so far. */
  readonly lines: Record<string, unknown>[];
  /** The last 8 KiB of stderr. */
  stderr(): string;
  /** The first JSON log line (already seen or still to come) whose msg matches; fails when the process exits first. */
  line(msg: RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
}

export function spawnLogged(args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }): LoggedChild {
  const child = spawn(process.execPath, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: options.env });
  const lines: Record<string, unknown>[] = [];
  const waiters: { re: RegExp; resolve: (l: Record<string, unknown>) => void; reject: (err: Error) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text);
    } catch {
      return;
    }
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.re.test(String(line.msg))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-8000)));
  // 'close': after the exit AND the last output line (an 'exit' can come before them).
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  void exited.then((code) => {
    for (const w of waiters.splice(0)) w.reject(new Error(`the process exited (code ${code}) before logging ${w.re}; stderr:\n${stderr}`));
  });
  return {
    child,
    exited,
    lines,
    stderr: () => stderr,
    line(re, timeoutMs = 30_000) {
      const found = lines.find((l) => re.test(String(l.msg)));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no log line ${re} within ${timeoutMs} ms; stderr:\n${stderr}\nlast lines:\n${lines
                  .slice(-10)
                  .map((l) => JSON.stringify(l).slice(0, 600))
                  .join('\n')}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          re,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
          reject: (err) => {
            clearTimeout(timer);
            reject(err);
          },
        });
      });
    },
  };
}

/** A real control plane and broker, and the forwarder bundle the image runs, for tests of the forwarder as a process. */
export interface BundleEnv {
  readonly cp: ControlPlane;
  readonly broker: Broker;
  /** The bundle's folder and its runs' config files (removed by `stop()`). */
  readonly work: string;
  /**
   * Runs the bundle with `config` (written to `<work>/<name>.yaml`) against the control plane,
   * as `kubeconfigPath` (default: the admin's), sending to the broker; killed by `stop()` if still running.
   */
  runBundle(
    name: string,
    config: ForwarderConfigInput | Record<string, unknown>,
    options?: { kubeconfigPath?: string; nodeArgs?: readonly string[] },
  ): LoggedChild;
  /** SIGKILLs every run still going, stops the control plane and the broker, removes `work`. */
  stop(): Promise<void>;
}

/** Starts the control plane (with `crds`) and the broker (with `queues`) side by side, and builds the bundle; on failure stops what started. */
export async function startBundleEnv(options: { name: string; crds: readonly (string | object)[]; queues: readonly QueueSpec[] }): Promise<BundleEnv> {
  const work = mkdtempSync(join(tmpdir(), `${options.name}-`));
  const children = new Set<ChildProcess>();
  const started = await Promise.allSettled([startControlPlane({ crds: options.crds }), startBroker({ queues: options.queues })]);
  const [planeResult, brokerResult] = started;
  const stop = async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)));
    rmSync(work, { recursive: true, force: true });
  };
  if (planeResult.status === 'rejected' || brokerResult.status === 'rejected') {
    await stop();
    throw planeResult.status === 'rejected' ? planeResult.reason : (brokerResult as PromiseRejectedResult).reason;
  }
  const cp = planeResult.value;
  const broker = brokerResult.value;
  let bundle: string;
  try {
    bundle = (await bundleForwarder(join(work, 'forwarder.mjs'))).outFile;
  } catch (err) {
    await stop();
    throw err;
  }
  const runBundle: BundleEnv['runBundle'] = (name, config, runOptions = {}) => {
    const path = join(work, `${name}.yaml`);
    writeFileSync(path, stringify(config));
    const run = spawnLogged([...(runOptions.nodeArgs ?? []), bundle], {
      cwd: work,
      env: {
        PATH: process.env.PATH,
        OPERLESS_FORWARDER_CONFIG: path,
        KUBECONFIG: runOptions.kubeconfigPath ?? cp.kubeconfigPath,
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_ENDPOINT_URL_SQS: broker.endpoint,
      },
    });
    children.add(run.child);
    void run.exited.then(() => children.delete(run.child));
    return run;
  };
  return { cp, broker, work, runBundle, stop };
}
