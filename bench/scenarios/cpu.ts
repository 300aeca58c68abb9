/**
 * CPU of the always-on side per 1000 reconciles: what runs in the cluster all the time and so
 * what a user pays for whatever the load — controller-runtime's whole operator process, and for
 * Operless the forwarder (its bundle as its own process; the reconciles run in Lambda, billed per
 * invocation, see the cost model). The workload is a convergence of N new objects
 * (scenarios/convergence.ts) on a fresh control plane; the process's user + system CPU seconds
 * (`/proc/<pid>/stat`) from the first create until every object is Available, per 1000
 * reconciles the system counted and per 1000 objects converged (the systems run different
 * numbers of reconciles for the same work: controller-runtime one per watch event, Operless
 * fewer, coalesced).
 */
import { measureConvergence } from './convergence.ts';
import type { BenchEnv, SystemUnderTest } from '../lib/systems.ts';

export interface CpuRow {
  readonly system: string;
  /** Which process was measured. */
  readonly process: string;
  readonly objects: number;
  readonly seconds: number;
  readonly reconciles: number;
  readonly cpuSeconds: number;
  readonly perThousandReconciles: number;
  readonly perThousandObjects: number;
}

/** The row of one convergence run. Pure. */
export function cpuRow(system: string, process: string, objects: number, run: { seconds: number; reconciles: number; cpuSeconds: number }): CpuRow {
  return {
    system,
    process,
    objects,
    seconds: run.seconds,
    reconciles: run.reconciles,
    cpuSeconds: run.cpuSeconds,
    perThousandReconciles: run.reconciles > 0 ? (run.cpuSeconds / run.reconciles) * 1000 : Number.NaN,
    perThousandObjects: objects > 0 ? (run.cpuSeconds / objects) * 1000 : Number.NaN,
  };
}

export async function measureAlwaysOnCpu(
  env: BenchEnv,
  namespace: string,
  system: { label: string; process: string; start: (namespace: string) => Promise<SystemUnderTest> },
  n: number,
  timeoutMs: number,
): Promise<CpuRow> {
  const r = await measureConvergence(env, namespace, system.start, n, 1, timeoutMs);
  if (r.alwaysOnCpuSeconds === undefined) throw new Error(`${system.label}: no always-on process to measure`);
  return cpuRow(system.label, system.process, n, { seconds: r.seconds, reconciles: r.reconciles, cpuSeconds: r.alwaysOnCpuSeconds });
}
