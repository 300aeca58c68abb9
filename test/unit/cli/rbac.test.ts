import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accessReviewSpec, boundGroups, loadPermissionChecks, permissionChecks, permissionLabel } from '../../../src/cli/rbac.ts';

test('a ClusterRole rule becomes one check per group, resource and verb; subresources are split', () => {
  const checks = permissionChecks(
    {
      kind: 'ClusterRole',
      metadata: { name: 'fn' },
      rules: [
        { apiGroups: ['cache.example.com'], resources: ['memcacheds', 'memcacheds/status'], verbs: ['get', 'patch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
      ],
    },
    'infra/rbac/fn.yaml',
  );
  assert.deepEqual(checks.map(permissionLabel), [
    'get memcacheds.cache.example.com',
    'get memcacheds/status.cache.example.com',
    'patch memcacheds.cache.example.com',
    'patch memcacheds/status.cache.example.com',
    'list pods',
  ]);
  assert.equal(checks[1]!.subresource, 'status');
  assert.equal(checks[0]!.source, 'infra/rbac/fn.yaml ClusterRole fn');
});

test('Role rules keep their namespace, resourceNames and nonResourceURLs become their own checks; other kinds give none', () => {
  const checks = permissionChecks(
    {
      kind: 'Role',
      metadata: { name: 'leases', namespace: 'operless' },
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['a', 'b'], verbs: ['update'] },
        { nonResourceURLs: ['/healthz'], verbs: ['get'] },
      ],
    },
    'f.yaml',
  );
  assert.deepEqual(checks.map(permissionLabel), ['update leases.coordination.k8s.io named a', 'update leases.coordination.k8s.io named b', 'get /healthz']);
  assert.equal(checks[0]!.namespace, 'operless');
  assert.deepEqual(accessReviewSpec(checks[0]!), {
    resourceAttributes: { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: 'operless', name: 'a' },
  });
  assert.deepEqual(accessReviewSpec(checks[2]!), { nonResourceAttributes: { path: '/healthz', verb: 'get' } });
  assert.deepEqual(permissionChecks({ kind: 'ClusterRoleBinding' }, 'f.yaml'), []);
});

test('the review spec of a subresource check names it', () => {
  const [check] = permissionChecks({ kind: 'ClusterRole', rules: [{ apiGroups: ['x.io'], resources: ['things/status'], verbs: ['patch'] }] }, 'f');
  assert.deepEqual(accessReviewSpec(check!), { resourceAttributes: { group: 'x.io', resource: 'things', subresource: 'status', verb: 'patch' } });
});

test("the checks of a folder are de-duplicated across files; bindings give the functions' groups", () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-rbac-'));
  const role = (name: string) => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: ${name} }
rules:
  - { apiGroups: [apps], resources: [deployments], verbs: [get, create] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: ${name} }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${name} }
subjects:
  - { apiGroup: rbac.authorization.k8s.io, kind: Group, name: operless:${name} }
  - { kind: User, name: someone }
`;
  writeFileSync(join(dir, 'a.yaml'), role('a'));
  writeFileSync(join(dir, 'b.yml'), role('b'));
  writeFileSync(join(dir, 'README.md'), 'not yaml');
  const checks = loadPermissionChecks(dir);
  assert.deepEqual(checks.map(permissionLabel), ['get deployments.apps', 'create deployments.apps']);
  assert.equal(checks[0]!.source, 'infra/rbac/a.yaml ClusterRole a');
  assert.deepEqual(boundGroups(dir), ['operless:a', 'operless:b']);
  assert.deepEqual(loadPermissionChecks(join(dir, 'missing')), []);
});

test("the repository's own function RBAC yields checks for every rule", () => {
  const checks = loadPermissionChecks(new URL('../../../infra/rbac', import.meta.url).pathname);
  const labels = checks.map(permissionLabel);
  assert.ok(labels.includes('patch memcacheds/status.cache.example.com'), labels.join('\n'));
  assert.ok(labels.includes('list pods'));
  assert.ok(labels.includes('create events.events.k8s.io'));
});
