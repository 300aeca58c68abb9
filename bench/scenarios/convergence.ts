/**
 * Convergence: N new Memcached objects created at once; the time from the first create
 * until every one is `Available` at its current generation (seen by the shared tracker).
 * For a system whose always-on part is its own process (`cpuSeconds`), also the CPU seconds
 * that process used over the same time. Also the API server's requests over the same window
 * (the whole cluster's, watches excluded: the controller manager and the simulated kubelet
 * count too, alike for every system) and the conflicts among them (409: a lost
 * optimistic-concurrency write or a failed precondition, each one a retried reconcile).
 */
import { requestDelta } from '../lib/apiserver-metrics.ts';
import { costSince, type ClusterCost } from '../lib/cluster-cost.ts';
import { processCpuShares, processCpuSnapshot } from '../lib/machine.ts';
import type { PinReport } from '../lib/pinning.ts';
import { createMemcacheds, names } from '../lib/objects.ts';
import type { BenchEnv, SystemUnderTest } from '../lib/systems.ts';
import { startTracker } from '../lib/tracker.ts';

export interface ConvergenceResult {
  readonly seconds: number;
  readonly reconciles: number;
  readonly createSeconds: number;
  /** API requests answered over the run (whole cluster, no watches). */
  readonly apiRequests: number;
  /** Of those, the 409 answers, by `VERB resource[/subresource]`. */
  readonly conflicts: Readonly<Record<string, number>>;
  /** Cores each process kept busy from the first create until converged (≥ 0.05), busiest first. */
  readonly processCores: Readonly<Record<string, number>>;
  /** CPU seconds of the system's always-on process from the first create until converged, when it has one. */
  readonly alwaysOnCpuSeconds?: number;
  /** What the run cost the API server and etcd, from the first create until the reconciles were counted. */
  readonly cluster: ClusterCost;
  /** The CPUs each process was allowed, read back once converged (bench/lib/pinning.ts). */
  readonly pins: readonly PinReport[];
}

export async function measureConvergence(
  env: BenchEnv,
  namespace: string,
  start: (namespace: string) => Promise<SystemUnderTest> | SystemUnderTest,
  n: number,
  size: number,
  timeoutMs: number,
): Promise<ConvergenceResult> {
  await env.namespace(namespace);
  const system = await start(namespace);
  const tracker = await startTracker(env.cp.kubeConfig, namespace);
  try {
    await system.ready;
    const list = names('mc', n);
    await system.refresh?.();
    const before = system.reconciles();
    const cpuBefore = system.cpuSeconds?.();
    const requestsBefore = await env.apiRequestSnapshot();
    const clusterBefore = await env.clusterSnapshot();
    const processes = processCpuSnapshot();
    const t0 = Date.now();
    await createMemcacheds(env.admin, namespace, list, size);
    const created = Date.now();
    const done = await tracker.whenAllAvailable(list, timeoutMs);
    const processCores = processCpuShares(processes, processCpuSnapshot(), 0);
    const cpuAfter = system.cpuSeconds?.();
    const pins = env.verifyPins(system.processes);
    // Reconciles are counted when they end (Operless: when the runner deleted the records), which
    // may be after their status was seen: count once the count held still for 1 s (at most 10 s).
    await settledCount(system);
    const cluster = costSince(clusterBefore, await env.clusterSnapshot());
    const requestsAfter = await env.apiRequestSnapshot();
    const apiRequests = Object.values(requestDelta(requestsBefore.all, requestsAfter.all)).reduce((a, b) => a + b, 0);
    const conflicts = requestDelta(requestsBefore.conflicts, requestsAfter.conflicts);
    const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? { alwaysOnCpuSeconds: cpuAfter - cpuBefore } : {};
    return {
      seconds: (done - t0) / 1000,
      reconciles: system.reconciles() - before,
      createSeconds: (created - t0) / 1000,
      apiRequests,
      conflicts,
      processCores,
      cluster,
      pins,
      ...cpu,
    };
  } finally {
    await tracker.stop();
    await system.stop();
  }
}

async function settledCount(system: SystemUnderTest): Promise<void> {
  const deadline = Date.now() + 10_000;
  let last = -1;
  while (Date.now() < deadline) {
    await system.refresh?.();
    const now = system.reconciles();
    if (now === last) return;
    last = now;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
