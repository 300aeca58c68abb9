/**
 * The lag of a live change during a resync, without and with the bulk queue (docs/semantics.md,
 * "Live changes before the backlog"), side by side on one control plane.
 *
 * Per system: `pool` converged Memcacheds; `resyncs` Resync messages naming them round-robin
 * (what the resync function sends: each reconcile reads the live object and writes nothing)
 * queued at once; then `updates` spec changes of `updates` other objects (not in the backlog: a
 * Resync of the changed object would reconcile the change too), one a second, each timed from
 * the update to its `status.observedGeneration`; and the time until every Resync was reconciled
 * (the backlog drained: no starvation). "one queue": the work queue at maximumConcurrency 5 with
 * the backlog in it; "bulk queue": the same work queue plus the bulk queue at
 * bulkMaximumConcurrency 2, as serverless.yml deploys them.
 *
 * controller-runtime beside them (`controllerRuntime` given): its work queue folds a key's
 * repeats, so its backlog is not `resyncs` messages over a pool but its cache's own periodic
 * resync (SyncPeriod) of `resyncs` distinct converged Memcacheds at `spec.size` 0 (a Deployment
 * of 0 replicas and a Service each, no pods), plus the `updates` live objects as above, with
 * `workers` MaxConcurrentReconciles. Once all are converged and its reconciles stopped, the gate
 * on its informers' events is closed, then opened: the first reconcile after that is the first
 * informer's periodic resync (nothing else enqueues a converged object), and the live changes
 * start then, one a second, timed as above. "every resync reconciled" is from that first
 * reconcile until `resyncs` reconciles; the row keeps every reconcile of the window and the
 * work queue's deepest scraped depth, since the other informers' (Deployment, Service) own
 * resyncs, each enqueueing every owner again, may land in the window too. The machine's load
 * average is kept with each row: the figures depend on it, so compare the rows of one run.
 */
import { loadavg } from 'node:os';
import { percentile } from '../lib/stats.ts';
import { createMemcacheds, names, setSize, sleep } from '../lib/objects.ts';
import { startControllerRuntime } from '../lib/controller-runtime.ts';
import { startOperless, type BenchEnv, type OperlessOptions } from '../lib/systems.ts';
import { startTracker, type Tracker } from '../lib/tracker.ts';

export interface BulkLaneRow {
  readonly system: string;
  /** Live change lag, update to `status.observedGeneration`, p50 and max (ms). */
  readonly lagP50Ms: number;
  readonly lagMaxMs: number;
  /** Every live change's lag, in the order they were made (ms). */
  readonly lagsMs?: readonly number[];
  /** From queueing the backlog until every Resync was reconciled (s). */
  readonly drainedSeconds: number;
  /** The 1-minute load average at the row's start and end. */
  readonly loadavg: readonly [number, number];
  /** controller-runtime's row: every reconcile from its resync's first until the last live change was seen, and its work queue's deepest scraped depth then. */
  readonly reconcilesInWindow?: number;
  readonly maxQueueDepth?: number;
}

export interface BulkLaneResult {
  readonly resyncs: number;
  readonly pool: number;
  readonly updates: number;
  /** Present when controller-runtime ran: its objects (resynced by its cache) and its SyncPeriod. */
  readonly controllerRuntime?: { readonly objects: number; readonly workers: number; readonly syncPeriodSeconds: number };
  readonly rows: readonly BulkLaneRow[];
}

export interface BulkLaneOptions {
  readonly resyncs: number;
  readonly pool: number;
  readonly updates: number;
  /** Also measure controller-runtime (its periodic resync of `resyncs` objects) after the Operless rows. */
  readonly controllerRuntime?: { readonly workers: number; readonly syncPeriodSeconds: number };
  readonly log?: (line: string) => void;
}

const SYSTEMS: readonly [string, Partial<OperlessOptions>][] = [
  ['one queue: work queue at maximumConcurrency 5, the backlog in it', {}],
  ['bulk queue: work queue at 5 + bulk queue at bulkMaximumConcurrency 2', { bulkMaxConcurrency: 2 }],
];

export async function measureBulkLane(env: BenchEnv, namespacePrefix: string, options: BulkLaneOptions): Promise<BulkLaneResult> {
  const rows: BulkLaneRow[] = [];
  for (const [i, [label, extra]] of SYSTEMS.entries()) {
    const load = loadavg()[0]!;
    const namespace = await env.namespace(`${namespacePrefix}-${i + 1}`);
    const system = await startOperless(env, { namespace, maxConcurrency: 5, keysPerInvocation: 8, ...extra });
    const tracker = await startTracker(env.cp.kubeConfig, namespace);
    try {
      await system.ready;
      const pool = names('bl', options.pool);
      const live = names('live', options.updates);
      await createMemcacheds(env.admin, namespace, [...pool, ...live], 1);
      await tracker.whenAllAvailable([...pool, ...live], 600_000);
      const before = system.reconciles();
      const t0 = Date.now();
      await system.enqueue(
        namespace,
        Array.from({ length: options.resyncs }, (_, k) => pool[k % pool.length]!),
        'Resync',
      );
      const lags = await liveChanges(env, namespace, tracker, live);
      while (system.reconciles() - before < options.resyncs) await sleep(250);
      const row: BulkLaneRow = {
        system: label,
        lagP50Ms: percentile(lags, 50),
        lagMaxMs: Math.max(...lags),
        lagsMs: lags,
        drainedSeconds: Number(((Date.now() - t0) / 1000).toFixed(1)),
        loadavg: [load, loadavg()[0]!],
      };
      rows.push(row);
      options.log?.(
        `  ${label}: live change lag p50 ${row.lagP50Ms} ms, max ${row.lagMaxMs} ms; ${options.resyncs} Resyncs reconciled after ${row.drainedSeconds} s (load average ${row.loadavg.map((x) => x.toFixed(1)).join(' → ')})`,
      );
    } finally {
      await tracker.stop();
      await system.stop();
    }
  }
  if (options.controllerRuntime) {
    rows.push(await measureControllerRuntime(env, `${namespacePrefix}-${SYSTEMS.length + 1}`, options, options.controllerRuntime));
  }
  return {
    resyncs: options.resyncs,
    pool: options.pool,
    updates: options.updates,
    ...(options.controllerRuntime ? { controllerRuntime: { objects: options.resyncs, ...options.controllerRuntime } } : {}),
    rows,
  };
}

