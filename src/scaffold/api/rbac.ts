/**
 * RBAC of a kind's reconcile function (`infra/rbac/<kind>-function.yaml`): the primary (read,
 * finalizers, status), what it owns (server-side apply), what it reads, and Events — bound to
 * the Kubernetes group of the function's identity. Cluster-wide a ClusterRole and its binding;
 * in namespace-scoped mode a Role and RoleBinding per namespace (kube/rbac-scope.ts). Pure.
 */
import { stringify } from 'yaml';
import { apiGroup } from '../../kube/paths.ts';
import { kebab } from '../names.ts';
import type { ApiEntry, ProjectFile } from '../project-file.ts';
import { clusterScopedOf, namespacedRbac, type RbacObject } from '../../kube/rbac-scope.ts';

/**
 * A ClusterRole and its ClusterRoleBinding as YAML, or — in namespace-scoped mode — a Role and
 * RoleBinding per namespace (kube/rbac-scope.ts; the project's cluster-scoped kinds stay in a
 * ClusterRole of their own).
 */
export function rbacYaml(project: ProjectFile, role: RbacObject, binding: RbacObject): string {
  const clusterKinds = project.apis.filter((a) => !a.namespaced).map((a) => ({ group: a.group, plural: a.plural }));
  return namespacedRbac([role, binding], project.namespaces ?? [], clusterScopedOf(clusterKinds))
    .map((o) => stringify(o))
    .join('---\n');
}

export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export function functionRbac(projectFile: ProjectFile, api: ApiEntry): string {
  const project = projectFile.name;
  const name = `${project}-${kebab(api.kind)}`;
  const rules: RbacRule[] = [
    { apiGroups: [api.group], resources: [api.plural], verbs: ['get', 'list', 'watch', 'patch'] },
    { apiGroups: [api.group], resources: [`${api.plural}/status`], verbs: ['get', 'patch', 'update'] },
    { apiGroups: [api.group], resources: [`${api.plural}/finalizers`], verbs: ['update'] },
    ...api.owns.map((o) => ({ apiGroups: [apiGroup(o.apiVersion)], resources: [o.plural], verbs: ['get', 'list', 'create', 'patch', 'delete'] })),
    ...(api.watches ?? [])
      .filter((w) => !api.owns.some((o) => o.kind === w.kind))
      .map((w) => ({ apiGroups: [apiGroup(w.apiVersion)], resources: [w.plural], verbs: ['get'] })),
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'get', 'patch'] },
  ];
  const labels = { 'app.kubernetes.io/name': name, 'app.kubernetes.io/managed-by': 'operless' };
  return `# RBAC for the ${api.kind} reconcile function: the primary (read, finalizers, status), the
# kinds it owns (server-side apply: create + patch), and Events; the scheduled resync function
# (same IAM role) lists the primary. Narrow it to what your controller really uses.
#
# The functions' IAM role is mapped to the Kubernetes group \`${groupName(project, api)}\` (an EKS
# access entry); outside EKS, bind the group or the user in your kubeconfig.${scopeNote(projectFile)}
---
${rbacYaml(
  projectFile,
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels }, rules },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: groupName(project, api) }],
  },
)}`;
}

/** The header line of RBAC generated for a namespace scope. */
export function scopeNote(project: ProjectFile): string {
  return project.namespaces?.length ? `\n# Namespace-scoped (operless.json "namespaces": ${project.namespaces.join(', ')}): a Role per namespace.` : '';
}

/** The Kubernetes group a kind's function identity is bound to. */
export function groupName(project: string, api: ApiEntry): string {
  return `${project}:${kebab(api.kind)}`;
}
