/**
 * The forwarder as it ships, as its own process: its esbuild bundle (built once per bench
 * environment) under the image's Node.js flags (src/build/forwarder-node-flags.ts), a config file,
 * the control plane's kubeconfig and an SQS endpoint. What the cluster runs for Operless, so
 * its memory and CPU are measured apart from the bench process.
 *
 * Guarantees: `startForwarderProcess` resolves once the forwarder logged `forwarder running`
 * (every watch synced) with its probe server's URL, and rejects with the process's last lines if
 * it exits first or does not get there in time; `stop()` ends it (SIGTERM, then SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import type { Controller } from '../../src/core/controller/controller.ts';
import { FORWARDER_NODE_FLAGS } from '../../src/build/forwarder-node-flags.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { stopProcess } from './process.ts';
import { waitUntil } from '../../src/testing/wait.ts';

export interface ForwarderProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Base URL of /healthz, /readyz, /metrics. */
  readonly probes: string;
  /** The last lines it printed (JSON logs). */
  readonly lines: readonly string[];
  /** How many log lines with this `msg` it printed so far. */
  logged(msg: string): number;
  /** When it was spawned (ms since the epoch). */
  readonly startedAt: number;
  stop(): Promise<void>;
}

const bundles = new Map<string, Promise<{ outFile: string; bytes: number }>>();

/** The forwarder bundle, built once into `workDir`. */
export function forwarderBundle(workDir: string): Promise<{ outFile: string; bytes: number }> {
  let bundle = bundles.get(workDir);
  if (!bundle) {
    bundle = bundleForwarder(join(workDir, 'forwarder.mjs'));
    bundles.set(workDir, bundle);
  }
  return bundle;
}

/**
 * The environment a bench forwarder process runs with: its configuration file, the cluster's
 * kubeconfig, the SQS endpoint (bench credentials), info logs, and nothing else of the bench's.
 */
export function forwarderEnv(configPath: string, kubeconfigPath: string, sqsEndpoint: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    OPERLESS_FORWARDER_CONFIG: configPath,
    OPERLESS_LOG_LEVEL: 'info',
    KUBECONFIG: kubeconfigPath,
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_ENDPOINT_URL_SQS: sqsEndpoint,
  };
}

export interface ForwarderProcessOptions {
  readonly workDir: string;
  readonly kubeconfigPath: string;
  /** The SQS endpoint the AWS SDK sends to (the counting proxy, or the queue itself). */
  readonly sqsEndpoint: string;
  /** The forwarder's configuration (src/forwarder/config/schema.ts), written to `<workDir>/<name>.yaml`. */
  readonly config: Record<string, unknown>;
  readonly name: string;
  readonly readyTimeoutMs?: number;
}

export async function startForwarderProcess(options: ForwarderProcessOptions): Promise<ForwarderProcess> {
  const bundle = await forwarderBundle(options.workDir);
  const configPath = join(options.workDir, `${options.name}.yaml`);
  writeFileSync(configPath, stringify({ server: { port: 0, host: '127.0.0.1' }, ...options.config }));
  const startedAt = Date.now();
  const child = spawn(process.execPath, [...FORWARDER_NODE_FLAGS, bundle.outFile], {
    // as the image runs it (infra/forwarder/Dockerfile)
    stdio: ['ignore', 'pipe', 'pipe'],
    env: forwarderEnv(configPath, options.kubeconfigPath, options.sqsEndpoint),
  });
  const lines: string[] = [];
  const counts = new Map<string, number>();
  let probes = '';
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      if (lines.length > 200) lines.shift();
      try {
        const parsed = JSON.parse(line) as { msg?: unknown; probes?: unknown };
        if (typeof parsed.msg === 'string') counts.set(parsed.msg, (counts.get(parsed.msg) ?? 0) + 1);
        if (!probes && parsed.msg === 'forwarder running' && typeof parsed.probes === 'string') probes = parsed.probes;
      } catch {
        // not a log line of ours
      }
    });
  }
  const stop = () => stopProcess(child);
  try {
    await waitUntil('the forwarder process is running (every watch synced)', () => probes !== '' || child.exitCode !== null, {
      timeoutMs: options.readyTimeoutMs ?? 600_000,
      intervalMs: 50,
      context: () => lines.slice(-10).join('\n'),
    });
    if (!probes) throw new Error(`the forwarder exited with ${child.exitCode} before it was running:\n${lines.slice(-10).join('\n')}`);
  } catch (err) {
    await stop();
    throw err;
  }
  return { child, pid: child.pid!, probes, lines, startedAt, stop, logged: (msg) => counts.get(msg) ?? 0 };
}

/** A watch of the forwarder's configuration, limited to namespaces. */
export interface NamespacedWatch {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly namespaces: string[];
}

/** The forwarder's `primaries` and `owned` watches of a controller, limited to one namespace. Pure. */
export function controllerWatches(controller: Controller<KubeObject>, namespace: string): { primaries: NamespacedWatch[]; owned: NamespacedWatch[] } {
  const kind = (k: { apiVersion: string; kind: string; plural: string; namespaced: boolean }): NamespacedWatch => ({
    apiVersion: k.apiVersion,
    kind: k.kind,
    plural: k.plural,
    namespaced: k.namespaced,
    namespaces: [namespace],
  });
  return { primaries: [kind(controller.kind)], owned: (controller.spec.owns ?? []).map(kind) };
}