/** Sets `spec.size` 2 on each of `live`, one a second; each one's lag from the update to its `status.observedGeneration` (ms), in the order of the changes. */
async function liveChanges(env: BenchEnv, namespace: string, tracker: Tracker, live: readonly string[]): Promise<number[]> {
  const lags: number[] = [];
  const pending: Promise<void>[] = [];
  for (const [i, name] of live.entries()) {
    const sent = Date.now();
    pending.push(
      setSize(env.admin, namespace, name, 2).then(async (generation) => {
        lags[i] = (await tracker.whenObserved(name, generation)) - sent;
      }),
    );
    await sleep(1000);
  }
  await Promise.all(pending);
  return lags;
}

/** Waits until `count()` stayed the same for `quietMs` (refreshing it first each time). */
async function quiesce(count: () => number, refresh: () => Promise<void>, quietMs: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await refresh();
  let last = count();
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error(`reconciles did not stop for ${quietMs} ms within ${timeoutMs} ms`);
    await sleep(250);
    await refresh();
    if (count() !== last) {
      last = count();
      since = Date.now();
    }
  }
}

async function measureControllerRuntime(
  env: BenchEnv,
  namespaceName: string,
  options: BulkLaneOptions,
  cr: { readonly workers: number; readonly syncPeriodSeconds: number },
): Promise<BulkLaneRow> {
  const label = `controller-runtime v0.22 (${cr.workers} workers): its cache's periodic resync of ${options.resyncs} objects`;
  const load = loadavg()[0]!;
  const namespace = await env.namespace(namespaceName);
  const system = await startControllerRuntime(env, { namespace, workers: cr.workers, label, syncPeriodSeconds: cr.syncPeriodSeconds });
  const tracker = await startTracker(env.cp.kubeConfig, namespace);
  const refresh = async () => system.refresh?.();
  try {
    await system.ready;
    const pool = names('crbl', options.resyncs);
    const live = names('crlive', options.updates);
    const created = Date.now();
    await createMemcacheds(env.admin, namespace, pool, 0, 32);
    await createMemcacheds(env.admin, namespace, live, 1);
    await tracker.whenAllAvailable([...pool, ...live], Math.max(600_000, options.resyncs * 200));
    await quiesce(system.reconciles, refresh, 3000, 600_000);
    options.log?.(
      `  controller-runtime: ${pool.length + live.length} objects converged after ${((Date.now() - created) / 1000).toFixed(1)} s; waiting for its periodic resync`,
    );
    // Closed, then opened: what the cache's resync enqueues from now on is measured from its first reconcile.
    await system.stopWatching();
    await refresh();
    const before = system.reconciles();
    await system.startWatching();
    const waitMs = cr.syncPeriodSeconds * 1000 + 30_000;
    const opened = Date.now();
    for (;;) {
      await refresh();
      if (system.reconciles() > before) break;
      if (Date.now() - opened > waitMs)
        throw new Error(`controller-runtime's periodic resync (every ${cr.syncPeriodSeconds} s) reconciled nothing within ${waitMs} ms`);
      await sleep(50);
    }
    const t0 = Date.now();
    system.resetMaxQueueDepth();
    // Scraped every 100 ms: the work queue's depth, and when the resync's `resyncs` reconciles were done.
    let drained: number | undefined;
    const poll = async () => {
      await refresh();
      if (drained === undefined && system.reconciles() - before >= options.resyncs) drained = Date.now();
    };
    const depthPoller = setInterval(() => void poll().catch(() => undefined), 100);
    try {
      const lags = await liveChanges(env, namespace, tracker, live);
      const drainDeadline = Date.now() + 600_000;
      while (drained === undefined) {
        await poll();
        if (drained !== undefined) break;
        if (Date.now() > drainDeadline)
          throw new Error(`controller-runtime's resync reconciled ${system.reconciles() - before} of ${options.resyncs} objects in 600 s`);
        await sleep(100);
      }
      await refresh();
      const row: BulkLaneRow = {
        system: label,
        lagP50Ms: percentile(lags, 50),
        lagMaxMs: Math.max(...lags),
        lagsMs: lags,
        drainedSeconds: Number(((drained - t0) / 1000).toFixed(1)),
        loadavg: [load, loadavg()[0]!],
        reconcilesInWindow: system.reconciles() - before,
        maxQueueDepth: system.queueDepth().max ?? 0,
      };
      options.log?.(
        `  ${label}: live change lag p50 ${row.lagP50Ms} ms, max ${row.lagMaxMs} ms; ${options.resyncs} reconciled after ${row.drainedSeconds} s; ${row.reconcilesInWindow} reconciles in the window, work queue depth up to ${row.maxQueueDepth} (load average ${row.loadavg.map((x) => x.toFixed(1)).join(' → ')})`,
      );
      return row;
    } finally {
      clearInterval(depthPoller);
    }
  } finally {
    await tracker.stop();
    await system.stop();
  }
}
