/**
 * What each system costs the cluster per converged object (issue 33): the API server's and
 * etcd's CPU and the API requests, for a convergence of N new objects, a steady stream of spec
 * updates, and a no-op resync of converged objects — pinned (the control plane on one CPU, the
 * operator side on the other, bench/lib/pinning.ts) and unpinned. The figures per object are the
 * ones a platform team pays on a shared control plane; wall-clock figures beside them depend on
 * the machine and its neighbours.
 *
 * - convergence: scenarios/convergence.ts; per object = ÷ N;
 * - steady: scenarios/lag.ts; per object = ÷ updates whose status was seen;
 * - no-op resync: N objects converged (the system watching as usual), settled, then one resync of
 *   every object (controller-runtime: its cache's own periodic resync; Operless: a `Resync` per
 *   object, as the forwarder's resync sends) with the controller manager and the simulated
 *   kubelet stopped (scenarios/api-cost.ts's window); per object = ÷ N.
 *
 * Rows are pure data (`perObjectRow`); `measureResync` talks to the control plane.
 */
import { perUnit, type ClusterCost, type PerUnit } from '../lib/cluster-cost.ts';
import { createMemcacheds, names } from '../lib/objects.ts';
import type { Pinning, PinReport } from '../lib/pinning.ts';
import type { BenchEnv, SystemUnderTest } from '../lib/systems.ts';
import { startTracker } from '../lib/tracker.ts';
import { settle, window } from './api-cost.ts';

export const WORKLOADS = ['convergence', 'steady', 'resync'] as const;
export type Workload = (typeof WORKLOADS)[number];

export interface PerObjectRow {
  readonly pinning: Pinning;
  readonly system: string;
  readonly workload: Workload;
  /** N of a convergence or a resync; updates per second of a steady stream. */
  readonly size: number;
  /** Objects converged: N, or the updates whose status was seen. */
  readonly objects: number;
  readonly reconciles: number;
  /** Wall-clock seconds of the window (convergence: until all Available). */
  readonly seconds: number;
  readonly cluster: ClusterCost;
  readonly perObject: PerUnit;
  readonly perReconcile: PerUnit;
  /** Steady: lag from an update to its status, ms. */
  readonly lag?: { readonly p50: number; readonly p99: number };
  readonly pins: readonly PinReport[];
}

export interface PerObjectResult {
  readonly rows: PerObjectRow[];
  /** Runs that did not complete, with why (e.g. a convergence past its timeout). */
  readonly failed?: string[];
}

/** A row from one run's figures. Pure. */
export function perObjectRow(run: Omit<PerObjectRow, 'perObject' | 'perReconcile'>): PerObjectRow {
  return { ...run, perObject: perUnit(run.cluster, run.objects), perReconcile: perUnit(run.cluster, run.reconciles) };
}

/** "convergence N = 1000", "steady 10 updates/s", "no-op resync of 1000". Pure. */
export function workloadName(workload: Workload, size: number): string {
  return workload === 'convergence' ? `convergence N = ${size}` : workload === 'steady' ? `steady ${size} updates/s` : `no-op resync of ${size}`;
}

/** A no-op resync of `n` converged objects; its window's cost, reconciles and seconds, and the pinning read back. */
export async function measureResync(
  env: BenchEnv,
  namespace: string,
  start: (namespace: string) => Promise<SystemUnderTest> | SystemUnderTest,
  n: number,
  timeoutMs: number,
): Promise<{ cluster: ClusterCost; reconciles: number; pins: readonly PinReport[] }> {
  await env.namespace(namespace);
  const system = await start(namespace);
  const tracker = await startTracker(env.cp.kubeConfig, namespace);
  try {
    await system.ready;
    const list = names('rs', n);
    await createMemcacheds(env.admin, namespace, list, 1);
    await tracker.whenAllAvailable(list, timeoutMs);
    // Available comes before the rollout settles; a resync then still writes. Settled: a round
    // of Resyncs wrote nothing to the Memcacheds.
    await settle(env, system, namespace, list);
    const pins = env.verifyPins(system.processes);
    await system.stopWatching();
    const w = await window(env, system, namespace, list, 'Resync', true);
    return { cluster: w.cluster, reconciles: w.reconciles, pins };
  } finally {
    await tracker.stop();
    await system.stop();
  }
}
