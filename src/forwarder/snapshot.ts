/**
 * Object snapshots: the few facts about a watched object that the forwarder's decisions
 * need, kept per uid instead of whole objects (bounded memory: hashes, not annotations).
 *
 * Guarantees: `snapshotOf` is pure and total on anything the API server sends (missing
 * fields become empty values); two snapshots compare equal on an aspect exactly when that
 * aspect of the objects is equal (JSON of the API server's canonical, key-sorted output).
 */
import { createHash } from 'node:crypto';

export interface ControllerRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

export interface ObjectSnapshot {
  readonly uid: string;
  readonly name: string;
  readonly namespace?: string;
  readonly resourceVersion: string;
  /** Absent for kinds that do not track generation (ConfigMap, Secret, ...). */
  readonly generation?: number;
  readonly labels: string;
  readonly annotations: string;
  readonly finalizers: string;
  readonly ownerReferences: string;
  readonly deleting: boolean;
  readonly status: string;
  /** The owner reference with `controller: true`, if any (what `Owns()` maps through). */
  readonly controller?: ControllerRef;
  /** The field manager, when exactly one has written the object and with a server-side apply (`metadata.managedFields`). */
  readonly soleApplier?: string;
}

type Meta = {
  uid?: unknown; name?: unknown; namespace?: unknown; resourceVersion?: unknown; generation?: unknown;
  labels?: unknown; annotations?: unknown; finalizers?: unknown; ownerReferences?: unknown; deletionTimestamp?: unknown;
  managedFields?: unknown;
};

function digest(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object' && Object.keys(value).length === 0) return '';
  const json = JSON.stringify(value);
  return json.length <= 64 ? json : createHash('sha1').update(json).digest('base64');
}

function controllerOf(refs: unknown): ControllerRef | undefined {
  if (!Array.isArray(refs)) return undefined;
  for (const ref of refs as Record<string, unknown>[]) {
    if (ref && ref.controller === true && typeof ref.apiVersion === 'string' && typeof ref.kind === 'string' && typeof ref.name === 'string') {
      return { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, uid: typeof ref.uid === 'string' ? ref.uid : '' };
    }
  }
  return undefined;
}

/** Extracts the snapshot of a Kubernetes object; undefined when it has no metadata.uid/name. */
export function snapshotOf(object: Record<string, unknown>): ObjectSnapshot | undefined {
  const meta = (object.metadata ?? {}) as Meta;
  if (typeof meta.uid !== 'string' || typeof meta.name !== 'string') return undefined;
  const controller = controllerOf(meta.ownerReferences);
  return {
    uid: meta.uid,
    name: meta.name,
    ...(typeof meta.namespace === 'string' && meta.namespace ? { namespace: meta.namespace } : {}),
    resourceVersion: typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '',
    ...(typeof meta.generation === 'number' ? { generation: meta.generation } : {}),
    labels: digest(meta.labels),
    annotations: digest(meta.annotations),
    finalizers: digest(meta.finalizers),
    ownerReferences: digest(meta.ownerReferences),
    deleting: typeof meta.deletionTimestamp === 'string' && meta.deletionTimestamp !== '',
    status: digest(object.status),
    ...(controller ? { controller } : {}),
    ...soleApplierOf(meta.managedFields),
  };
}

function soleApplierOf(managedFields: unknown): { soleApplier?: string } {
  if (!Array.isArray(managedFields) || managedFields.length !== 1) return {};
  const entry = managedFields[0] as { manager?: unknown; operation?: unknown } | null;
  return typeof entry?.manager === 'string' && entry.operation === 'Apply' ? { soleApplier: entry.manager } : {};
}
