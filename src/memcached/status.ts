/**
 * The observed state of a Memcached, computed (pure) from its Deployment and its pods:
 * `status.nodes`, `readyReplicas` and the `Available` / `Progressing` / `Degraded` conditions,
 * plus whether the rollout has settled (the controller polls until it has).
 *
 * Condition meanings (all carry `observedGeneration`):
 * - `Available`   True when every requested node is Ready (or `size` is 0).
 * - `Progressing` True while the cluster is moving towards the spec (scaling, rolling out,
 *                 waiting for readiness); False once it has settled.
 * - `Degraded`    True when the Deployment cannot make progress (progress deadline exceeded,
 *                 replica failures such as quota) or the spec is invalid.
 * `lastTransitionTime` changes only when a condition's status changes.
 */
import { findCondition, setCondition, type Condition, type KubeObject } from '../index.ts';
import type { Memcached, MemcachedStatus } from './types.ts';

/** The parts of an `apps/v1` Deployment the status is computed from. */
export interface DeploymentView extends KubeObject {
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** The parts of a `v1` Pod the status is computed from. */
export interface PodView extends KubeObject {
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

export const AVAILABLE = 'Available';
export const PROGRESSING = 'Progressing';
export const DEGRADED = 'Degraded';

export interface Observation {
  readonly status: Required<Omit<MemcachedStatus, 'deploymentResourceVersion'>> & Pick<MemcachedStatus, 'deploymentResourceVersion'>;
  /** True when nothing is in flight: the controller can stop polling. */
  readonly settled: boolean;
  /** Set when the Deployment is stuck (reason and message of the Degraded condition). */
  readonly degraded?: { readonly reason: string; readonly message: string };
}

/** Pods that count as memcached nodes: not terminating and not finished. */
export function livePods(pods: readonly PodView[]): PodView[] {
  return pods.filter((p) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
}

export function isPodReady(pod: PodView): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * Whether the Deployment controller has finished rolling out `size` replicas. When the
 * Deployment has no status yet (no controller has looked at it), this says nothing: it
 * returns undefined and the pods alone decide.
 */
export function deploymentSettled(deployment: DeploymentView | undefined, size: number): boolean | undefined {
  const status = deployment?.status;
  if (!deployment || status?.observedGeneration === undefined) return undefined;
  const generation = deployment.metadata.generation ?? 0;
  return (
    status.observedGeneration >= generation &&
    (deployment.spec?.replicas ?? size) === size &&
    (status.updatedReplicas ?? 0) === size &&
    (status.replicas ?? 0) === size &&
    (status.availableReplicas ?? 0) === size
  );
}

/** A stuck Deployment: its progress deadline passed, or it cannot create replicas. */
export function deploymentProblem(deployment: DeploymentView | undefined): { reason: string; message: string } | undefined {
  const conditions = deployment?.status?.conditions ?? [];
  const failure = conditions.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  if (failure) return { reason: 'ReplicaFailure', message: `Deployment cannot create pods: ${failure.message ?? failure.reason ?? 'unknown reason'}` };
  const progressing = conditions.find((c) => c.type === 'Progressing');
  if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
    return { reason: 'ProgressDeadlineExceeded', message: `Deployment rollout is stuck: ${progressing.message ?? 'progress deadline exceeded'}` };
  }
  return undefined;
}

/** What the status needs from the pods: the live pods' names (sorted) and how many are Ready. */
export interface PodSummary {
  readonly nodes: readonly string[];
  readonly ready: number;
}

export function summarizePods(pods: readonly PodView[]): PodSummary {
  const live = livePods(pods);
  return { nodes: live.map((p) => p.metadata.name).sort(), ready: live.filter(isPodReady).length };
}

/** The pod summary the status recorded (when the pods were not listed again). */
export function recordedPods(status: MemcachedStatus | undefined): PodSummary {
  return { nodes: status?.nodes ?? [], ready: status?.readyReplicas ?? 0 };
}

/** Computes the status a Memcached should have now, from its Deployment and its pods. */
export function observe(mc: Memcached, deployment: DeploymentView | undefined, pods: readonly PodView[], now: Date): Observation {
  return observeSummary(mc, deployment, summarizePods(pods), now);
}

/**
 * `observe` from a pod summary. The status records the Deployment's resourceVersion, so a
 * later reconcile can tell whether the pods may have changed since (see plan.ts).
 */
export function observeSummary(mc: Memcached, deployment: DeploymentView | undefined, pods: PodSummary, now: Date): Observation {
  const size = mc.spec.size;
  const generation = mc.metadata.generation ?? 0;
  const nodes = [...pods.nodes];
  const ready = pods.ready;
  const fromDeployment = deploymentSettled(deployment, size);
  const settled = nodes.length === size && ready === size && fromDeployment !== false;
  const problem = deploymentProblem(deployment);
  const nodesWord = (n: number) => (n === 1 ? 'node' : 'nodes');

  let conditions = mc.status?.conditions ?? [];
  const set = (type: string, status: Condition['status'], reason: string, message: string) => {
    conditions = setCondition(conditions, { type, status, reason, message, observedGeneration: generation }, now);
  };

  if (size === 0) set(AVAILABLE, 'True', 'ScaledToZero', 'spec.size is 0: no memcached nodes are requested');
  else if (ready >= size) set(AVAILABLE, 'True', 'AllNodesReady', `${ready} of ${size} ${nodesWord(size)} ready`);
  else set(AVAILABLE, 'False', 'NodesNotReady', `${ready} of ${size} ${nodesWord(size)} ready`);

  if (settled) {
    set(PROGRESSING, 'False', 'RolloutComplete', `${size} ${nodesWord(size)} running the current spec`);
  } else if (nodes.length < size) {
    set(PROGRESSING, 'True', 'ScalingUp', `${nodes.length} of ${size} ${nodesWord(size)} created`);
  } else if (nodes.length > size) {
    set(PROGRESSING, 'True', 'ScalingDown', `${nodes.length} ${nodesWord(nodes.length)} running, ${size} requested`);
  } else if (ready < size) {
    set(PROGRESSING, 'True', 'WaitingForReady', `${ready} of ${size} ${nodesWord(size)} ready`);
  } else {
    set(PROGRESSING, 'True', 'RollingUpdate', 'the Deployment is rolling out the current spec');
  }

  if (problem) set(DEGRADED, 'True', problem.reason, problem.message);
  else set(DEGRADED, 'False', 'AsExpected', 'no problems found');

  return {
    status: {
      nodes,
      readyReplicas: ready,
      observedGeneration: generation,
      conditions: orderConditions(conditions),
      ...(deployment?.metadata.resourceVersion ? { deploymentResourceVersion: deployment.metadata.resourceVersion } : {}),
    },
    settled,
    ...(problem ? { degraded: problem } : {}),
  };
}

/** The status for a spec the controller refuses: Degraded=True with the reason; the rest kept. */
export function invalidSpecStatus(mc: Memcached, problem: { reason: string; message: string }, now: Date): MemcachedStatus & { conditions: Condition[] } {
  const conditions = setCondition(
    mc.status?.conditions,
    { type: DEGRADED, status: 'True', reason: problem.reason, message: problem.message, observedGeneration: mc.metadata.generation },
    now,
  );
  return { ...mc.status, observedGeneration: mc.metadata.generation, conditions: orderConditions(conditions) };
}

/** A condition that changed status between two lists (for Events on transitions). */
export function transitioned(before: readonly Condition[] | undefined, after: readonly Condition[], type: string): Condition | undefined {
  const next = findCondition(after, type);
  if (!next) return undefined;
  return findCondition(before, type)?.status === next.status ? undefined : next;
}

const ORDER = [AVAILABLE, PROGRESSING, DEGRADED];

/** Known conditions first, in a fixed order (stable output for the "only when changed" check). */
function orderConditions(conditions: Condition[]): Condition[] {
  const rank = (c: Condition) => {
    const i = ORDER.indexOf(c.type);
    return i === -1 ? ORDER.length : i;
  };
  return [...conditions].sort((a, b) => rank(a) - rank(b) || a.type.localeCompare(b.type));
}
