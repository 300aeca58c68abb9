/**
 * REST paths from a `KindRef`, without discovery requests: `apiVersion` says whether the
 * kind lives in the core group (`/api/v1`) or a named group (`/apis/<group>/<version>`),
 * `plural` and `namespaced` complete the path. A cold function therefore makes exactly one
 * request for its first GET. The functions' client and the forwarder's watches build their
 * paths here (`resourcePath` for an object, `collectionPath` for what is listed and watched).
 */
import type { KindRef } from './types.ts';

export interface PathOptions {
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  readonly subresource?: 'status' | undefined;
}

/** `/api/v1` for the core group, `/apis/<group>/<version>` for a named one: also the group version's discovery document. */
export function groupVersionPrefix(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** What a collection path needs of a kind (a `KindRef` has it; so has a resolved watch). */
export type CollectionCoordinates = Pick<KindRef, 'apiVersion' | 'plural' | 'namespaced'>;

/**
 * `/apis/<group>/<version>[/namespaces/<ns>]/<plural>`, the path to list or watch: the
 * namespace is used only for a namespaced kind, and without one the collection spans all
 * namespaces. Pure; never throws (what to list is the caller's choice).
 */
export function collectionPath(kind: CollectionCoordinates, namespace?: string): string {
  const ns = kind.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${groupVersionPrefix(kind.apiVersion)}${ns}/${kind.plural}`;
}

/** `/apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/status]]`; throws on a scope mistake. */
export function resourcePath(kind: KindRef, options: PathOptions = {}): string {
  const { namespace, name, subresource } = options;
  if (kind.namespaced && !namespace && name !== undefined) {
    throw new TypeError(`${kind.kind} is namespaced: a namespace is needed to address ${kind.kind} "${name}"`);
  }
  if (!kind.namespaced && namespace) {
    throw new TypeError(`${kind.kind} is cluster-scoped: it has no namespace, got "${namespace}"`);
  }
  let path = collectionPath(kind, namespace);
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource) {
    if (name === undefined) throw new TypeError(`the ${subresource} subresource needs an object name`);
    path += `/${subresource}`;
  }
  return path;
}

/** The API group of an apiVersion (`''` for the core group): `apps/v1` → `apps`, `v1` → `''`. Pure. */
export function apiGroup(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}
