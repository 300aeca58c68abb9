/**
 * The local pipeline as separate processes, each under its own least-privilege identity,
 * for the secret-leak scan and the soak: a real kube-apiserver (+ etcd, + kube-controller-manager's
 * garbage collector), ElasticMQ, the
 * forwarder's esbuild bundle as a child process configured with the ConfigMap of the rendered
 * manifests and running as their ServiceAccount (RBAC applied as shipped), and the Memcached
 * function in a Lambda-like runner process (test/security/function-runner.ts) as a user in
 * the group `operless:memcached` (infra/rbac). Every stdout/stderr line of both processes is
 * kept, and the runner prints every queue message body it receives.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { startBroker, startControlPlane, type Broker, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { applyForwarderIdentity, applyMemcachedFunctionIdentity } from '../support/identities.ts';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const CRD = join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml');

export interface Pipeline {
  readonly cp: ControlPlane;
  readonly broker: Broker;
  readonly forwarderIdentity: Identity;
  readonly functionIdentity: Identity;
  readonly forwarder: ChildProcess;
  readonly runner: ChildProcess;
  /** Every line either process wrote, stdout and stderr. */
  readonly forwarderLines: string[];
  readonly functionLines: string[];
  /** Every queue message body the function received. */
  bodies(): string[];
  /** SIGTERM both processes (they flush and exit); the servers keep running. */
  stopProcesses(): Promise<void>;
  /** Processes, then broker and control plane. Idempotent. */
  stop(): Promise<void>;
}

export interface PipelineOptions {
  readonly work: string;
  /** Extra environment for both processes (e.g. planted credentials). */
  readonly env?: Record<string, string>;
  readonly logLevel?: 'debug' | 'info';
  readonly coalesceWindowMs?: number;
}

function lines(child: ChildProcess, into: string[]): void {
  createInterface({ input: child.stdout! }).on('line', (l) => into.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => into.push(l));
}

export const until = (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000, intervalMs = 250): Promise<void> =>
  waitUntil(what, check, { timeoutMs, intervalMs });

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

export async function startPipeline(options: PipelineOptions): Promise<Pipeline> {
  const { work } = options;
  const [cp, broker] = await Promise.all([
    // The garbage collector deletes a deleted Memcached's Deployment, so a re-created object
    // of the same name is not blocked by its predecessor's children (as in a real cluster).
    startControlPlane({ crds: [CRD], controllers: true }),
    startBroker({ queues: [{ name: 'work', visibilityTimeoutSeconds: 60, dlq: { name: 'work-dlq', maxReceiveCount: 5 } }] }),
  ]);
  // Identities, exactly as shipped.
  const functionIdentity = await applyMemcachedFunctionIdentity(cp);
  const shipped = await applyForwarderIdentity(cp);
  const forwarderIdentity = shipped.identity;

  // The forwarder: the rendered ConfigMap's config, pointed at the local broker.
  const config = {
    ...shipped.config,
    clusterId: 'local',
    queue: { url: broker.queueUrl('work'), region: broker.region },
    server: { port: 0, host: '127.0.0.1' },
    coalesceWindowMs: options.coalesceWindowMs ?? 100,
  };
  writeFileSync(join(work, 'forwarder.yaml'), stringify(config));
  const bundle = (await bundleForwarder(join(work, 'forwarder.mjs'))).outFile;
  const forwarderLines: string[] = [];
  const common = {
    PATH: process.env.PATH ?? '',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: broker.region,
    AWS_ENDPOINT_URL_SQS: broker.endpoint,
    OPERLESS_LOG_LEVEL: options.logLevel ?? 'info',
    ...options.env,
  };
  const forwarder = spawn(process.execPath, [bundle], {
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...common,
      OPERLESS_FORWARDER_CONFIG: join(work, 'forwarder.yaml'),
      KUBECONFIG: forwarderIdentity.kubeconfigPath,
      POD_NAMESPACE: shipped.namespace,
      POD_NAME: 'forwarder-0',
    },
  });
  lines(forwarder, forwarderLines);

  const functionLines: string[] = [];
  const runner = spawn(process.execPath, [join(ROOT, 'test/security/function-runner.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...common,
      OPERLESS_TEST_RUNNER: JSON.stringify({ queueUrl: broker.queueUrl('work'), endpoint: broker.endpoint, region: broker.region }),
      OPERLESS_QUEUE_URL: broker.queueUrl('work'),
      OPERLESS_DLQ_URL: broker.queueUrl('work-dlq'),
      OPERLESS_CLUSTER: 'local',
      OPERLESS_KUBECONFIG: functionIdentity.kubeconfigPath,
      OPERLESS_METRICS: 'off',
    },
  });
  lines(runner, functionLines);

  const stopProcesses = async () => {
    for (const child of [forwarder, runner]) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([Promise.all([exited(forwarder), exited(runner)]), new Promise((r) => setTimeout(r, 30_000))]);
    for (const child of [forwarder, runner]) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const stop = async () => {
    await stopProcesses();
    await Promise.all([broker.stop(), cp.stop()]);
  };
  try {
    await until('the forwarder is running', () => forwarderLines.some((l) => l.includes('forwarder running')), 60_000);
    await until('the function runner is running', () => functionLines.some((l) => l.includes('function runner started')), 60_000);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\nforwarder:\n${forwarderLines.slice(-20).join('\n')}\nfunction:\n${functionLines.slice(-20).join('\n')}`);
  }
  return {
    cp,
    broker,
    forwarderIdentity,
    functionIdentity,
    forwarder,
    runner,
    forwarderLines,
    functionLines,
    stop,
    stopProcesses,
    bodies: () =>
      functionLines.flatMap((l) => {
        try {
          const o = JSON.parse(l) as { msg?: string; body?: string };
          return o.msg === 'queue record' && typeof o.body === 'string' ? [o.body] : [];
        } catch {
          return [];
        }
      }),
  };
}
