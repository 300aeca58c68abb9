/**
 * Related objects: how a change of an object a primary *refers to* (a ConfigMap, a Secret) maps
 * to the primaries to reconcile. The controller declares it (`ControllerSpec.watches`), the
 * forwarder applies it (route/related-index.ts); this module is the one definition both read.
 *
 * A mapping is declarative, so the forwarder resolves it from what it already watches, with no
 * API request and no function invocation per change:
 * - `{ field: 'spec.configMapRef.name' }` — the primaries of the related object's namespace
 *   whose string field at that path names it (the forwarder keeps that one field's value per
 *   primary, never the object);
 * - `{ label: 'cache.example.com/memcached' }` — the primary (same namespace) named by the
 *   value of that label on the related object;
 * - `{ namespace: true }` — every primary in the related object's namespace.
 * A related kind is namespaced and the mapping never crosses namespaces.
 *
 * Guarantees: `relatedMappingProblem` accepts exactly the mappings the forwarder's schema
 * accepts (one pattern, `FIELD_PATH_PATTERN`); `fieldValue` is pure and total (undefined for
 * anything but a non-empty string at the path).
 */
import { isQualifiedName } from './names.ts';

export type RelatedMapping = { readonly field: string } | { readonly label: string } | { readonly namespace: true };

/** A dotted path into the primary's `spec`: `spec.<field>(.<field>)*`, at most 253 characters. */
export const FIELD_PATH_PATTERN = '^spec(\\.[A-Za-z_][A-Za-z0-9_]*)+$';
export const FIELD_PATH_MAX_LENGTH = 253;
const FIELD_PATH = new RegExp(FIELD_PATH_PATTERN);

export function isFieldPath(value: unknown): value is string {
  return typeof value === 'string' && value.length <= FIELD_PATH_MAX_LENGTH && FIELD_PATH.test(value);
}

/** Why `mapping` is not a related mapping, or undefined when it is one. Pure. */
export function relatedMappingProblem(mapping: unknown): string | undefined {
  if (typeof mapping !== 'object' || mapping === null) return 'must be one of { field: "spec.<path>" }, { label: "<label key>" }, { namespace: true }';
  const keys = Object.keys(mapping);
  const m = mapping as Record<string, unknown>;
  if (keys.length !== 1) return `must have exactly one of field, label, namespace, got ${JSON.stringify(keys)}`;
  if ('field' in m)
    return isFieldPath(m.field) ? undefined : `field must be a path into the primary's spec like "spec.configMapRef.name", got ${JSON.stringify(m.field)}`;
  if ('label' in m)
    return isQualifiedName(m.label) ? undefined : `label must be a label key like "cache.example.com/memcached", got ${JSON.stringify(m.label)}`;
  if ('namespace' in m) return m.namespace === true ? undefined : "namespace must be true (every primary in the related object's namespace)";
  return `must have one of field, label, namespace, got ${JSON.stringify(keys[0])}`;
}

/** The non-empty string at a dotted `path` of `object`, else undefined. Pure. */
export function fieldValue(object: unknown, path: string): string | undefined {
  let at: unknown = object;
  for (const part of path.split('.')) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = Object.hasOwn(at, part) ? (at as Record<string, unknown>)[part] : undefined;
  }
  return typeof at === 'string' && at !== '' ? at : undefined;
}
