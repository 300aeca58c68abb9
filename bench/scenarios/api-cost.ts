/**
 * API cost: Kubernetes API requests per reconcile, from the API server's own
 * `apiserver_request_total` (delta around a window, watches excluded), for
 *
 * - a first reconcile: K objects created while nothing watches them, then one reconcile each;
 * - a no-op reconcile: the same K objects once converged, one more reconcile each — once
 *   for a `Requeue` (what an event-driven no-op costs: a poll, a duplicate delivery, the
 *   Deployment's own Owned event) and once for the periodic `Resync` (the safety net, which
 *   also checks the children no event mentioned).
 *
 * During each window the kube-controller-manager and the simulated kubelet are stopped and
 * the system's watches are paused, so every request counted comes from the K reconciles
 * (the tracker's watch is a WATCH, not counted).
 */
import { requestDelta } from '../lib/apiserver-metrics.ts';
import { createMemcacheds, names, sleep, until } from '../lib/objects.ts';
import type { BenchEnv, SystemUnderTest } from '../lib/systems.ts';
import { startTracker } from '../lib/tracker.ts';

export interface ApiCostResult {
  readonly objects: number;
  readonly first: { readonly perReconcile: number; readonly byVerb: Record<string, number> };
  /** The periodic Resync of a converged object. */
  readonly noop: { readonly perReconcile: number; readonly byVerb: Record<string, number> };
  /** An event-driven no-op (a Requeue of a converged object). */
  readonly noopEvent: { readonly perReconcile: number; readonly byVerb: Record<string, number> };
}

async function window(env: BenchEnv, system: SystemUnderTest, namespace: string, list: readonly string[], reason: 'Resync' | 'Requeue' = 'Resync') {
  await env.stopSimulator();
  await env.cp.stopControllerManager();
  await sleep(500);
  const before = await env.apiRequests();
  const done = system.reconciles();
  await system.enqueue(namespace, list, reason);
  await until(`${list.length} reconciles finished`, () => system.reconciles() - done >= list.length, 60_000);
  const after = await env.apiRequests();
  await env.cp.startControllerManager();
  env.startSimulator();
  const byVerb = requestDelta(before, after);
  // The two scrapes themselves are GETs of /metrics (no resource): not part of any reconcile.
  for (const key of Object.keys(byVerb)) if (key === 'GET ' || key.endsWith(' ')) delete byVerb[key];
  const total = Object.values(byVerb).reduce((a, b) => a + b, 0);
  const perKey: Record<string, number> = {};
  for (const [k, v] of Object.entries(byVerb)) perKey[k] = Math.round((v / list.length) * 100) / 100;
  return { perReconcile: total / list.length, byVerb: perKey };
}

export async function measureApiCost(
  env: BenchEnv,
  namespace: string,
  start: (namespace: string) => Promise<SystemUnderTest> | SystemUnderTest,
  k: number,
): Promise<ApiCostResult> {
  await env.namespace(namespace);
  const system = await start(namespace);
  const tracker = await startTracker(env.cp.kubeConfig, namespace);
  try {
    await system.ready;
    await system.stopWatching();
    const list = names('api', k);
    await createMemcacheds(env.admin, namespace, list, 1);
    const first = await window(env, system, namespace, list);
    // Converge. The watches are paused (so the windows count only the enqueued reconciles), so
    // the Deployments' status changes (Owned events) do not arrive and Memcached does not poll:
    // the bench pokes every object with a Resync every 2 s until all are Available.
    const available = tracker.whenAllAvailable(list, 120_000);
    let converged = false;
    void available.then(() => (converged = true), () => (converged = true));
    while (!converged) {
      await system.enqueue(namespace, list, 'Resync');
      await Promise.race([available.catch(() => {}), sleep(2000)]);
    }
    await available;
    // Let the last child events of the rollout be reconciled before counting, so no stray
    // reconcile lands in a no-op window.
    await sleep(5_000);
    const noopEvent = await window(env, system, namespace, list, 'Requeue');
    const noop = await window(env, system, namespace, list, 'Resync');
    return { objects: k, first, noop, noopEvent };
  } finally {
    await tracker.stop();
    await system.stop();
  }
}
