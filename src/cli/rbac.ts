/**
 * The permissions a project's functions need, read from the RBAC they ship
 * (`infra/rbac/*.yaml`: every `ClusterRole` and `Role` rule), as one check per
 * group/resource/subresource/verb — the shape a `SelfSubjectAccessReview` asks about.
 *
 * Guarantees (pure apart from reading the files): the list is deterministic and free of
 * duplicates; wildcards (`*`) are kept as given (the API server understands them in a
 * review); `nonResourceURLs` rules become checks on the URL.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface PermissionCheck {
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly verb: string;
  /** Set for Role rules: the namespace of the Role. */
  readonly namespace?: string;
  readonly resourceName?: string;
  /** For nonResourceURLs rules. */
  readonly path?: string;
  /** The file and role the rule comes from, e.g. `infra/rbac/x.yaml ClusterRole operless-x`. */
  readonly source: string;
}

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface RoleDocument {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  rules?: Rule[];
  subjects?: { kind?: string; name?: string }[];
}

/** The checks for the rules of one role object (pure). */
export function permissionChecks(role: RoleDocument, file: string): PermissionCheck[] {
  if (role.kind !== 'ClusterRole' && role.kind !== 'Role') return [];
  const source = `${file} ${role.kind} ${role.metadata?.name ?? '(unnamed)'}`;
  const namespace = role.kind === 'Role' ? role.metadata?.namespace : undefined;
  const checks: PermissionCheck[] = [];
  for (const rule of role.rules ?? []) {
    for (const verb of rule.verbs ?? []) {
      for (const path of rule.nonResourceURLs ?? []) checks.push({ group: '', resource: '', verb, path, source });
      for (const group of rule.apiGroups ?? []) {
        for (const full of rule.resources ?? []) {
          const [resource = full, subresource] = full.split('/');
          const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
          for (const resourceName of names) {
            checks.push({
              group,
              resource,
              verb,
              source,
              ...(subresource ? { subresource } : {}),
              ...(namespace ? { namespace } : {}),
              ...(resourceName ? { resourceName } : {}),
            });
          }
        }
      }
    }
  }
  return checks;
}

function* rbacDocuments(dir: string, shownDir: string): Generator<{ doc: RoleDocument; file: string }> {
  if (!existsSync(dir)) return;
  for (const file of readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      yield { doc: (doc.toJS() ?? {}) as RoleDocument, file: `${shownDir}/${file}` };
    }
  }
}

/** Every check from the roles in `dir` (`infra/rbac`), duplicates removed. */
export function loadPermissionChecks(dir: string, shownDir = 'infra/rbac'): PermissionCheck[] {
  const seen = new Set<string>();
  const out: PermissionCheck[] = [];
  for (const { doc, file } of rbacDocuments(dir, shownDir)) {
    for (const check of permissionChecks(doc, file)) {
      const key = permissionLabel(check) + (check.namespace ? ` in ${check.namespace}` : '');
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(check);
    }
  }
  return out;
}

/** The groups the project's (Cluster)RoleBindings grant to — the functions' Kubernetes groups. */
export function boundGroups(dir: string): string[] {
  const groups = new Set<string>();
  for (const { doc } of rbacDocuments(dir, '')) {
    if (doc.kind !== 'ClusterRoleBinding' && doc.kind !== 'RoleBinding') continue;
    for (const s of doc.subjects ?? []) if (s.kind === 'Group' && s.name) groups.add(s.name);
  }
  return [...groups].sort();
}

/** `patch memcacheds/status.cache.example.com`, `create services`, `get /healthz`. */
export function permissionLabel(check: PermissionCheck): string {
  if (check.path) return `${check.verb} ${check.path}`;
  const resource = `${check.resource}${check.subresource ? `/${check.subresource}` : ''}${check.group ? `.${check.group}` : ''}`;
  return `${check.verb} ${resource}${check.resourceName ? ` named ${check.resourceName}` : ''}`;
}

/** The `spec` of a SelfSubjectAccessReview for a check (pure). */
export function accessReviewSpec(check: PermissionCheck): Record<string, unknown> {
  if (check.path) return { nonResourceAttributes: { path: check.path, verb: check.verb } };
  return {
    resourceAttributes: {
      group: check.group,
      resource: check.resource,
      verb: check.verb,
      ...(check.subresource ? { subresource: check.subresource } : {}),
      ...(check.namespace ? { namespace: check.namespace } : {}),
      ...(check.resourceName ? { name: check.resourceName } : {}),
    },
  };
}
