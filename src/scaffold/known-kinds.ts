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
import { ScaffoldError } from './names.ts';

const ref = (apiVersion: string, kind: string, plural: string, namespaced = true): KindRef => ({ apiVersion, kind, plural, namespaced });

export const BUILTIN_KINDS: readonly KindRef[] = [
  ref('v1', 'ConfigMap', 'configmaps'),
  ref('v1', 'Secret', 'secrets'),
  ref('v1', 'Service', 'services'),
  ref('v1', 'ServiceAccount', 'serviceaccounts'),
  ref('v1', 'PersistentVolumeClaim', 'persistentvolumeclaims'),
  ref('v1', 'Pod', 'pods'),
  ref('v1', 'ResourceQuota', 'resourcequotas'),
  ref('v1', 'LimitRange', 'limitranges'),
  ref('v1', 'Namespace', 'namespaces', false),
  ref('apps/v1', 'Deployment', 'deployments'),
  ref('apps/v1', 'StatefulSet', 'statefulsets'),
  ref('apps/v1', 'DaemonSet', 'daemonsets'),
  ref('batch/v1', 'Job', 'jobs'),
  ref('batch/v1', 'CronJob', 'cronjobs'),
  ref('networking.k8s.io/v1', 'Ingress', 'ingresses'),
  ref('networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies'),
  ref('policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets'),
  ref('autoscaling/v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers'),
  ref('rbac.authorization.k8s.io/v1', 'Role', 'roles'),
  ref('rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings'),
  ref('rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', false),
  ref('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
];

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
