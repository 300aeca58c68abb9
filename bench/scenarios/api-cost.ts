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
 * (the tracker's watch is a WATCH, not counted). Per reconcile = requests ÷ the reconciles the
 * system counted in the window (at least K).
 *
 * A system with a periodic resync of its own (controller-runtime: its cache replays every
 * object as an update event, `periodicResync`) is measured on that resync instead of an
 * enqueued `Resync`; its `Requeue` window is an external trigger (a GenericEvent), its first
 * window one trigger per object created while its informers' events were gated off.
 */
import { requestDelta } from '../lib/apiserver-metrics.ts';
import { costSince, type ClusterCost } from '../lib/cluster-cost.ts';
import { createMemcacheds, names, sleep, until } from '../lib/objects.ts';
import type { BenchEnv, SystemUnderTest } from '../lib/systems.ts';
import { startTracker } from '../lib/tracker.ts';

export interface ApiCostWindow {
  readonly perReconcile: number;
  /** Reconciles the system counted in the window (the denominator). */
  readonly reconciles?: number;
  readonly byVerb: Record<string, number>;
  /** What the window cost the API server and etcd (the controller manager and the simulated kubelet stopped). */
  readonly cluster?: ClusterCost;
}

export interface ApiCostResult {
  readonly objects: number;
  readonly first: ApiCostWindow;
  /** The periodic Resync of a converged object. */
  readonly noop: ApiCostWindow;
  /** An event-driven no-op (a Requeue of a converged object). */
  readonly noopEvent: ApiCostWindow;
}

/** `periodic`: the system's own periodic resync where it has one (else an enqueued `Resync`). */
export async function window(
  env: BenchEnv,
  system: SystemUnderTest,
  namespace: string,
  list: readonly string[],
  reason: 'Resync' | 'Requeue' = 'Resync',
  periodic = false,
): Promise<Required<ApiCostWindow>> {
  const timeoutMs = Math.max(60_000, list.length * 100);
  await env.stopSimulator();
  await env.cp.stopControllerManager();
  await sleep(500);
  await system.refresh?.();
  const clusterBefore = await env.clusterSnapshot();
  const before = clusterBefore.requests;
  const done = system.reconciles();
  if (periodic && system.periodicResync) {
    await system.periodicResync(list.length, timeoutMs + 30_000);
  } else {
    await system.enqueue(namespace, list, reason);
    await until(
      `${list.length} reconciles finished`,
      async () => {
        await system.refresh?.();
        return system.reconciles() - done >= list.length;
      },
      timeoutMs,
    );
  }
  // Reconciles still running when the count was reached finish (and are counted) before the scrape.
  await sleep(500);
  await system.refresh?.();
  const reconciles = Math.max(list.length, system.reconciles() - done);
  const clusterAfter = await env.clusterSnapshot();
  const after = clusterAfter.requests;
  const cluster = costSince(clusterBefore, clusterAfter);
  await env.cp.startControllerManager();
  await env.startSimulator();
  const byVerb = requestDelta(before, after);
  // The two scrapes themselves are GETs of /metrics (no resource), and the API server's own
  // housekeeping (its identity lease, the `kubernetes` Service's endpoints) goes on whatever the
  // system does: neither is part of a reconcile (no system here writes leases or endpoints).
  for (const key of Object.keys(byVerb)) if (key === 'GET ' || key.endsWith(' ') || / (leases|endpoints)$/.test(key)) delete byVerb[key];
  const total = Object.values(byVerb).reduce((a, b) => a + b, 0);
  const perKey: Record<string, number> = {};
  for (const [k, v] of Object.entries(byVerb)) perKey[k] = Math.round((v / reconciles) * 100) / 100;
  return { perReconcile: total / reconciles, reconciles, byVerb: perKey, cluster };
}

/** Resync pokes, one round at a time (at most 20), until a round writes nothing to the Memcacheds. */
export async function settle(env: BenchEnv, system: SystemUnderTest, namespace: string, list: readonly string[]): Promise<void> {
  for (let round = 0; round < 20; round++) {
    await sleep(1000);
    await system.refresh?.();
    const done = system.reconciles();
    const before = await env.apiRequests();
    await system.enqueue(namespace, list, 'Resync');
    await until(
      `${list.length} reconciles finished`,
      async () => {
        await system.refresh?.();
        return system.reconciles() - done >= list.length;
      },
      Math.max(60_000, list.length * 100),
    );
    await sleep(500);
    const writes = Object.keys(requestDelta(before, await env.apiRequests())).filter((key) => /^(POST|PUT|PATCH|APPLY|DELETE) memcacheds/.test(key));
    if (writes.length === 0) return;
  }
  throw new Error('the objects did not settle: every round of 20 still wrote to the Memcacheds');
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
    void available.then(
      () => (converged = true),
      () => (converged = true),
    );
    while (!converged) {
      await system.enqueue(namespace, list, 'Resync');
      await Promise.race([available.catch(() => {}), sleep(2000)]);
    }
    await available;
    // Available comes before the rollout settles (the Deployment's status, Progressing): with the
    // watches paused, nothing tells the system. Poke until a round of reconciles writes nothing
    // to the Memcacheds, so that the no-op windows measure converged objects.
    await settle(env, system, namespace, list);
    const noopEvent = await window(env, system, namespace, list, 'Requeue');
    const noop = await window(env, system, namespace, list, 'Resync', true);
    return { objects: k, first, noop, noopEvent };
  } finally {
    await tracker.stop();
    await system.stop();
  }
}
