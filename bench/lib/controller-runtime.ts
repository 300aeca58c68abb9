/**
 * controller-runtime itself as a system under test: the Go Memcached operator of
 * `bench/controller-runtime` (the operator-sdk tutorial's logic on controller-runtime, informer
 * cache, `MaxConcurrentReconciles` workers), built once into the version-keyed cache by
 * `src/testing/provision.ts` (`controller-runtime` target) and run as its own process against
 * the benchmark's control plane, watching one namespace.
 *
 * Reconciles are counted from the operator's own metrics endpoint
 * (`controller_runtime_reconcile_total`, every result: success, error, requeue), scraped in the
 * background and on `refresh()`. The operator's bench hooks (bench/controller-runtime/bench.go)
 * give it what the API-cost scenario asks of every system: `enqueue` posts the names to its
 * `source.Channel` (one reconcile each), `stopWatching` closes the gate on its informers' events
 * (the cache stays live: that is how it reads), and `periodicResync` opens the gate for one of
 * the cache's own periodic resyncs (`syncPeriodSeconds`); `startWatching` opens the gate until
 * it is closed again (the bulk-lane scenario: live changes and the periodic resync together).
 * The work queue's depth (`workqueue_depth`) is scraped with the reconciles. Guarantees: `ready` resolves once every
 * informer synced (the process says so on stdout) and rejects if the process exits first, with
 * its stderr; `stop()` sends SIGTERM and waits for the exit (SIGKILL after a grace period), and
 * reports the process's resident memory just before it.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { provision } from '../../src/testing/provision.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { metricSamples } from './apiserver-metrics.ts';
import { processCpuSeconds, processMemory, stopProcess, type ProcessMemory } from './process.ts';
import type { BenchEnv, SystemUnderTest } from './systems.ts';

/** `controller_runtime_reconcile_total` of one controller, by result and in all. Pure. */
export function parseReconcileTotals(text: string, controller: string): { total: number; byResult: Record<string, number> } {
  const byResult: Record<string, number> = {};
  let total = 0;
  for (const { labels, value } of metricSamples(text, 'controller_runtime_reconcile_total')) {
    if (labels.controller !== controller) continue;
    const result = labels.result ?? 'unknown';
    byResult[result] = (byResult[result] ?? 0) + value;
    total += value;
  }
  return { total, byResult };
}

/** `workqueue_depth` of one controller's work queue (labelled `name`, and `controller` where the version adds it). Pure. */
export function parseQueueDepth(text: string, controller: string): number | undefined {
  let depth: number | undefined;
  for (const { labels, value } of metricSamples(text, 'workqueue_depth')) {
    if (labels.name !== controller && labels.controller !== controller) continue;
    depth = (depth ?? 0) + value;
  }
  return depth;
}

/** A line the operator prints on stdout, or undefined for anything else. Pure. */
export function parseOperatorLine(line: string): { event: 'metrics'; address: string } | { event: 'ready' } | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as { event?: unknown; address?: unknown };
    if (parsed.event === 'ready') return { event: 'ready' };
    if (parsed.event === 'metrics' && typeof parsed.address === 'string') return { event: 'metrics', address: parsed.address };
  } catch {
    // not one of ours
  }
  return undefined;
}

export interface ControllerRuntimeOptions {
  readonly namespace: string;
  /** MaxConcurrentReconciles. */
  readonly workers: number;
  readonly label?: string;
  /** Start with the gate on the informers' events closed (`--paused`): it reconciles only what `enqueue` asks. */
  readonly paused?: boolean;
  /** The cache's periodic resync (`--sync-period`); controller-runtime's default (10 h) when absent. */
  readonly syncPeriodSeconds?: number;
  /** Reports the process's memory when it stops. */
  readonly onStop?: (memory: ProcessMemory | undefined, reconciles: Record<string, number>) => void;
}

export interface ControllerRuntimeSystem extends SystemUnderTest {
  readonly pid: number;
  /** Reconciles by result (success, error, requeue, requeue_after) as last scraped. */
  byResult(): Record<string, number>;
  /** Opens the gate on the informers' events until the cache's next periodic resync reconciled `n` objects, then closes it. */
  periodicResync(n: number, timeoutMs: number): Promise<void>;
  /** Opens the gate on the informers' events (watch events and periodic resyncs enqueue again) until `stopWatching`. */
  startWatching(): Promise<void>;
  /** The work queue's depth as last scraped, and the largest scraped since `resetMaxQueueDepth` (undefined before a scrape found it). */
  queueDepth(): { now: number | undefined; max: number | undefined };
  resetMaxQueueDepth(): void;
  memory(): ProcessMemory | undefined;
  cpuSeconds(): number;
}

