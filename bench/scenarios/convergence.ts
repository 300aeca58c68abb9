/**
 * Convergence: N new Memcached objects created at once; the time from the first create
 * until every one is `Available` at its current generation (seen by the shared tracker).
 */
import { createMemcacheds, names } from '../lib/objects.ts';
import type { BenchEnv, SystemUnderTest } from '../lib/systems.ts';
import { startTracker } from '../lib/tracker.ts';

export interface ConvergenceResult {
  readonly seconds: number;
  readonly reconciles: number;
  readonly createSeconds: number;
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
    const t0 = Date.now();
    await createMemcacheds(env.admin, namespace, list, size);
    const created = Date.now();
    const done = await tracker.whenAllAvailable(list, timeoutMs);
    await system.refresh?.();
    return { seconds: (done - t0) / 1000, reconciles: system.reconciles() - before, createSeconds: (created - t0) / 1000 };
  } finally {
    await tracker.stop();
    await system.stop();
  }
}
