/**
 * Related objects (issue 16): N Memcacheds, K of them referring to one ConfigMap by
 * `spec.configMapRef` (half of the rest to another ConfigMap, half to none), on Operless with
 * the shipped related watch. Once converged, the referenced ConfigMap's settings change R
 * times, one after the other; per change:
 *
 * - the lag from sending the ConfigMap update to the moment a Deployment watch sees each
 *   referring object's new settings hash on its pod template (what the reconcile writes to
 *   roll the pods), over the K objects;
 * - the reconciles of the referring objects (by message reason) and of the others (which the
 *   change must not reach);
 * - the Kubernetes API requests of the whole cluster (`apiserver_request_total`, watches
 *   excluded) from the update until the K rollouts are done and the function has been quiet
 *   for a moment — the reconciles, the rollouts' ReplicaSets and pods, the simulated kubelet.
 *
 * One more change is measured with the kube-controller-manager and the simulated kubelet
 * stopped, so every request counted comes from the forwarder (which only watches) and the
 * function: the cost of a related change to the operator itself.
 */
import { CONFIGMAPS } from '../../src/kube/kinds.ts';
import type { SQSEvent } from 'aws-lambda';
import { decodeMessage } from '../../src/contract/message.ts';
import { createKubeApi } from '../../src/kube/api.ts';
import { CONFIG_HASH_ANNOTATION } from '../../src/memcached/desired.ts';
import { requestDelta } from '../lib/apiserver-metrics.ts';
import { busyShare, cpuSnapshot } from '../lib/machine.ts';
import { createMemcacheds, names, sleep, until } from '../lib/objects.ts';
import { percentile } from '../lib/stats.ts';
import { startOperless, type BenchEnv } from '../lib/systems.ts';
import { listAndWatch, startTracker } from '../lib/tracker.ts';

const REFERENCED = 'settings';
const OTHER = 'other-settings';
/** The function counts as quiet after this long without an invocation. */
const QUIET_MS = 2_000;

export interface RelatedOptions {
  readonly objects: number;
  readonly referring: number;
  readonly updates: number;
  readonly maxConcurrency: number;
}

export interface RelatedUpdate {
  /** Lag over the referring objects, ms: update sent → new settings hash seen on the Deployment. */
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  /** Referring objects whose new hash was not seen within the timeout. */
  readonly lost: number;
  /** Reconciles (keys per invocation) of the referring objects, and their messages by reason. */
  readonly referringReconciles: number;
  readonly referringByReason: Record<string, number>;
  /** Reconciles of the objects that do not refer to the changed ConfigMap (0 expected). */
  readonly otherReconciles: number;
  /** Whole-cluster API requests (watches excluded) of the change, its reconciles and rollouts. */
  readonly apiRequests: number;
  readonly apiByVerb: Record<string, number>;
}

export interface RelatedResult {
  readonly objects: number;
  readonly referring: number;
  readonly updates: RelatedUpdate[];
  /** Lag over every referring object of every update, ms. */
  readonly lag: { readonly p50: number; readonly p95: number; readonly max: number };
  /** Busy share of the machine's CPUs during the R updates (Linux), 0..1. */
  readonly machineBusy: number | undefined;
  /** One change with the cluster's controllers stopped: the requests of the forwarder and the function only. */
  readonly operator: {
    /** Requests of the change's reconciles (the bench's own PATCH and the API server's leases and endpoints taken out). */
    readonly apiRequests: number;
    readonly perReferring: number;
    readonly byVerb: Record<string, number>;
    readonly referringReconciles: number;
    readonly referringByReason: Record<string, number>;
    readonly otherReconciles: number;
  };
}

interface DeploymentSeen {
  hash: string | undefined;
  rolledOut: boolean;
}

