/**
 * Namespace scope (kube/scope.ts) and cluster-wide RBAC rewritten for it (kube/rbac-scope.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { inScope, NamespaceScopeError, namespacesToList, parseNamespaceScope } from '../../../src/kube/scope.ts';
import { clusterScopedOf, namespacedRbac, type RbacObject } from '../../../src/kube/rbac-scope.ts';

test('a scope is parsed from a comma and/or space separated list, sorted, without repeats; blank is cluster-wide', () => {
  assert.deepEqual(parseNamespaceScope('team-b, team-a,team-b', 'X'), ['team-a', 'team-b']);
  assert.deepEqual(parseNamespaceScope(' team-a  team-c ', 'X'), ['team-a', 'team-c']);
  assert.deepEqual(parseNamespaceScope('', 'X'), []);
  assert.deepEqual(parseNamespaceScope(undefined, 'X'), []);
});

test('an invalid namespace name is refused naming the field and the entry', () => {
  for (const bad of ['Team_A', 'a'.repeat(64), '-x', 'team.a', 'a/b']) {
    assert.throws(
      () => parseNamespaceScope(`ok,${bad}`, 'OPERLESS_NAMESPACES'),
      (err: Error) => err instanceof NamespaceScopeError && err.message.startsWith('OPERLESS_NAMESPACES: ') && err.message.includes(JSON.stringify(bad)),
    );
  }
});

test('inScope: an empty scope holds everything; a cluster-scoped object (no namespace) is never refused by a scope', () => {
  assert.equal(inScope([], 'x'), true);
  assert.equal(inScope(['a'], 'a'), true);
  assert.equal(inScope(['a'], 'b'), false);
  assert.equal(inScope(['a'], undefined), true);
  assert.deepEqual(namespacesToList([]), [undefined]);
  assert.deepEqual(namespacesToList(['a', 'b']), ['a', 'b']);
});

const functionRbac = (): RbacObject[] =>
  parseAllDocuments(readFileSync(new URL('../../../infra/rbac/memcached-function.yaml', import.meta.url), 'utf8'))
    .map((d) => d.toJS() as RbacObject)
    .filter(Boolean);

test('the function RBAC for two namespaces: a Role and RoleBinding in each, with the same rules and subjects, and nothing cluster-wide', () => {
  const shipped = functionRbac();
  const role = shipped.find((o) => o.kind === 'ClusterRole')!;
  const binding = shipped.find((o) => o.kind === 'ClusterRoleBinding')!;
  const out = namespacedRbac(shipped, ['team-a', 'team-b']);
  assert.deepEqual(
    out.map((o) => `${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}`),
    ['Role team-a/operless-memcached', 'Role team-b/operless-memcached', 'RoleBinding team-a/operless-memcached', 'RoleBinding team-b/operless-memcached'],
  );
  for (const o of out.filter((x) => x.kind === 'Role')) assert.deepEqual(o.rules, role.rules);
  for (const o of out.filter((x) => x.kind === 'RoleBinding')) {
    assert.deepEqual(o.subjects, binding.subjects);
    assert.deepEqual(o.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'operless-memcached' });
  }
});

test('an empty scope leaves the RBAC as it is', () => {
  const shipped = functionRbac();
  assert.deepEqual(namespacedRbac(shipped, []), shipped);
});

test("rules on cluster-scoped resources (built-in or the project's own) and nonResourceURLs stay in a ClusterRole holding only them", () => {
  const role: RbacObject = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'tenant' },
    rules: [
      { apiGroups: [''], resources: ['namespaces', 'resourcequotas'], verbs: ['get', 'create'] },
      { apiGroups: ['tenancy.example.com'], resources: ['tenants', 'tenants/status'], verbs: ['get', 'patch'] },
      { nonResourceURLs: ['/healthz'], verbs: ['get'] },
    ],
  };
  const binding: RbacObject = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'tenant' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tenant' },
    subjects: [{ kind: 'Group', name: 'g' }],
  };
  const other: RbacObject = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa', namespace: 'x' } };
  const out = namespacedRbac([role, binding, other], ['a'], clusterScopedOf([{ group: 'tenancy.example.com', plural: 'tenants' }]));
  const cluster = out.find((o) => o.kind === 'ClusterRole');
  assert.deepEqual(cluster?.rules, [
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'create'] },
    { apiGroups: ['tenancy.example.com'], resources: ['tenants', 'tenants/status'], verbs: ['get', 'patch'] },
    { nonResourceURLs: ['/healthz'], verbs: ['get'] },
  ]);
  assert.deepEqual(out.find((o) => o.kind === 'Role')?.rules, [{ apiGroups: [''], resources: ['resourcequotas'], verbs: ['get', 'create'] }]);
  assert.ok(
    out.some((o) => o.kind === 'ClusterRoleBinding'),
    'the binding of the kept ClusterRole stays',
  );
  assert.ok(out.some((o) => o.kind === 'RoleBinding' && o.metadata?.namespace === 'a'));
  assert.ok(out.includes(other), 'other objects pass through');
});

test('a ClusterRole nothing binds, and a binding to a role shipped elsewhere, are kept as they are', () => {
  const lone: RbacObject = { kind: 'ClusterRole', metadata: { name: 'lone' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] };
  const foreign: RbacObject = { kind: 'ClusterRoleBinding', metadata: { name: 'f' }, roleRef: { kind: 'ClusterRole', name: 'view' }, subjects: [] };
  assert.deepEqual(namespacedRbac([lone, foreign], ['a']), [lone, foreign]);
});
