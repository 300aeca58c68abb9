/**
 * Lag: a steady stream of spec updates (spec.size toggled 1 ↔ 2 round-robin over a pool of
 * converged objects) at `rate` per second for `seconds`; per update, the time from sending
 * it to the tracker seeing `status.observedGeneration` reach the update's generation; with
 * the reconciles the system ran meanwhile and how busy the machine was.
 */
import { costSince, type ClusterCost } from '../lib/cluster-cost.ts';
import type { PinReport } from '../lib/pinning.ts';
import { busyShare, cpuSnapshot, processCpuShares, processCpuSnapshot } from '../lib/machine.ts';
import { percentile } from '../lib/stats.ts';
import { createMemcacheds, names, setSize, sleep } from '../lib/objects.ts';
import type { BenchEnv, SystemUnderTest } from '../lib/systems.ts';
import { startTracker } from '../lib/tracker.ts';

export interface LagResult {
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly updates: number;
  /** Updates whose status was never written within the drain timeout. */
  readonly lost: number;
  /** Reconciles the system ran from the first update until the last status was seen. */
  readonly reconciles: number;
  /** Busy share of the machine's CPUs over the same time (Linux), 0..1. */
  readonly machineBusy: number | undefined;
  /** Cores each process kept busy over the updates (≥ 0.05), busiest first. */
  readonly processCores: Readonly<Record<string, number>>;
  readonly samples: number[];
  /** What the updates cost the API server and etcd, from the first update until the last status was seen. */
  readonly cluster: ClusterCost;
  /** The CPUs each process was allowed, read back after the updates (bench/lib/pinning.ts). */
  readonly pins: readonly PinReport[];
}

export async function measureLag(
  env: BenchEnv,
  namespace: string,
  start: (namespace: string) => Promise<SystemUnderTest> | SystemUnderTest,
  options: {
    pool: number;
    rate: number;
    seconds: number;
    /** Experiments: each update's object, generation, when it was sent and when its status was seen. */
    onSample?: (sample: { name: string; generation: number; sent: number; seen: number }) => void;
  },
): Promise<LagResult> {
  await env.namespace(namespace);
  const system = await start(namespace);
  const tracker = await startTracker(env.cp.kubeConfig, namespace);
  try {
    await system.ready;
    const pool = names('lag', options.pool);
    await createMemcacheds(env.admin, namespace, pool, 1);
    await tracker.whenAllAvailable(pool, 180_000);
    const sizes = new Map(pool.map((n) => [n, 1]));
    const samples: number[] = [];
    const pending: Promise<void>[] = [];
    const total = Math.round(options.rate * options.seconds);
    await system.refresh?.();
    const before = system.reconciles();
    const cpu = cpuSnapshot();
    const processes = processCpuSnapshot();
    const clusterBefore = await env.clusterSnapshot();
    const t0 = Date.now();
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / options.rate;
      if (due > Date.now()) await sleep(due - Date.now());
      const name = pool[i % pool.length]!;
      const size = sizes.get(name) === 1 ? 2 : 1;
      sizes.set(name, size);
      const sent = Date.now();
      pending.push(
        setSize(env.admin, namespace, name, size).then(async (generation) => {
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 60_000 + options.seconds * 1000)));
          const seen = await Promise.race([tracker.whenObserved(name, generation), timeout]);
          clearTimeout(timer);
          if (seen === undefined) return;
          samples.push(seen - sent);
          options.onSample?.({ name, generation, sent, seen });
        }),
      );
    }
    await Promise.all(pending);
    const cluster = costSince(clusterBefore, await env.clusterSnapshot());
    const pins = env.verifyPins(system.processes);
    await system.refresh?.();
    const reconciles = system.reconciles() - before;
    const machineBusy = busyShare(cpu, cpuSnapshot());
    const processCores = processCpuShares(processes, processCpuSnapshot(), 0);
    return {
      p50: percentile(samples, 50),
      p95: percentile(samples, 95),
      p99: percentile(samples, 99),
      updates: total,
      lost: total - samples.length,
      reconciles,
      machineBusy,
      processCores,
      samples,
      cluster,
      pins,
    };
  } finally {
    await tracker.stop();
    await system.stop();
  }
}
