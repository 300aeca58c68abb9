/**
 * Cluster-wide RBAC rewritten for a namespace scope (scope.ts): what `operless rbac
 * --namespaces` prints and `operless create api --namespaces` writes for the functions' and
 * the forwarder's identities, from the ONE rule file each ships (a ClusterRole and its
 * ClusterRoleBinding).
 *
 * Each ClusterRole bound by a ClusterRoleBinding becomes, in every namespace of the scope, a
 * Role with the same rules and a RoleBinding with the same subjects — so the identity can do
 * its work in those namespaces and nothing anywhere else, not even a cluster-wide list of
 * the same kinds. The exceptions are explicit: rules on cluster-scoped resources (Namespaces,
 * CRDs, ... — `clusterScoped`) and `nonResourceURLs` cannot live in a Role, so they stay in a
 * ClusterRole that holds only them (absent when there are none). A wildcard resource (`*`)
 * is read as "every namespaced resource" (a Role is the narrower reading).
 *
 * Guarantees: an empty scope returns the objects unchanged; anything that is not a
 * ClusterRole or ClusterRoleBinding is kept as it is; a ClusterRole nothing binds is kept as
 * it is (it grants nothing). Deterministic and pure.
 */

/** One RBAC rule as written in a role. */
export interface RbacRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
}

/** The fields of an RBAC object (or any other manifest object, passed through). */
export interface RbacObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly [field: string]: unknown;
  };
  readonly rules?: readonly RbacRule[];
  readonly roleRef?: { readonly apiGroup?: string; readonly kind?: string; readonly name?: string };
  readonly subjects?: readonly Readonly<Record<string, unknown>>[];
  readonly [field: string]: unknown;
}

/**
 * The built-in cluster-scoped resources by API group (Kubernetes 1.34), plus CRDs. A project's
 * own cluster-scoped kinds are added by the caller (`clusterScopedOf`).
 */
const BUILTIN_CLUSTER_SCOPED: Readonly<Record<string, readonly string[]>> = {
  '': ['namespaces', 'nodes', 'persistentvolumes', 'componentstatuses'],
  'rbac.authorization.k8s.io': ['clusterroles', 'clusterrolebindings'],
  'apiextensions.k8s.io': ['customresourcedefinitions'],
  'apiregistration.k8s.io': ['apiservices'],
  'admissionregistration.k8s.io': [
    'mutatingwebhookconfigurations',
    'validatingwebhookconfigurations',
    'validatingadmissionpolicies',
    'validatingadmissionpolicybindings',
  ],
  'storage.k8s.io': ['storageclasses', 'csidrivers', 'csinodes', 'volumeattachments'],
  'scheduling.k8s.io': ['priorityclasses'],
  'node.k8s.io': ['runtimeclasses'],
  'networking.k8s.io': ['ingressclasses'],
  'certificates.k8s.io': ['certificatesigningrequests'],
  'authentication.k8s.io': ['tokenreviews', 'selfsubjectreviews'],
  'authorization.k8s.io': ['subjectaccessreviews', 'selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
  'flowcontrol.apiserver.k8s.io': ['flowschemas', 'prioritylevelconfigurations'],
};

/** Whether a resource (`group`, `resource` without subresource) is cluster-scoped. */
export type ClusterScoped = (group: string, resource: string) => boolean;

/** The built-in rule, extended with the given cluster-scoped kinds (`{ group, plural }`). */
export function clusterScopedOf(extra: readonly { readonly group: string; readonly plural: string }[] = []): ClusterScoped {
  return (group, resource) => (BUILTIN_CLUSTER_SCOPED[group] ?? []).includes(resource) || extra.some((k) => k.group === group && k.plural === resource);
}

const RBAC_API = 'rbac.authorization.k8s.io/v1';

/** A rule split into its namespaced part and its cluster-scoped part (either may be absent). */
function splitRule(rule: RbacRule, clusterScoped: ClusterScoped): { namespaced?: RbacRule; cluster?: RbacRule } {
  if (rule.nonResourceURLs?.length) return { cluster: rule };
  const groups = rule.apiGroups ?? [];
  const resources = rule.resources ?? [];
  const isCluster = (r: string) => groups.some((g) => clusterScoped(g, r.split('/')[0] ?? r));
  const cluster = resources.filter(isCluster);
  const namespaced = resources.filter((r) => !isCluster(r));
  return {
    ...(namespaced.length > 0 ? { namespaced: { ...rule, resources: namespaced } } : {}),
    ...(cluster.length > 0 ? { cluster: { ...rule, resources: cluster } } : {}),
  };
}

/** The RBAC objects for `scope` (see the module header). */
export function namespacedRbac(objects: readonly RbacObject[], scope: readonly string[], clusterScoped: ClusterScoped = clusterScopedOf()): RbacObject[] {
  if (scope.length === 0) return [...objects];
  const bound = new Set(objects.filter((o) => o.kind === 'ClusterRoleBinding' && o.roleRef?.kind === 'ClusterRole').map((o) => o.roleRef?.name));
  const out: RbacObject[] = [];
  for (const object of objects) {
    if (object.kind === 'ClusterRole' && bound.has(object.metadata?.name)) out.push(...scopedRole(object, scope, clusterScoped));
    else if (object.kind === 'ClusterRoleBinding' && object.roleRef?.kind === 'ClusterRole') out.push(...scopedBinding(object, objects, scope, clusterScoped));
    else out.push(object);
  }
  return out;
}

function parts(role: RbacObject, clusterScoped: ClusterScoped): { namespaced: RbacRule[]; cluster: RbacRule[] } {
  const split = (role.rules ?? []).map((r) => splitRule(r, clusterScoped));
  return { namespaced: split.flatMap((s) => (s.namespaced ? [s.namespaced] : [])), cluster: split.flatMap((s) => (s.cluster ? [s.cluster] : [])) };
}

function scopedRole(role: RbacObject, scope: readonly string[], clusterScoped: ClusterScoped): RbacObject[] {
  const { namespaced, cluster } = parts(role, clusterScoped);
  const metadata = { ...role.metadata };
  return [
    ...(cluster.length > 0 ? [{ ...role, metadata, rules: cluster }] : []),
    ...(namespaced.length > 0
      ? scope.map((namespace) => ({ apiVersion: RBAC_API, kind: 'Role', metadata: { ...metadata, namespace }, rules: namespaced }))
      : []),
  ];
}

function scopedBinding(binding: RbacObject, objects: readonly RbacObject[], scope: readonly string[], clusterScoped: ClusterScoped): RbacObject[] {
  const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata?.name === binding.roleRef?.name);
  if (!role) return [binding]; // a role shipped elsewhere: not ours to split
  const { namespaced, cluster } = parts(role, clusterScoped);
  return [
    ...(cluster.length > 0 ? [binding] : []),
    ...(namespaced.length > 0
      ? scope.map((namespace) => ({
          apiVersion: RBAC_API,
          kind: 'RoleBinding',
          metadata: { ...binding.metadata, namespace },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata?.name },
          subjects: binding.subjects ?? [],
        }))
      : []),
  ];
}
