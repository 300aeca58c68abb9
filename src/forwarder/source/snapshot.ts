/**
 * Object snapshots: the few facts about a watched object that the forwarder's decisions
 * need, kept per uid instead of whole objects (bounded memory: hashes, not annotations).
 *
 * Guarantees: `snapshotOf` is pure and total on anything the API server sends (missing
 * fields become empty values); two snapshots compare equal on an aspect exactly when that
 * aspect of the objects is equal (JSON of the API server's canonical, key-sorted output).
 * The size of a snapshot is bounded whatever the object holds: the controller reference's
 * strings (which the API server does not bound) are cut to one character more than the
 * contract allows, so a too-long value stays too long (the router drops it with the same
 * reason) without keeping a megabyte per object. Strings many objects share (namespaces, the
 * controller's apiVersion and kind) are kept once (`interned`, a pool of bounded size: values
 * past it are kept per object, so no input grows it without bound), and a controller named
 * like its object keeps the object's name string. The annotations compared leave out the
 * function's pending-requeue mark (contract/requeue-mark.ts): its writes never trigger.
 */
import { createHash } from 'node:crypto';
import { MAX_FIELD_LENGTH } from '../../contract/message.ts';
import { fieldValue } from '../../contract/related.ts';
import { withoutRuntimeMarks } from '../../contract/requeue-mark.ts';

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
  /**
   * Kinds without generation only: a digest of everything but metadata and status (a
   * ConfigMap's `data`, a Secret's `data`), so a data change is told apart from a
   * metadata-only one even when both happen in one write (`kubectl apply` also rewrites an
   * annotation).
   */
  readonly content?: string;
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
  /**
   * The values of the fields its watch declared (`ResolvedWatch.fields`: what related mappings
   * read — a primary's spec paths, a related object's `label:<key>`), by field; one that is not
   * a non-empty string is absent. Only these values are kept, never the spec.
   */
  readonly refs?: Readonly<Record<string, string>>;
}

type Meta = {
  uid?: unknown;
  name?: unknown;
  namespace?: unknown;
  resourceVersion?: unknown;
  generation?: unknown;
  labels?: unknown;
  annotations?: unknown;
  finalizers?: unknown;
  ownerReferences?: unknown;
  deletionTimestamp?: unknown;
  managedFields?: unknown;
};

function digest(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object' && Object.keys(value).length === 0) return '';
  const json = JSON.stringify(value);
  return json.length <= 64 ? json : createHash('sha1').update(json).digest('base64');
}

/** How many distinct strings `interned` keeps; past that a value is kept per object as before. */
export const INTERN_POOL_SIZE = 4096;
const pool = new Map<string, string>();

/** One string object for every equal value (while the pool has room): a namespace, an apiVersion, a kind. */
export function interned(value: string): string {
  const kept = pool.get(value);
  if (kept !== undefined) return kept;
  if (pool.size < INTERN_POOL_SIZE) pool.set(value, value);
  return value;
}

/** How many strings the pool keeps (at most `INTERN_POOL_SIZE`). */
export const internPoolSize = (): number => pool.size;

/** `value` cut to one character more than `max`: still valid when it was, still too long when it was. */
const bounded = (value: string, max: number): string => (value.length > max + 1 ? value.slice(0, max + 1) : value);

/**
 * The controller: the FIRST owner reference with `controller: true`, as `metav1.GetControllerOf`
 * (and controller-runtime's `Owns()`) decide. The API server refuses a second controller
 * reference; should one be served anyway, the later ones are ignored.
 */
function controllerOf(refs: unknown, objectName: string): ControllerRef | undefined {
  if (!Array.isArray(refs)) return undefined;
  for (const ref of refs as unknown[]) {
    if (typeof ref !== 'object' || ref === null) continue;
    const r = ref as Record<string, unknown>;
    if (r.controller !== true) continue;
    if (typeof r.apiVersion !== 'string' || typeof r.kind !== 'string' || typeof r.name !== 'string') return undefined;
    return {
      apiVersion: interned(bounded(r.apiVersion, MAX_FIELD_LENGTH.apiVersion)),
      kind: interned(bounded(r.kind, MAX_FIELD_LENGTH.kind)),
      name: r.name === objectName && objectName.length <= MAX_FIELD_LENGTH.name + 1 ? objectName : bounded(r.name, MAX_FIELD_LENGTH.name),
      uid: typeof r.uid === 'string' ? bounded(r.uid, MAX_FIELD_LENGTH.uid) : '',
    };
  }
  return undefined;
}

/** A label's value (a `label:<key>` field), or a spec path's string value. */
function refValue(object: Record<string, unknown>, field: string): string | undefined {
  if (!field.startsWith('label:')) return fieldValue(object, field);
  const labels = (object.metadata as Meta | undefined)?.labels;
  const value = typeof labels === 'object' && labels !== null ? (labels as Record<string, unknown>)[field.slice('label:'.length)] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The values of `fields` in `object` (cut like the controller reference's names, so a too-long one stays too long). */
function refsOf(object: Record<string, unknown>, fields: readonly string[]): { refs?: Record<string, string> } {
  const refs: Record<string, string> = {};
  for (const path of fields) {
    const value = refValue(object, path);
    if (value !== undefined) refs[path] = bounded(value, MAX_FIELD_LENGTH.name);
  }
  return Object.keys(refs).length > 0 ? { refs } : {};
}

/** Extracts the snapshot of a Kubernetes object (with the values of `fields`); undefined when it has no metadata.uid/name. */
export function snapshotOf(object: Record<string, unknown>, fields: readonly string[] = []): ObjectSnapshot | undefined {
  const meta = (object.metadata ?? {}) as Meta;
  if (typeof meta.uid !== 'string' || typeof meta.name !== 'string') return undefined;
  const controller = controllerOf(meta.ownerReferences, meta.name);
  return {
    uid: meta.uid,
    name: meta.name,
    ...(typeof meta.namespace === 'string' && meta.namespace ? { namespace: interned(meta.namespace) } : {}),
    resourceVersion: typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '',
    ...(typeof meta.generation === 'number' ? { generation: meta.generation } : { content: contentDigest(object) }),
    labels: digest(meta.labels),
    // Without the function's own pending-requeue mark: writing it is bookkeeping, not a change to reconcile.
    annotations: digest(withoutRuntimeMarks(meta.annotations)),
    finalizers: digest(meta.finalizers),
    ownerReferences: digest(meta.ownerReferences),
    deleting: typeof meta.deletionTimestamp === 'string' && meta.deletionTimestamp !== '',
    status: digest(object.status),
    ...(controller ? { controller } : {}),
    ...soleApplierOf(meta.managedFields),
    ...(fields.length > 0 ? refsOf(object, fields) : {}),
  };
}

/** The hash of an object's fields other than apiVersion, kind, metadata and status: always a hash, never the values (a Secret's data is not kept). */
function contentDigest(object: Record<string, unknown>): string {
  const { apiVersion: _a, kind: _k, metadata: _m, status: _s, ...content } = object;
  return createHash('sha1').update(JSON.stringify(content)).digest('base64');
}

function soleApplierOf(managedFields: unknown): { soleApplier?: string } {
  if (!Array.isArray(managedFields) || managedFields.length !== 1) return {};
  const entry = managedFields[0] as { manager?: unknown; operation?: unknown } | null;
  return typeof entry?.manager === 'string' && entry.operation === 'Apply' ? { soleApplier: entry.manager } : {};
}