const CONTROLLER = 'memcached';

export async function startControllerRuntime(env: BenchEnv, options: ControllerRuntimeOptions): Promise<ControllerRuntimeSystem> {
  const binary = (await provision({ targets: ['controller-runtime'] })).controllerRuntimeOperator;
  if (!binary) throw new Error('provisioning controller-runtime returned no binary');
  const args = [`--namespace=${options.namespace}`, `--workers=${options.workers}`];
  if (options.paused) args.push('--paused');
  if (options.syncPeriodSeconds !== undefined) args.push(`--sync-period=${options.syncPeriodSeconds}s`);
  const child = spawn(binary, args, {
    env: { ...process.env, KUBECONFIG: env.cp.kubeconfigPath },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderrTail = '';
  child.stderr.on('data', (c: Buffer) => (stderrTail = (stderrTail + c.toString()).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let metricsUrl: string | undefined;
  let counts = { total: 0, byResult: {} as Record<string, number> };
  let depth: number | undefined;
  let maxDepth: number | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    void exited.then((code) => reject(new Error(`the controller-runtime operator exited (${code}) before it was ready:\n${stderrTail.trim()}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const said = parseOperatorLine(line);
      if (said?.event === 'metrics') metricsUrl = `http://${said.address}/metrics`;
      else if (said?.event === 'ready') resolve();
    });
  });
  const scrape = async () => {
    if (!metricsUrl) return;
    const res = await fetch(metricsUrl);
    if (!res.ok) throw new Error(`GET ${metricsUrl} answered ${res.status}`);
    const text = await res.text();
    counts = parseReconcileTotals(text, CONTROLLER);
    depth = parseQueueDepth(text, CONTROLLER);
    if (depth !== undefined) maxDepth = Math.max(maxDepth ?? 0, depth);
  };
  const hook = async (path: string, body?: unknown) => {
    if (!metricsUrl) throw new Error('the controller-runtime operator has not said where it listens yet');
    const res = await fetch(new URL(path, metricsUrl), {
      method: 'POST',
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } }),
    });
    if (!res.ok) throw new Error(`POST ${path} answered ${res.status}: ${(await res.text()).trim()}`);
  };
  let stopped = false;
  const poller = setInterval(() => void scrape().catch(() => undefined), 250);
  const pid = child.pid ?? -1;
  return {
    label: options.label ?? `controller-runtime (${options.workers} workers)`,
    pid,
    processes: [{ name: 'controller-runtime operator', pid }],
    ready,
    reconciles: () => counts.total,
    byResult: () => ({ ...counts.byResult }),
    refresh: scrape,
    async enqueue(namespace, names) {
      for (let i = 0; i < names.length; i += 500) await hook('/bench/enqueue', { namespace, names: names.slice(i, i + 500) });
    },
    async stopWatching() {
      await hook('/bench/events?on=false');
    },
    async startWatching() {
      await hook('/bench/events?on=true');
    },
    queueDepth: () => ({ now: depth, max: maxDepth }),
    resetMaxQueueDepth() {
      maxDepth = depth;
    },
    async periodicResync(n, timeoutMs) {
      if (options.syncPeriodSeconds === undefined) throw new Error('periodicResync needs syncPeriodSeconds: the default resync is 10 h away');
      await scrape();
      const before = counts.total;
      await hook('/bench/events?on=true');
      try {
        await waitUntil(
          `the periodic resync reconciled ${n} objects`,
          async () => {
            await scrape();
            return counts.total - before >= n;
          },
          { timeoutMs, intervalMs: 100 },
        );
      } finally {
        await hook('/bench/events?on=false');
      }
    },
    memory: () => processMemory(pid),
    cpuSeconds: () => processCpuSeconds(pid),
    async stop() {
      if (stopped) return;
      stopped = true;
      await scrape().catch(() => undefined);
      clearInterval(poller);
      options.onStop?.(processMemory(pid), { ...counts.byResult });
      await stopProcess(child);
    },
  };
}
