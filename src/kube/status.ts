/**
 * Status written only when it changed. A reconcile computes the whole desired status; it is
 * compared (deep, key-order-insensitive) with the live status and written through the
 * status subresource with server-side apply only when different. Writing an unchanged
 * status would wake the forwarder and everyone else watching, for nothing.
 *
 * `observedGeneration` is set from `metadata.generation` unless the reconcile set it.
 *
 * Stale writes are refused: the applied object carries the `resourceVersion` the reconcile
 * read (server-side apply treats it as a precondition), so a reconcile that read an older
 * state of the object — a slower duplicate in unordered mode, a reconcile abandoned by its
 * budget that resumes later — gets a 409 Conflict instead of overwriting the status a newer
 * reconcile wrote (an older `observedGeneration`, which no event would ever correct: a
 * primary's status-only changes send no message). The runtime retries a 409 with fresh state.
 */
import type { KindRef, KubeClient, KubeObject } from './types.ts';

/** Deep equality of JSON values; object key order does not matter, array order does. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => Object.hasOwn(bo, k) && jsonEqual(ao[k], bo[k]));
}

/** The status to write: `status` plus `observedGeneration` from the object when absent. */
export function desiredStatus(object: KubeObject, status: Record<string, unknown>): Record<string, unknown> {
  const generation = object.metadata.generation;
  if (status.observedGeneration !== undefined || generation === undefined) return status;
  return { ...status, observedGeneration: generation };
}

/** Applies `status` to `object` if it differs from `object.status`; returns the written object or undefined. */
export async function updateStatus<T extends KubeObject>(
  client: KubeClient,
  kind: KindRef,
  object: T,
  status: Record<string, unknown>,
): Promise<T | undefined> {
  const desired = desiredStatus(object, status);
  if (jsonEqual(desired, object.status ?? {})) return undefined;
  return client.applyStatus<T>(kind, statusApplyBody(object, desired));
}

/**
 * The body of a status apply to `object`: its identity, the `resourceVersion` it was read at
 * (server-side apply's precondition: a stale write gets a 409) and `status`.
 */
export function statusApplyBody(object: KubeObject, status: Record<string, unknown>): KubeObject {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      name: object.metadata.name,
      ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
      ...(object.metadata.resourceVersion ? { resourceVersion: object.metadata.resourceVersion } : {}),
    },
    status,
  };
}
