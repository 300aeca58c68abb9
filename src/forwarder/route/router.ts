/**
 * The router: turns one observed change of a watched object into the reconcile requests
 * it implies — for a primary, a request for itself; for an owned object, a request for
 * the owner named by its *controller* owner reference (what controller-runtime's
 * `Owns()` does), for both the old and the new owner if the controller changed; for a
 * related object, a `Related` request for every primary that refers to it (related-index.ts,
 * what controller-runtime's `Watches` with a map function and a field index does).
 *
 * An owned object's creation by its controller is not forwarded (`isCreationEcho`): the
 * reconcile that created it goes on from the object it created, and its own message is
 * acknowledged only once it finished (a failure retries it), so the echo tells the controller
 * nothing — it only cost one more reconcile per child (measured: docs/forwarder.md, "The echo
 * of a function's own create is not forwarded"). What happens to the child next (its
 * controllers' status writes, someone else's edit, its deletion) is forwarded as before.
 *
 * Hostile input is normal input: the API server accepts owner references with any name, kind
 * or uid, and a primary kind may allow names the contract refuses. Every request is checked
 * with the contract's own validator (`messageProblem`, the check `encodeMessage` makes)
 * before it leaves the router; a request the contract would refuse is *dropped* with one of
 * `DROP_REASONS` and the contract's words, never passed on to the send path.
 *
 * Guarantees: pure; never throws on any snapshot; never returns two requests for the same
 * key from one change; every returned request encodes (the contract accepts it); an owned
 * object whose controller is not a configured *primary* kind (an owned-only or unknown kind,
 * or a primary in a namespace it is not watched in) yields nothing; ADDED/DELETED of
 * primaries are always forwarded (or dropped with a reason); updates only when the watch's
 * triggers say so. The controller is the first owner reference with `controller: true`, as
 * `metav1.GetControllerOf` decides (snapshot.ts).
 */
import { isOperlessFieldManager } from '../../contract/field-manager.ts';
import { messageProblem, newMessage, objectKey, type ObjectRef, type Reason } from '../../contract/message.ts';
import { apiGroup } from '../../kube/paths.ts';
import { shouldForwardUpdate } from './predicates.ts';
import type { ControllerRef, ObjectSnapshot } from '../source/snapshot.ts';
import type { ResolvedWatch } from '../source/watches.ts';
import type { Change } from '../source/store.ts';
import { primaryKindKey, type RelatedIndex } from './related-index.ts';

/** One "reconcile this object" request, before it becomes a message. */
export interface ReconcileRequest {
  readonly ref: ObjectRef;
  readonly uid?: string;
  readonly resourceVersion?: string;
  /** For `Owned`: the kind of the child that changed. */
  readonly ownedKinds?: readonly string[];
  readonly reason: Reason;
}

/**
 * Why a request was dropped at routing (the label values of
 * `operless_forwarder_events_dropped_total{reason}`, a closed set): the field of the message
 * the contract refused — the name (not a DNS-1123 subdomain, empty or longer than 253), the
 * namespace (not a DNS-1123 label), the uid (empty or longer than 128) — or `invalid_other`
 * for anything else the encoder would refuse.
 */
