/**
 * REST paths from a `KindRef`, without discovery requests: `apiVersion` says whether the
 * kind lives in the core group (`/api/v1`) or a named group (`/apis/<group>/<version>`),
 * `plural` and `namespaced` complete the path. A cold function therefore makes exactly one
 * request for its first GET.
 */
import type { KindRef } from './types.ts';

export interface PathOptions {
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  readonly subresource?: 'status' | undefined;
}

export function groupVersionPrefix(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** `/apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/status]]`. */
export function resourcePath(kind: KindRef, options: PathOptions = {}): string {
  const { namespace, name, subresource } = options;
  if (kind.namespaced && !namespace && name !== undefined) {
    throw new TypeError(`${kind.kind} is namespaced: a namespace is needed to address ${kind.kind} "${name}"`);
  }
  if (!kind.namespaced && namespace) {
    throw new TypeError(`${kind.kind} is cluster-scoped: it has no namespace, got "${namespace}"`);
  }
  let path = groupVersionPrefix(kind.apiVersion);
  if (kind.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${kind.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource) {
    if (name === undefined) throw new TypeError(`the ${subresource} subresource needs an object name`);
    path += `/${subresource}`;
  }
  return path;
}

/** `group` part of an apiVersion (`''` for the core group). */
export function apiGroup(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}