/** A watch on the namespace's Deployments: each one's settings hash (and when it was first seen) and whether its rollout is done. */
async function watchDeployments(env: BenchEnv, namespace: string) {
  const api = createKubeApi(env.cp.kubeConfig);
  const seen = new Map<string, DeploymentSeen>();
  const hashSeenAt = new Map<string, { hash: string; at: number }>();
  const abort = new AbortController();
  const handle = (object: Record<string, unknown>) => {
    const meta = object.metadata as { name: string; generation?: number };
    const spec = object.spec as { replicas?: number; template?: { metadata?: { annotations?: Record<string, string> } } };
    const status = (object.status ?? {}) as { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
    const hash = spec.template?.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
    const want = spec.replicas ?? 1;
    const rolledOut =
      (status.observedGeneration ?? 0) >= (meta.generation ?? 0) &&
      status.updatedReplicas === want &&
      status.availableReplicas === want &&
      status.replicas === want;
    seen.set(meta.name, { hash, rolledOut });
    if (hash && hashSeenAt.get(meta.name)?.hash !== hash) hashSeenAt.set(meta.name, { hash, at: Date.now() });
  };
  const { loop } = await listAndWatch(api, `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments`, { upsert: handle }, abort.signal);
  return {
    hash: (name: string) => seen.get(name)?.hash,
    /** When `name`'s hash became something other than `previous` (undefined: not yet). */
    changedAt: (name: string, previous: string | undefined) => {
      const h = hashSeenAt.get(name);
      return h && h.hash !== previous ? h.at : undefined;
    },
    rolledOut: (list: readonly string[]) => list.every((n) => seen.get(n)?.rolledOut),
    async stop() {
      abort.abort();
      await loop;
    },
  };
}

/** Counts reconciles per object (distinct keys per invocation) and messages by reason, from the invocations' events. */
function reconcileCounter() {
  const reconciles = new Map<string, number>();
  const reasons = new Map<string, Map<string, number>>();
  let lastInvocation = 0;
  return {
    observe(event: SQSEvent, _startedAt: number, doneAt: number) {
      lastInvocation = doneAt;
      const keys = new Set<string>();
      for (const record of event.Records) {
        const decoded = decodeMessage(record.body);
        if (!decoded.ok) continue;
        const { name, reason } = decoded.message;
        keys.add(name);
        const byReason = reasons.get(name) ?? new Map<string, number>();
        byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
        reasons.set(name, byReason);
      }
      for (const k of keys) reconciles.set(k, (reconciles.get(k) ?? 0) + 1);
    },
    lastInvocation: () => lastInvocation,
    /** Counts so far, to subtract: reconciles of `list`, and their messages by reason. */
    snapshot(list: readonly string[]) {
      const byReason: Record<string, number> = {};
      for (const n of list) for (const [r, c] of reasons.get(n) ?? []) byReason[r] = (byReason[r] ?? 0) + c;
      return { reconciles: list.reduce((a, n) => a + (reconciles.get(n) ?? 0), 0), byReason };
    },
  };
}

/** a − b per key, positive entries only. */
const minus = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(a)
      .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );

/** Without the scrapes' own GETs of /metrics (no resource). */
function withoutScrapes(delta: Record<string, number>): Record<string, number> {
  for (const key of Object.keys(delta)) if (key.endsWith(' ')) delete delta[key];
  return delta;
}

