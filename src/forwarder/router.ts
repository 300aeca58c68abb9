/**
 * The router: turns one observed change of a watched object into the reconcile requests
 * it implies — for a primary, a request for itself; for an owned object, a request for
 * the owner named by its *controller* owner reference (what controller-runtime's
 * `Owns()` does), for both the old and the new owner if the controller changed.
 *
 * An owned object's creation by its controller is not forwarded (`isCreationEcho`): the
 * reconcile that created it goes on from the object it created, and its own message is
 * acknowledged only once it finished (a failure retries it), so the echo tells the controller
 * nothing — it only cost one more reconcile per child (measured: N = 100 new Memcacheds ran
 * 420 reconciles against the work queue's 254). What happens to the child next (its
 * controllers' status writes, someone else's edit, its deletion) is forwarded as before.
 *
 * Guarantees: pure; never returns two requests for the same key from one change; an owned
 * object whose controller is not a configured primary kind (or is in a namespace the
 * primary is not watched in) yields nothing; ADDED/DELETED of primaries are always
 * forwarded; updates only when the watch's triggers say so.
 */
import { isOperlessFieldManager } from '../contract/field-manager.ts';
import { objectKey, type ObjectRef, type Reason } from '../contract/message.ts';
import { shouldForwardUpdate } from './predicates.ts';
import type { Trigger, WatchRole } from './config.ts';
import type { ControllerRef, ObjectSnapshot } from './snapshot.ts';
import type { Change } from './store.ts';

/** A watch with its REST coordinates resolved (plural and scope known). */
export interface ResolvedWatch {
  readonly role: WatchRole;
  readonly apiVersion: string;
  readonly kind: string;
  readonly group: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly namespaces: readonly string[];
  readonly labelSelector?: string;
  readonly triggers: readonly Trigger[];
  /** Primaries: the queue of this kind's messages (see queues.ts). */
  readonly queueUrl?: string;
}

/** One "reconcile this object" request, before it becomes a message. */
export interface Forward {
  readonly ref: ObjectRef;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly reason: Reason;
}

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

function primaryRequest(clusterId: string, watch: ResolvedWatch, s: ObjectSnapshot, reason: Reason): Forward {
  return {
    ref: { cluster: clusterId, apiVersion: watch.apiVersion, kind: watch.kind, ...(s.namespace ? { namespace: s.namespace } : {}), name: s.name },
    uid: s.uid,
    ...(s.resourceVersion ? { resourceVersion: s.resourceVersion } : {}),
    reason,
  };
}

/** The owner request for a child, or undefined when the owner is not a watched primary. */
export function ownerRequest(clusterId: string, child: ObjectSnapshot, owner: ControllerRef, primaries: readonly ResolvedWatch[]): Forward | undefined {
  const group = groupOf(owner.apiVersion);
  const primary = primaries.find((p) => p.kind === owner.kind && p.group === group);
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

/** Requests implied by one change of an object of `watch`. */
export function route(clusterId: string, watch: ResolvedWatch, change: Change, primaries: readonly ResolvedWatch[]): Forward[] {
  if (watch.role === 'primary') {
    switch (change.type) {
      case 'ADDED':
        return [primaryRequest(clusterId, watch, change.current, 'Added')];
      case 'DELETED':
        return [primaryRequest(clusterId, watch, change.current, 'Deleted')];
      case 'MODIFIED':
        return change.old && !shouldForwardUpdate(watch.triggers, change.old, change.current)
          ? []
          : [primaryRequest(clusterId, watch, change.current, 'Modified')];
    }
  }
  if (change.type === 'MODIFIED' && change.old && !shouldForwardUpdate(watch.triggers, change.old, change.current)) return [];
  if (isCreationEcho(change)) return [];
  const owners: ControllerRef[] = [];
  if (change.current.controller) owners.push(change.current.controller);
  const previous = change.old?.controller;
  if (previous && (previous.uid !== change.current.controller?.uid || previous.name !== change.current.controller?.name)) owners.push(previous);
  const out: Forward[] = [];
  const keys = new Set<string>();
  for (const owner of owners) {
    const request = ownerRequest(clusterId, change.current, owner, primaries);
    if (!request) continue;
    const key = objectKey(request.ref);
    if (keys.has(key)) continue;
    keys.add(key);
    out.push(request);
  }
  return out;
}

/** Requests for a full resync of a primary stream (every listed object, reason Resync). */
export function resyncRequests(clusterId: string, watch: ResolvedWatch, objects: readonly ObjectSnapshot[]): Forward[] {
  if (watch.role !== 'primary') return [];
  return objects.map((s) => primaryRequest(clusterId, watch, s, 'Resync'));
}
