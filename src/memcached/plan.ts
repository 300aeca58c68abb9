/**
 * What one Memcached reconcile must touch beyond the two reads every reconcile makes (the
 * Memcached, read by the runtime, and its Deployment), decided from what those reads and the
 * queue message already say. Pure.
 *
 * A no-op reconcile costs those two GETs and nothing else (a periodic `Resync`, the safety net,
 * also applies the Service: three):
 * - the Deployment is applied only when it differs from what we would apply
 *   (`applyOwnedIfChanged` in src/kube/owned.ts: hash annotation + live values of our fields);
 * - the Service is checked (applied: one idempotent request) only when an event may concern
 *   it, and on every periodic `Resync` — see `serviceCheck`;
 * - the pods are listed only when the Deployment changed since the status was written, and not
 *   before the Deployment controller has observed a new Deployment — see `podsNeedListing`.
 *
 * There is no progress poll: every reconcile returns `done()` (docs/memcached.md, "Progress
 * without polling").
 */
import type { ReconcileMessage } from '../contract/index.ts';
import type { Memcached } from './types.ts';
import type { DeploymentView } from './status.ts';
import { SERVICES } from '../kube/kinds.ts';

/** Why the Service is applied in this reconcile, or undefined when it is left alone. */
export type ServiceCheck = 'spec-or-retry' | 'owned-event' | 'deployment-applied' | 'resync' | undefined;

/**
 * Whether this reconcile must make sure the Service exists and matches.
 *
 * - `Added`, `Modified` (the spec may have changed the port), `Retry` (a previous attempt
 *   failed somewhere), `Deleted` (a recreated object): always;
 * - whenever the Deployment had to be applied (it was missing or drifted: something happened
 *   to the children, so check the other one too);
 * - `Owned`: a child changed. The forwarder names the children's kinds (`ownedKinds`): when
 *   they do not include Service, the Service is not concerned. Without kinds (a merge with a
 *   message that has none, an older forwarder), the child's `resourceVersion` in the message
 *   decides: when it is the live Deployment's, the event was the Deployment's own and the
 *   Service is not concerned. Any other version (a Service event, or a Deployment version we do not see
 *   any more) checks the Service. resourceVersions are compared for equality only, as the API
 *   conventions allow.
 * - `Resync`: always. It is the safety net for every event that never arrived (a forwarder
 *   down, a message it could not send), so it checks every child: this is the one periodic
 *   reconcile that costs a third request (docs/memcached.md, "API cost").
 * - `Requeue` (Memcached never requeues itself; a `Requeue` is a redelivered or hand-sent poke
 *   of the object): no; anything that happened to the Service arrives as its own `Owned` event.
 * - `Related` (the referenced ConfigMap changed): no; it changes the Deployment only.
 *
 * A message that stands for several events (merged by the forwarder's coalescer or grouped in
 * one batch) carries no `resourceVersion`, so it never passes for the Deployment's own event.
 */
export function serviceCheck(
  message: Pick<ReconcileMessage, 'reason' | 'resourceVersion' | 'ownedKinds'>,
  deployment: DeploymentView | undefined,
  deploymentApplied: boolean,
): ServiceCheck {
  if (deploymentApplied) return 'deployment-applied';
  switch (message.reason) {
    case 'Added':
    case 'Modified':
    case 'Retry':
    case 'Deleted':
      return 'spec-or-retry';
    case 'Owned':
      if (message.ownedKinds !== undefined) return message.ownedKinds.includes(SERVICES.kind) ? 'owned-event' : undefined;
      return message.resourceVersion !== undefined && message.resourceVersion === deployment?.metadata.resourceVersion ? undefined : 'owned-event';
    case 'Resync':
      return 'resync';
    case 'Requeue':
    case 'Related':
      return undefined;
  }
}

/**
 * How a reconcile decides to list the pods. `skip-unobserved` (the default) is
 * `podsNeedListing` as documented below; `every-change` lists whenever the Deployment's version
 * or the generation moved, also before the Deployment controller has observed the Deployment
 * (the rule before issue 33; kept for the benchmark's before/after run,
 * `OPERLESS_MEMCACHED_POD_LISTING`).
 */
export const POD_LISTINGS = ['skip-unobserved', 'every-change'] as const;
export type PodListing = (typeof POD_LISTINGS)[number];
export const POD_LISTING_VARIABLE = 'OPERLESS_MEMCACHED_POD_LISTING';

/** The pod listing a variable's value asks for: unset or empty is the default; anything else is refused, naming the variable. */
export function podListingFrom(value: string | undefined, source: string = POD_LISTING_VARIABLE): PodListing {
  if (value === undefined || value === '') return 'skip-unobserved';
  if ((POD_LISTINGS as readonly string[]).includes(value)) return value as PodListing;
  throw new Error(`${source}: ${JSON.stringify(value)} is not a pod listing; choose from ${POD_LISTINGS.join(', ')} (or leave it unset)`);
}

/**
 * Whether the pods must be listed to compute `status.nodes` and `readyReplicas`.
 *
 * The status records the Deployment `resourceVersion` it was computed from. Pods of the
 * Deployment change only through its ReplicaSets, and every change in their number or
 * readiness changes the ReplicaSet's status and then the Deployment's (replicas,
 * readyReplicas, availableReplicas, updatedReplicas, conditions): so while the Deployment's
 * resourceVersion is the recorded one, the recorded nodes are current. They are listed again
 * when the Deployment changed, when no version was recorded (first reconcile, older status), or
 * when the Memcached's generation moved (the status must be recomputed for the new spec) —
 * except while the Deployment controller has not observed the Deployment yet (no
 * `status.observedGeneration`: typically the reconcile that just created it) and the status
 * records no nodes: the Deployment then has no ReplicaSet of its own, so no pods, and the
 * recorded empty summary is current. Its first sync writes the Deployment's status (a new
 * `resourceVersion`, an `Owned` event), and that reconcile lists. With nodes recorded (a
 * Deployment recreated over running pods, say) it lists as before.
 */
export function podsNeedListing(mc: Memcached, deployment: DeploymentView, listing: PodListing = 'skip-unobserved'): boolean {
  const status = mc.status;
  if (listing === 'skip-unobserved' && deploymentUnobserved(deployment) && (status?.nodes?.length ?? 0) === 0 && (status?.readyReplicas ?? 0) === 0)
    return false;
  if (!status?.deploymentResourceVersion || !status.nodes || status.readyReplicas === undefined) return true;
  if (status.observedGeneration !== mc.metadata.generation) return true;
  return status.deploymentResourceVersion !== deployment.metadata.resourceVersion;
}

/** No Deployment controller has synced this Deployment yet: it has created or adopted no ReplicaSet. */
function deploymentUnobserved(deployment: DeploymentView): boolean {
  return deployment.status?.observedGeneration === undefined;
}
