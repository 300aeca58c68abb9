/**
 * The Memcached controller: the operator-sdk tutorial's reconcile, as an Operless
 * `ControllerSpec`. Each reconcile, from the live object:
 *
 * 1. refuses specs the schema cannot rule out (`validate.ts`): `Degraded=True` with the reason,
 *    then `TerminalError` (no retries; the runtime records a Warning Event);
 * 2. with `spec.configMapRef`, reads that ConfigMap (a related watch: its changes reconcile
 *    every Memcached naming it) and applies its settings with their hash on the pod template,
 *    so a change rolls the pods; a missing or invalid one sets `Degraded=True` with a Warning
 *    Event and leaves the Deployment alone until the ConfigMap is created or fixed;
 * 3. reads the Deployment and server-side applies it (with a controller owner reference) only
 *    when it differs from the desired one (`applyOwnedIfChanged`), refusing to take over a
 *    Deployment another controller owns; applies the headless Service when the message or the
 *    Deployment says it may need it (`plan.ts`);
 * 4. lists the pods by label only when the Deployment changed since the status was written
 *    (and not before the Deployment controller has observed a new Deployment), and writes `status` (`status.ts`) only when it changed;
 * 5. records Events for transitions (created, scaled, degraded, recovered);
 * 6. returns `done()`, also while the rollout is in flight: the Deployment's own status changes
 *    arrive as `Owned` events and drive convergence, and the periodic `Resync` is the net for a
 *    lost event. It never polls (a poll per reconcile piles up in SQS, which cannot merge a
 *    key's delayed messages the way a work queue's AddAfter does: docs/memcached.md).
 *
 * A steady-state no-op costs two API requests: GET Memcached (the runtime) and GET Deployment
 * (a third, GET ConfigMap, with `spec.configMapRef`).
 *
 * Finalizer `cache.example.com/finalizer`: deletion runs a cleanup step that records an Event;
 * the children go with their owner through garbage collection.
 *
 * Idempotent: running it twice, or twice at once, converges on the same objects.
 */
import { applyOwnedIfChanged, done, TerminalError, type ControllerSpec, type KubeObject, type ReconcileContext, type ReconcileResult } from '../index.ts';
import { CONFIGMAPS, DEPLOYMENTS, PODS, SERVICES } from '../kube/kinds.ts';
import { desiredDeployment, desiredService, podSelector } from './desired.ts';
import { DEGRADED, invalidSpecStatus, observeSummary, recordedPods, summarizePods, transitioned, type DeploymentView, type PodView } from './status.ts';
import { podsNeedListing, serviceCheck, type PodListing } from './plan.ts';
import { specProblem, type SpecProblem } from './validate.ts';
import { MEMCACHED, type Memcached } from './types.ts';
import { configSettings, type ConfigMapView, type SettingsResult } from './settings.ts';

export const MEMCACHED_FINALIZER = 'cache.example.com/finalizer';
export const FIELD_MANAGER = 'operless-memcached';

type Ctx = ReconcileContext<Memcached>;

/** Choices of the reconcile that keep its guarantees either way (the benchmark's before/after runs). */
export interface MemcachedReconcileOptions {
  /** How the pods are listed (plan.ts `podsNeedListing`); default `skip-unobserved`. */
  readonly podListing?: PodListing;
}

export const memcachedController: ControllerSpec<Memcached> = {
  ...MEMCACHED,
  owns: [DEPLOYMENTS, SERVICES],
  watches: [{ kind: CONFIGMAPS, map: { field: 'spec.configMapRef.name' } }],
  finalizer: MEMCACHED_FINALIZER,
  fieldManager: FIELD_MANAGER,
  // serverless.yml's resyncSchedule is this period (test/unit/project/resync-schedule.test.ts).
  resync: { everySeconds: 600 },
  reconcile: (mc, ctx) => reconcileMemcached(mc, ctx),
  finalize: finalizeMemcached,
};

/** The Memcached controller with the reconcile's options (`memcachedController` is it with none). */
export function memcachedControllerWith(options: MemcachedReconcileOptions): ControllerSpec<Memcached> {
  return { ...memcachedController, reconcile: (mc, ctx) => reconcileMemcached(mc, ctx, options) };
}

