/**
 * The built-in Kubernetes kinds a scaffolded controller can own (`--owns Deployment,Service`):
 * their apiVersion, REST plural and scope — what the forwarder watch entries, the RBAC rules
 * and the `owns` list of the generated controller need.
 *
 * Guarantee: `resolveOwned` accepts a kind by its name in any case, or by its plural, and
 * refuses anything else with the list of kinds it knows; a namespaced owner cannot own a
 * cluster-scoped kind (Kubernetes does not allow such owner references).
 */
import type { KindRef } from '../kube/types.ts';
import { pluralOf, ScaffoldError } from './names.ts';

/**
 * The built-in kinds by apiVersion, in the order `--owns` errors list them. Their REST plural
 * is Kubernetes' own rule (`pluralOf`, the one the scaffold uses for new kinds); they are
 * namespaced unless named in `CLUSTER_SCOPED`.
 */
const KINDS_BY_API_VERSION: Readonly<Record<string, readonly string[]>> = {
  v1: ['ConfigMap', 'Secret', 'Service', 'ServiceAccount', 'PersistentVolumeClaim', 'Pod', 'ResourceQuota', 'LimitRange', 'Namespace'],
  'apps/v1': ['Deployment', 'StatefulSet', 'DaemonSet'],
  'batch/v1': ['Job', 'CronJob'],
  'networking.k8s.io/v1': ['Ingress', 'NetworkPolicy'],
  'policy/v1': ['PodDisruptionBudget'],
  'autoscaling/v2': ['HorizontalPodAutoscaler'],
  'rbac.authorization.k8s.io/v1': ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'],
};
const CLUSTER_SCOPED: ReadonlySet<string> = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);

export const BUILTIN_KINDS: readonly KindRef[] = Object.entries(KINDS_BY_API_VERSION).flatMap(([apiVersion, kinds]) =>
  kinds.map((kind) => ({ apiVersion, kind, plural: pluralOf(kind), namespaced: !CLUSTER_SCOPED.has(kind) })),
);

/**
 * The kinds named by `--owns` (comma-separated; repeats removed), checked against the
 * owner's scope. `extra` are kinds the project itself defines (they may be owned too).
 */
export function resolveOwned(list: string, ownerNamespaced: boolean, extra: readonly KindRef[] = []): KindRef[] {
  const known = [...BUILTIN_KINDS, ...extra];
  const names = list.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
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
  for (const name of list.split(',').map((x) => x.trim()).filter((x) => x.length > 0)) {
    const wanted = name.toLowerCase();
    const match = known.find((k) => k.kind.toLowerCase() === wanted || k.plural === wanted);
    if (!match) {
      throw new ScaffoldError(
        `--watches: unknown or cluster-scoped kind ${JSON.stringify(name)}. Known namespaced kinds: ${known.map((k) => k.kind).join(', ')}. ` +
          'For another kind, add it to `watches` in the controller by hand ({ kind, map }).',
      );
    }
    if (!primaryNamespaced) throw new ScaffoldError(`--watches ${match.kind}: a related object maps to primaries in its own namespace; the kind must be --namespaced`);
    if (!related.some((k) => k.kind === match.kind && k.apiVersion === match.apiVersion)) related.push(match);
  }
  return related;
}