export const DROP_REASONS = ['invalid_name', 'invalid_namespace', 'invalid_uid', 'invalid_other'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

/** A request the contract would refuse: not forwarded, counted and logged by the caller. */
export interface Drop {
  readonly reason: DropReason;
  /** The contract's reason, e.g. `field "name" must be a DNS-1123 subdomain, got "Bad_Name"`. */
  readonly error: string;
  /** Whose message it would have been: the object itself (a primary) or its controller (`owner`). */
  readonly target: 'self' | 'owner';
  /** For `owner`: the owner reference that named it. */
  readonly owner?: ControllerRef;
}

/** What one change (or one list) routes to: valid requests, and the requests dropped with a reason. */
export interface Routed {
  readonly forwards: ReconcileRequest[];
  readonly dropped: Drop[];
}

const DROP_BY_FIELD: Readonly<Record<string, DropReason>> = { name: 'invalid_name', namespace: 'invalid_namespace', uid: 'invalid_uid' };

/** Why the contract would refuse the message of `request`, or undefined when it encodes. Pure. */
export function requestProblem(request: ReconcileRequest): { reason: DropReason; error: string } | undefined {
  const message = newMessage(forwardRef(request), request.reason, 0);
  const problem = messageProblem(message, 0);
  if (!problem) return undefined;
  return { reason: (problem.field !== undefined ? DROP_BY_FIELD[problem.field] : undefined) ?? 'invalid_other', error: problem.error };
}

/** What the message of a request names: the object, and the event's uid, version and child kinds. Pure. */
export function forwardRef(r: ReconcileRequest): Parameters<typeof newMessage>[0] {
  return {
    ...r.ref,
    ...(r.uid ? { uid: r.uid } : {}),
    ...(r.resourceVersion ? { resourceVersion: r.resourceVersion } : {}),
    ...(r.ownedKinds ? { ownedKinds: r.ownedKinds } : {}),
  };
}

function primaryRequest(clusterId: string, watch: ResolvedWatch, s: ObjectSnapshot, reason: Reason): ReconcileRequest {
  return {
    ref: { cluster: clusterId, apiVersion: watch.apiVersion, kind: watch.kind, ...(s.namespace ? { namespace: s.namespace } : {}), name: s.name },
    ...(s.uid ? { uid: s.uid } : {}),
    ...(s.resourceVersion ? { resourceVersion: s.resourceVersion } : {}),
    reason,
  };
}

/**
 * The owner request for a child, or undefined when the owner is not a watched primary: only
 * a primary kind can be an owner (`watches` may hold every watch; owned ones never match).
 * Not yet validated (see `requestProblem`).
 */
export function ownerRequest(
  clusterId: string,
  child: ObjectSnapshot,
  owner: ControllerRef,
  watches: readonly ResolvedWatch[],
  childKind?: string,
): ReconcileRequest | undefined {
  const group = apiGroup(owner.apiVersion);
  const primary = watches.find((p) => p.role === 'primary' && p.kind === owner.kind && p.group === group);
  if (!primary) return undefined;
  if (primary.namespaced && !child.namespace) return undefined; // a cluster-scoped child cannot have a namespaced owner
  if (primary.namespaced && primary.namespaces.length > 0 && !primary.namespaces.includes(child.namespace ?? '')) return undefined;
  return {
    ref: {
      cluster: clusterId,
      apiVersion: primary.apiVersion,
      kind: primary.kind,
      ...(primary.namespaced && child.namespace ? { namespace: child.namespace } : {}),
      name: owner.name,
    },
    ...(owner.uid ? { uid: owner.uid } : {}),
    ...(child.resourceVersion ? { resourceVersion: child.resourceVersion } : {}),
    ...(childKind ? { ownedKinds: [childKind] } : {}),
    reason: 'Owned',
  };
}

/**
 * An owned object that appeared with a controller reference and one writer, a server-side
 * apply by an Operless function's field manager (functions write children with apply):
 * created by a reconcile, seen before any other controller touched it. Created by anyone else
 * (kubectl, a plain create), first seen on a relist after others wrote it (two writers), or
 * served without managedFields: forwarded.
 */
export function isCreationEcho(change: Change): boolean {
  const writer = change.current.soleApplier;
  return change.type === 'ADDED' && change.current.controller !== undefined && writer !== undefined && isOperlessFieldManager(writer);
}

/** Requests implied by one change of an object of `watch` (the valid ones; see `routeChange` for the drops). */
export function route(clusterId: string, watch: ResolvedWatch, change: Change, watches: readonly ResolvedWatch[]): ReconcileRequest[] {
  return routeChange(clusterId, watch, change, watches).forwards;
}

/**
 * Requests implied by one change of an object of `watch`, and those dropped because the contract
 * would refuse them. A related object's change needs the reverse index of the primaries
 * (`related`); without one it routes to nothing.
 */
export function routeChange(clusterId: string, watch: ResolvedWatch, change: Change, watches: readonly ResolvedWatch[], related?: RelatedIndex): Routed {
  const routed: Routed = { forwards: [], dropped: [] };
  if (watch.role === 'related') return related ? routeRelated(clusterId, watch, change, watches, related) : routed;
  if (watch.role === 'primary') {
    const reason = primaryReason(watch, change);
    if (reason) admit(routed, primaryRequest(clusterId, watch, change.current, reason), 'self');
    return routed;
  }
  if (change.type === 'MODIFIED' && change.old && !shouldForwardUpdate(watch.triggers, change.old, change.current)) return routed;
  if (isCreationEcho(change)) return routed;
  const owners: ControllerRef[] = [];
  if (change.current.controller) owners.push(change.current.controller);
  const previous = change.old?.controller;
  if (previous && (previous.uid !== change.current.controller?.uid || previous.name !== change.current.controller?.name)) owners.push(previous);
  const keys = new Set<string>();
  for (const owner of owners) {
    const request = ownerRequest(clusterId, change.current, owner, watches, watch.kind);
    if (!request) continue;
    const key = objectKey(request.ref);
    if (keys.has(key)) continue;
    keys.add(key);
    admit(routed, request, 'owner', owner);
  }
  return routed;
}

/**
 * A related object's change: a `Related` request for every primary its watch's mappings name,
 * now and (for a MODIFIED, e.g. a label that moved) before the change; creation and deletion
 * always, updates when the triggers say so. One request per key; a name held by two uids (an
 * object deleted and recreated) is requested without a uid, so neither hides the other.
 */
export function routeRelated(clusterId: string, watch: ResolvedWatch, change: Change, watches: readonly ResolvedWatch[], index: RelatedIndex): Routed {
  const routed: Routed = { forwards: [], dropped: [] };
  if (change.type === 'MODIFIED' && change.old && !shouldForwardUpdate(watch.triggers, change.old, change.current)) return routed;
  const requests = new Map<string, ReconcileRequest>();
  for (const target of watch.targets ?? []) {
    const kind = primaryKindKey(target);
    const primary = watches.find((w) => w.role === 'primary' && primaryKindKey(w) === kind);
    if (!primary) continue;
    const states = change.old && change.old !== change.current ? [change.current, change.old] : [change.current];
    for (const state of states) {
      for (const p of index.primariesFor(kind, target.map, state)) {
        const request: ReconcileRequest = {
          ref: { cluster: clusterId, apiVersion: primary.apiVersion, kind: primary.kind, namespace: p.namespace, name: p.name },
          uid: p.uid,
          reason: 'Related',
        };
        const key = objectKey(request.ref);
        const seen = requests.get(key);
        requests.set(key, seen && seen.uid !== p.uid ? { ref: request.ref, reason: 'Related' } : request);
      }
    }
  }
  for (const request of requests.values()) admit(routed, request, 'self');
  return routed;
}

function primaryReason(watch: ResolvedWatch, change: Change): Reason | undefined {
  switch (change.type) {
    case 'ADDED':
      return 'Added';
    case 'DELETED':
      return 'Deleted';
    case 'MODIFIED':
      return change.old && !shouldForwardUpdate(watch.triggers, change.old, change.current) ? undefined : 'Modified';
  }
}

/** Adds `request` to the forwards when the contract accepts it, else to the drops. */
function admit(routed: Routed, request: ReconcileRequest, target: Drop['target'], owner?: ControllerRef): void {
  const problem = requestProblem(request);
  if (!problem) routed.forwards.push(request);
  else routed.dropped.push({ ...problem, target, ...(owner ? { owner } : {}) });
}

/** The `Resync` request of a listed primary that `resyncRouted` already admitted (built without checking it again). */
export function resyncRequest(clusterId: string, watch: ResolvedWatch, object: ObjectSnapshot): ReconcileRequest {
  return primaryRequest(clusterId, watch, object, 'Resync');
}

/** Requests for a full resync of a primary stream (every listed object, reason Resync; the valid ones). */
export function resyncRequests(clusterId: string, watch: ResolvedWatch, objects: readonly ObjectSnapshot[]): ReconcileRequest[] {
  return resyncRouted(clusterId, watch, objects).forwards;
}

/** A full resync of a primary stream: a `Resync` per listed object, and the objects dropped (with the object each names). */
export function resyncRouted(
  clusterId: string,
  watch: ResolvedWatch,
  objects: readonly ObjectSnapshot[],
): { forwards: ReconcileRequest[]; dropped: { object: ObjectSnapshot; drop: Drop }[] } {
  const out: { forwards: ReconcileRequest[]; dropped: { object: ObjectSnapshot; drop: Drop }[] } = { forwards: [], dropped: [] };
  if (watch.role !== 'primary') return out;
  for (const object of objects) {
    const routed: Routed = { forwards: out.forwards, dropped: [] };
    admit(routed, primaryRequest(clusterId, watch, object, 'Resync'), 'self');
    for (const drop of routed.dropped) out.dropped.push({ object, drop });
  }
  return out;
}
