/**
 * Children owned by a primary: a *controller* owner reference (`controller: true`,
 * `blockOwnerDeletion: true`) so the garbage collector deletes the child with its owner and
 * the forwarder maps the child's changes back to the owner (what `Owns()` does in
 * controller-runtime). The child is written with server-side apply by the controller's field
 * manager; applying the same desired child twice changes nothing.
 */
import type { KindRef, KubeClient, KubeObject, OwnerReference } from '../core/types.ts';

export function controllerReference(owner: KubeObject): OwnerReference {
  const uid = owner.metadata.uid;
  if (!uid) throw new TypeError(`the owner ${owner.kind} "${owner.metadata.name}" has no metadata.uid; read it from the API server first`);
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid, controller: true, blockOwnerDeletion: true };
}

/**
 * The child with the owner's controller reference (replacing any reference to the same
 * owner uid) and, for namespaced children without one, the owner's namespace. Pure.
 */
export function withControllerReference<C extends KubeObject>(child: C, owner: KubeObject, childKind: KindRef): C {
  const ref = controllerReference(owner);
  const ownerNamespace = owner.metadata.namespace;
  const namespace = childKind.namespaced ? (child.metadata.namespace ?? ownerNamespace) : undefined;
  if (childKind.namespaced && ownerNamespace && namespace !== ownerNamespace) {
    throw new TypeError(
      `${childKind.kind} "${child.metadata.name}" is in namespace "${namespace}" but its owner ${owner.kind} is in "${ownerNamespace}"; owner references cannot cross namespaces`,
    );
  }
  if (!childKind.namespaced && ownerNamespace) {
    throw new TypeError(`a cluster-scoped ${childKind.kind} cannot be owned by the namespaced ${owner.kind} "${owner.metadata.name}"`);
  }
  const others = (child.metadata.ownerReferences ?? []).filter((r) => r.uid !== ref.uid);
  return {
    ...child,
    apiVersion: child.apiVersion ?? childKind.apiVersion,
    kind: child.kind ?? childKind.kind,
    metadata: { ...child.metadata, ...(namespace ? { namespace } : {}), ownerReferences: [...others, ref] },
  };
}

/** Server-side applies `child` with a controller reference to `owner`. */
export function applyOwned<C extends KubeObject>(client: KubeClient, owner: KubeObject, childKind: KindRef, child: C): Promise<C> {
  return client.apply<C>(childKind, withControllerReference(child, owner, childKind));
}
