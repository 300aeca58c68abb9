import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProjectKinds, parseObjectArg, resolveKind } from '../../../src/cli/kinds.ts';

function crdDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'operless-kinds-'));
  writeFileSync(
    join(dir, 'memcacheds.yaml'),
    `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: memcacheds.cache.example.com }
spec:
  group: cache.example.com
  scope: Namespaced
  names: { kind: Memcached, plural: memcacheds, singular: memcached, shortNames: [mc] }
  versions: [{ name: v1alpha1, served: true, storage: true }]
`,
  );
  writeFileSync(
    join(dir, 'clusterthings.yaml'),
    `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: tenants.example.com }
spec:
  group: example.com
  scope: Cluster
  names: { kind: Tenant, plural: tenants }
  versions: [{ name: v1beta1, served: true, storage: false }, { name: v1, served: true, storage: true }]
`,
  );
  writeFileSync(join(dir, 'notes.txt'), 'ignored');
  return dir;
}

test('kinds come from the CRDs with kubectl-style names', () => {
  const kinds = loadProjectKinds(crdDir());
  const mc = resolveKind(kinds, 'mc');
  assert.equal(mc.apiVersion, 'cache.example.com/v1alpha1');
  assert.equal(mc.plural, 'memcacheds');
  assert.equal(mc.namespaced, true);
  for (const name of ['Memcached', 'memcached', 'memcacheds', 'memcacheds.cache.example.com']) {
    assert.equal(resolveKind(kinds, name).kind, 'Memcached');
  }
  assert.equal(resolveKind(kinds, 'tenant').apiVersion, 'example.com/v1', 'the storage version is used');
});

test('an unknown kind lists what the project reconciles', () => {
  const kinds = loadProjectKinds(crdDir());
  assert.throws(() => resolveKind(kinds, 'Redis'), /unknown kind "Redis"; this project reconciles: .*Memcached \(memcacheds, .*mc\)/);
  assert.throws(() => resolveKind([], 'mc'), /no CRDs found in infra\/crds\//);
});

test("object arguments follow the kind's scope", () => {
  const kinds = loadProjectKinds(crdDir());
  assert.deepEqual({ ...parseObjectArg(kinds, 'mc/default/cache'), kind: undefined }, { kind: undefined, namespace: 'default', name: 'cache' });
  assert.throws(() => parseObjectArg(kinds, 'mc/cache'), /Memcached is namespaced; write mc\/<namespace>\/<name>/);
  assert.equal(parseObjectArg(kinds, 'tenant/acme').name, 'acme');
  assert.throws(() => parseObjectArg(kinds, 'tenant/a/b'), /Tenant is cluster-scoped/);
});