export async function measureRelated(env: BenchEnv, namespace: string, options: RelatedOptions): Promise<RelatedResult> {
  await env.namespace(namespace);
  const counter = reconcileCounter();
  const system = await startOperless(env, {
    namespace,
    maxConcurrency: options.maxConcurrency,
    keysPerInvocation: 1,
    related: true,
    label: 'Operless related',
    observe: counter.observe,
  });
  const tracker = await startTracker(env.cp.kubeConfig, namespace);
  const deployments = await watchDeployments(env, namespace);
  try {
    await system.ready;
    const all = names('rel', options.objects);
    const referring = all.slice(0, options.referring);
    const others = all.slice(options.referring);
    const settings = (maxConnections: number) => ({ data: { maxConnections: String(maxConnections) } });
    for (const name of [REFERENCED, OTHER])
      await env.admin.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, ...settings(1000) });
    const refOf = (name: string) => (referring.includes(name) ? REFERENCED : others.indexOf(name) % 2 === 0 ? OTHER : undefined);
    await createMemcacheds(env.admin, namespace, all, 1, 20, (name) => (refOf(name) ? { configMapRef: { name: refOf(name) } } : {}));
    await tracker.whenAllAvailable(all, 180_000);
    await until(
      'every Deployment rolled out, the referring ones with a settings hash',
      () => deployments.rolledOut(all) && referring.every((n) => deployments.hash(n)),
      180_000,
    );
    await until('the function is quiet', () => Date.now() - counter.lastInvocation() > QUIET_MS, 60_000);

    /** One change of the referenced ConfigMap: lag per referring object, reconciles and API requests until all is quiet. */
    const change = async (value: number, rollouts: boolean) => {
      const previous = new Map(referring.map((n) => [n, deployments.hash(n)]));
      const before = { referring: counter.snapshot(referring), others: counter.snapshot(others), api: await env.apiRequests() };
      const sent = Date.now();
      await env.admin.mergePatch(CONFIGMAPS, REFERENCED, namespace, settings(value));
      const changed = () => referring.every((n) => deployments.changedAt(n, previous.get(n)) !== undefined);
      await until(`the ${referring.length} referring Deployments carry the new settings`, changed, 120_000).catch(() => {});
      const samples = referring
        .map((n) => deployments.changedAt(n, previous.get(n)))
        .filter((t): t is number => t !== undefined)
        .map((t) => t - sent);
      if (rollouts) await until('the referring Deployments rolled out', () => deployments.rolledOut(referring), 120_000);
      await until('the function is quiet', () => Date.now() - counter.lastInvocation() > QUIET_MS, 60_000);
      const after = { referring: counter.snapshot(referring), others: counter.snapshot(others), api: await env.apiRequests() };
      const api = withoutScrapes(requestDelta(before.api, after.api));
      return {
        samples,
        lost: referring.length - samples.length,
        referringReconciles: after.referring.reconciles - before.referring.reconciles,
        referringByReason: minus(after.referring.byReason, before.referring.byReason),
        otherReconciles: after.others.reconciles - before.others.reconciles,
        apiRequests: Object.values(api).reduce((a, b) => a + b, 0),
        apiByVerb: api,
      };
    };

    const updates: RelatedUpdate[] = [];
    const allSamples: number[] = [];
    const cpu = cpuSnapshot();
    for (let i = 0; i < options.updates; i++) {
      const u = await change(1001 + i, true);
      allSamples.push(...u.samples);
      const { samples, ...rest } = u;
      updates.push({ p50: percentile(samples, 50), p95: percentile(samples, 95), max: samples.length > 0 ? Math.max(...samples) : Number.NaN, ...rest });
    }
    const machineBusy = busyShare(cpu, cpuSnapshot());

    await env.stopSimulator();
    await env.cp.stopControllerManager();
    let operator: RelatedResult['operator'];
    try {
      await sleep(500);
      const u = await change(2000, false);
      // Taken out: the bench's own PATCH of the ConfigMap, and the API server's own housekeeping
      // (its identity lease, the `kubernetes` Service's endpoints) — resources the function's
      // RBAC (infra/rbac/memcached-function.yaml) does not even grant.
      const byVerb = minus(u.apiByVerb, { 'PATCH configmaps': 1 });
      for (const key of Object.keys(byVerb)) if (/ (leases|endpoints)$/.test(key)) delete byVerb[key];
      const apiRequests = Object.values(byVerb).reduce((a, b) => a + b, 0);
      operator = {
        apiRequests,
        perReferring: apiRequests / referring.length,
        byVerb,
        referringReconciles: u.referringReconciles,
        referringByReason: u.referringByReason,
        otherReconciles: u.otherReconciles,
      };
    } finally {
      await env.cp.startControllerManager();
      await env.startSimulator();
    }
    return {
      objects: options.objects,
      referring: options.referring,
      updates,
      machineBusy,
      operator,
      lag: { p50: percentile(allSamples, 50), p95: percentile(allSamples, 95), max: allSamples.length > 0 ? Math.max(...allSamples) : Number.NaN },
    };
  } finally {
    await deployments.stop();
    await tracker.stop();
    await system.stop();
  }
}
