/**
 * Namespace scope: the namespaces an operator runs for — Operless's form of operator-sdk's
 * `WATCH_NAMESPACE` and controller-runtime's `cache.Options.DefaultNamespaces`. One value, a
 * list of namespace names; empty = cluster-wide (the default). The same value goes to every
 * component: the forwarder (config `namespaces`, env `OPERLESS_NAMESPACES`: one list+watch per
 * namespace per kind), the functions (env `OPERLESS_NAMESPACES`: resync lists per namespace, a
 * message for another namespace goes to the DLQ) and the RBAC (a Role and RoleBinding per
 * namespace instead of a ClusterRole, `namespacedRbac`).
 *
 * Guarantees: a scope is a sorted list of distinct RFC 1123 labels (the one validator,
 * contract/names.ts); `parseNamespaceScope` either returns one or throws a
 * `NamespaceScopeError` whose message names the field (or variable) and the bad entry.
 * Cluster-scoped objects (no namespace) are never refused by a scope: whether an identity may
 * reach them is its RBAC's business (docs/security.md, "Namespace-scoped operation"). Pure.
 */
import { isDnsLabel } from '../contract/names.ts';

/** The environment variable of the scope, read by the forwarder and the functions alike. */
export const NAMESPACES_ENV = 'OPERLESS_NAMESPACES';

export class NamespaceScopeError extends Error {
  override readonly name = 'NamespaceScopeError';
}

/** The entries of a written list: separated by commas and/or white space (as `WATCH_NAMESPACE="a,b"`). */
export function splitNamespaceList(text: string): string[] {
  return text.split(/[\s,]+/).filter((entry) => entry !== '');
}

/** What is wrong with one entry of a scope, else undefined. */
export function namespaceProblem(entry: unknown): string | undefined {
  if (isDnsLabel(entry)) return undefined;
  return `must be a namespace name (RFC 1123 label: lower-case letters, digits and "-", at most 63 characters), got ${JSON.stringify(entry)}`;
}

/**
 * The scope written in `text` (`"team-a,team-b"`; undefined or blank = cluster-wide), sorted
 * and without repeats. Throws naming `field` (e.g. `OPERLESS_NAMESPACES`) and the bad entry.
 */
export function parseNamespaceScope(text: string | undefined, field: string): string[] {
  const entries = splitNamespaceList(text ?? '');
  for (const entry of entries) {
    const problem = namespaceProblem(entry);
    if (problem) throw new NamespaceScopeError(`${field}: every entry ${problem} (a comma-separated list of namespaces; empty = all namespaces)`);
  }
  return [...new Set(entries)].sort();
}

/** True when an object in `namespace` (undefined: cluster-scoped) is inside `scope` (empty: everything is). */
export function inScope(scope: readonly string[], namespace: string | undefined): boolean {
  return scope.length === 0 || namespace === undefined || scope.includes(namespace);
}

/** The namespaces to list or watch a namespaced kind in: the scope's, or `[undefined]` for all at once. */
export function namespacesToList(scope: readonly string[]): (string | undefined)[] {
  return scope.length > 0 ? [...scope] : [undefined];
}
