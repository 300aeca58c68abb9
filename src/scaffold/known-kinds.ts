/**
 * The built-in Kubernetes kinds a scaffolded controller can own (`--owns Deployment,Service`)
 * or watch: the typed catalogue (kube/kinds.ts) — their apiVersion, REST plural and scope are
 * what the forwarder watch entries, the RBAC rules and the `owns` list of the generated
 * controller need, and the generated controller imports them from `operless/kinds`.
 *
 * Guarantee: `resolveOwned` accepts a kind by its name in any case, or by its plural, and
 * refuses anything else with the list of kinds it knows; a namespaced owner cannot own a
 * cluster-scoped kind (Kubernetes does not allow such owner references).
 */
import { OWNABLE_KINDS } from '../kube/kinds.ts';
import type { KindRef } from '../kube/types.ts';
import { ScaffoldError } from './names.ts';

/** The built-in kinds a controller may own or watch: the typed catalogue's (kube/kinds.ts, `operless/kinds`). */
export const BUILTIN_KINDS: readonly KindRef[] = OWNABLE_KINDS;

/** True for a kind of the catalogue (generated code imports it from `operless/kinds`). */
export function isBuiltinKind(ref: KindRef): boolean {
  return BUILTIN_KINDS.some((k) => k.apiVersion === ref.apiVersion && k.kind === ref.kind);
}

/**
 * The kinds named by `--owns` (comma-separated; repeats removed), checked against the
 * owner's scope. `extra` are kinds the project itself defines (they may be owned too).
 */
export function resolveOwned(list: string, ownerNamespaced: boolean, extra: readonly KindRef[] = []): KindRef[] {
  const known = [...BUILTIN_KINDS, ...extra];
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const owned: KindRef[] = [];
  for (const name of names) {
    const wanted = name.toLowerCase();
    const match = known.find((k) => k.kind.toLowerCase() === wanted || k.plural === wanted);
    if (!match) {
      throw new ScaffoldError(
        `--owns: unknown kind ${JSON.stringify(name)}. Known kinds: ${known.map((k) => k.kind).join(', ')}. ` +
          'For another kind, add it to `owns` in the controller by hand (apiVersion, kind, plural, namespaced).',
      );
    }
    if (ownerNamespaced && !match.namespaced) {
      throw new ScaffoldError(
        `--owns ${match.kind}: a namespaced kind cannot own the cluster-scoped ${match.kind} (Kubernetes ignores such owner references); make the kind --cluster-scoped`,
      );
    }
    if (!owned.some((k) => k.kind === match.kind && k.apiVersion === match.apiVersion)) owned.push(match);
  }
  return owned;
}

/**
 * The kinds named by `--watches` (comma-separated; repeats removed): related kinds the
 * controller reads but does not own, each mapped to its primaries by a `spec.<kind>Ref.name`
 * field. A related object maps to primaries of its own namespace, so both must be namespaced.
 */
export function resolveRelated(list: string, primaryNamespaced: boolean, extra: readonly KindRef[] = []): KindRef[] {
  const known = [...BUILTIN_KINDS, ...extra].filter((k) => k.namespaced);
  const related: KindRef[] = [];
  for (const name of list
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x.length > 0)) {
    const wanted = name.toLowerCase();
    const match = known.find((k) => k.kind.toLowerCase() === wanted || k.plural === wanted);
    if (!match) {
      throw new ScaffoldError(
        `--watches: unknown or cluster-scoped kind ${JSON.stringify(name)}. Known namespaced kinds: ${known.map((k) => k.kind).join(', ')}. ` +
          'For another kind, add it to `watches` in the controller by hand ({ kind, map }).',
      );
    }
    if (!primaryNamespaced)
      throw new ScaffoldError(`--watches ${match.kind}: a related object maps to primaries in its own namespace; the kind must be --namespaced`);
    if (!related.some((k) => k.kind === match.kind && k.apiVersion === match.apiVersion)) related.push(match);
  }
  return related;
}
