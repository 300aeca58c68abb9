/**
 * controller-runtime itself as a system under test: the Go Memcached operator of
 * `bench/controller-runtime` (the operator-sdk tutorial's logic on controller-runtime, informer
 * cache, `MaxConcurrentReconciles` workers), built once into the version-keyed cache by
 * `src/testing/provision.ts` (`controller-runtime` target) and run as its own process against
 * the benchmark's control plane, watching one namespace.
 *
 * Reconciles are counted from the operator's own metrics endpoint
 * (`controller_runtime_reconcile_total`, every result: success, error, requeue), scraped in the
 * background and on `refresh()`. Guarantees: `ready` resolves once every informer synced (the
 * process says so on stdout) and rejects if the process exits first, with its stderr; `stop()`
 * sends SIGTERM and waits for the exit (SIGKILL after a grace period), and reports the
 * process's resident memory just before it.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { provision } from '../../src/testing/provision.ts';
import { metricSamples } from './apiserver-metrics.ts';
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

/** Resident and peak resident memory of a process (MiB), from /proc; undefined when gone. */
export function processMemoryMiB(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

export interface ControllerRuntimeOptions {
  readonly namespace: string;
  /** MaxConcurrentReconciles. */
  readonly workers: number;
  readonly label?: string;
  /** Reports the process's memory when it stops. */
  readonly onStop?: (memory: { rss: number; peak: number } | undefined, reconciles: Record<string, number>) => void;
}

export interface ControllerRuntimeSystem extends SystemUnderTest {
  readonly pid: number;
  /** Reconciles by result (success, error, requeue, requeue_after) as last scraped. */
  byResult(): Record<string, number>;
}

const CONTROLLER = 'memcached';

export async function startControllerRuntime(env: BenchEnv, options: ControllerRuntimeOptions): Promise<ControllerRuntimeSystem> {
  const binary = (await provision({ targets: ['controller-runtime'] })).controllerRuntimeOperator;
  if (!binary) throw new Error('provisioning controller-runtime returned no binary');
  const child = spawn(binary, [`--namespace=${options.namespace}`, `--workers=${options.workers}`], {
    env: { ...process.env, KUBECONFIG: env.cp.kubeconfigPath },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderrTail = '';
  child.stderr.on('data', (c: Buffer) => (stderrTail = (stderrTail + c.toString()).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let metricsUrl: string | undefined;
  let counts = { total: 0, byResult: {} as Record<string, number> };
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
    counts = parseReconcileTotals(await res.text(), CONTROLLER);
  };
  let stopped = false;
  const poller = setInterval(() => void scrape().catch(() => undefined), 250);
  const pid = child.pid ?? -1;
  return {
    label: options.label ?? `controller-runtime (${options.workers} workers)`,
    pid,
    ready,
    reconciles: () => counts.total,
    byResult: () => ({ ...counts.byResult }),
    refresh: scrape,
    async enqueue() {
      throw new Error('the controller-runtime system has no enqueue: its work queue is fed by its informers only');
    },
    async stopWatching() {
      throw new Error('the controller-runtime system cannot pause its watches');
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await scrape().catch(() => undefined);
      clearInterval(poller);
      options.onStop?.(processMemoryMiB(pid), { ...counts.byResult });
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