export async function reconcileMemcached(mc: Memcached, ctx: Ctx, options: MemcachedReconcileOptions = {}): Promise<ReconcileResult> {
  const problem = specProblem(mc.spec);
  if (problem) return refuse(mc, ctx, problem);

  const namespace = mc.metadata.namespace;
  const name = mc.metadata.name;
  const fromConfigMap = await referencedSettings(mc, ctx);
  if (fromConfigMap && 'problem' in fromConfigMap) return degradeForConfig(mc, ctx, fromConfigMap.problem);
  const settings = fromConfigMap;
  const existing = await ctx.client.get<DeploymentView>(DEPLOYMENTS, name, namespace);
  const conflict = ownershipProblem(mc, existing);
  if (conflict) return refuse(mc, ctx, conflict);

  const { object: deployment, applied } = await applyOwnedIfChanged(
    (kind, child) => ctx.applyOwned(kind, child),
    mc,
    DEPLOYMENTS,
    desiredDeployment(mc, settings) as DeploymentView,
    existing,
    {
      fieldManager: FIELD_MANAGER,
      readOwner: () => ctx.client.get<Memcached>(MEMCACHED, name, namespace),
      reread: () => ctx.client.get<DeploymentView>(DEPLOYMENTS, name, namespace),
    },
  );
  const service = serviceCheck(ctx.message, existing, applied !== undefined);
  if (service) await ctx.applyOwned(SERVICES, desiredService(mc));
  if (applied) ctx.log.info('deployment applied', { why: applied, ...(service ? { serviceCheck: service } : {}) });
  if (!existing) {
    await record(ctx, mc, 'Normal', 'Created', 'Create', `Created Deployment and Service ${name} for ${mc.spec.size} memcached ${plural(mc.spec.size)}`);
  } else if (existing.spec?.replicas !== undefined && existing.spec.replicas !== mc.spec.size) {
    await record(ctx, mc, 'Normal', 'Scaled', 'Scale', `Scaled memcached from ${existing.spec.replicas} to ${mc.spec.size} ${plural(mc.spec.size)}`);
  }

  const pods = podsNeedListing(mc, deployment, options.podListing)
    ? summarizePods((await ctx.client.list<PodView>(PODS, { namespace, labelSelector: podSelector(mc) })).items)
    : recordedPods(mc.status);
  const observed = observeSummary(mc, deployment, pods, new Date());
  const changed = await ctx.updateStatus(observed.status);
  if (changed) {
    ctx.log.info('status updated', { readyReplicas: observed.status.readyReplicas, nodes: observed.status.nodes.length, settled: observed.settled });
  }

  const degraded = transitioned(mc.status?.conditions, observed.status.conditions, DEGRADED);
  if (degraded?.status === 'True') await record(ctx, mc, 'Warning', 'Degraded', 'Reconcile', degraded.message);
  else if (degraded?.status === 'False' && mc.status?.conditions?.some((c) => c.type === DEGRADED)) {
    await record(ctx, mc, 'Normal', 'Recovered', 'Reconcile', 'memcached is no longer degraded');
  }

  return done();
}

export async function finalizeMemcached(mc: Memcached, ctx: Ctx): Promise<ReconcileResult> {
  await record(
    ctx,
    mc,
    'Normal',
    'Finalizing',
    'Delete',
    `Custom resource ${mc.metadata.name} is being deleted from namespace ${mc.metadata.namespace}: its Deployment and Service go with it`,
  );
  return done();
}

/**
 * The settings of the ConfigMap `spec.configMapRef` names (undefined without a reference), or
 * the problem with it: missing, invalid, or a memory setting the container limit cannot hold.
 */
async function referencedSettings(mc: Memcached, ctx: Ctx): Promise<SettingsResult | undefined> {
  const ref = mc.spec.configMapRef;
  if (!ref) return undefined;
  const result = configSettings(ref.name, await ctx.client.get<ConfigMapView>(CONFIGMAPS, ref.name, mc.metadata.namespace));
  if ('problem' in result) return result;
  const memory = result.settings.memoryLimitMB;
  const problem = memory === undefined ? undefined : specProblem({ ...mc.spec, memoryLimitMB: memory });
  return problem ? { problem: { reason: 'InvalidConfigMap', message: `ConfigMap ${ref.name}: memoryLimitMB ${memory}: ${problem.message}` } } : result;
}

/**
 * The referenced ConfigMap is missing or invalid: Degraded=True with the reason and, on the
 * transition, a Warning Event; the Deployment is left as it is. No retry: the ConfigMap's
 * creation or fix reaches this object as a `Related` message (the controller's related watch),
 * and the periodic Resync is the net.
 */
async function degradeForConfig(mc: Memcached, ctx: Ctx, problem: SpecProblem): Promise<ReconcileResult> {
  const status = invalidSpecStatus(mc, problem, new Date());
  await ctx.updateStatus(status);
  const before = mc.status?.conditions?.find((c) => c.type === DEGRADED);
  if (before?.status !== 'True' || before.reason !== problem.reason) await record(ctx, mc, 'Warning', problem.reason, 'Reconcile', problem.message);
  ctx.log.info('configMapRef not applied', { reason: problem.reason });
  return done();
}

/** Reports a problem only a human can fix: Degraded=True with the reason, then no retries. */
async function refuse(mc: Memcached, ctx: Ctx, problem: SpecProblem): Promise<never> {
  await ctx.updateStatus(invalidSpecStatus(mc, problem, new Date()));
  throw new TerminalError(`Memcached ${mc.metadata.namespace}/${mc.metadata.name}: ${problem.message}`, { reason: problem.reason });
}

/**
 * A Deployment with our name but another controller is not ours to change (a problem for a
 * human). A previous Memcached of the same name (another uid) is being garbage collected:
 * that is transient, so it throws a plain error and the runtime retries with backoff.
 */
export function ownershipProblem(mc: Memcached, existing: DeploymentView | undefined): SpecProblem | undefined {
  const controller = existing?.metadata.ownerReferences?.find((r) => r.controller);
  if (!existing || !controller || controller.uid === mc.metadata.uid) return undefined;
  if (controller.kind === mc.kind && controller.name === mc.metadata.name) {
    throw new Error(
      `Deployment ${mc.metadata.name} still belongs to a deleted Memcached of the same name (uid ${controller.uid}); waiting for garbage collection`,
    );
  }
  return {
    reason: 'DeploymentConflict',
    message:
      `Deployment ${mc.metadata.name} already exists and is controlled by ${controller.kind} ${controller.name}; ` +
      'rename the Memcached or delete that Deployment',
  };
}

async function record(ctx: Ctx, mc: KubeObject, type: 'Normal' | 'Warning', reason: string, action: string, note: string): Promise<void> {
  await ctx.events.record(mc, { type, reason, action, note });
}

function plural(n: number): string {
  return n === 1 ? 'node' : 'nodes';
}
