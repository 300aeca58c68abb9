/**
 * Finalizer helpers. Adding and removing a finalizer is a JSON merge patch of
 * `metadata.finalizers` that carries the `resourceVersion` read before: if anyone changed
 * the object since (another finalizer removed, a concurrent reconcile), the API server
 * answers 409 Conflict instead of silently overwriting their list, and the runtime retries
 * promptly with fresh state.
 */
import type { KindRef, KubeClient, KubeObject } from './types.ts';

export function hasFinalizer(object: KubeObject, finalizer: string): boolean {
  return object.metadata.finalizers?.includes(finalizer) ?? false;
}

/** The merge patch that sets `finalizers`, guarded by the object's resourceVersion. */
export function finalizersPatch(object: KubeObject, finalizers: readonly string[]): object {
  return {
    metadata: {
      finalizers: [...finalizers],
      ...(object.metadata.resourceVersion ? { resourceVersion: object.metadata.resourceVersion } : {}),
    },
  };
}

/** Adds `finalizer` if missing; returns the updated object (or the same one if nothing changed). */
export async function ensureFinalizer<T extends KubeObject>(client: KubeClient, kind: KindRef, object: T, finalizer: string): Promise<T> {
  if (hasFinalizer(object, finalizer)) return object;
  const finalizers = [...(object.metadata.finalizers ?? []), finalizer];
  return client.mergePatch<T>(kind, object.metadata.name, object.metadata.namespace, finalizersPatch(object, finalizers));
}

/** Removes `finalizer` if present; returns the updated object (or the same one if nothing changed). */
export async function removeFinalizer<T extends KubeObject>(client: KubeClient, kind: KindRef, object: T, finalizer: string): Promise<T> {
  if (!hasFinalizer(object, finalizer)) return object;
  const finalizers = (object.metadata.finalizers ?? []).filter((f) => f !== finalizer);
  return client.mergePatch<T>(kind, object.metadata.name, object.metadata.namespace, finalizersPatch(object, finalizers));
}
