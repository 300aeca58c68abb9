import { test } from 'node:test';
import assert from 'node:assert/strict';
import { byVersionPriority, compareVersionPriority, versionsOutrankingStorage } from '../../../src/crd/version-priority.ts';

test('version priority: GA over beta over alpha, then major, then minor; other names after, alphabetically', () => {
  // The example of the Kubernetes documentation ("Version priority").
  const documented = ['v10', 'v2', 'v1', 'v11beta2', 'v10beta3', 'v3beta1', 'v12alpha1', 'v11alpha2', 'foo1', 'foo10'];
  assert.deepEqual(byVersionPriority([...documented].reverse()), documented);
  assert.deepEqual(byVersionPriority(['v1alpha1', 'v1beta1']), ['v1beta1', 'v1alpha1']);
  assert.deepEqual(byVersionPriority(['v1beta2', 'v1', 'v2', 'v1beta1', 'v1alpha1']), ['v2', 'v1', 'v1beta2', 'v1beta1', 'v1alpha1']);
  assert.ok(compareVersionPriority('v1beta1', 'v1alpha1') > 0);
  assert.ok(compareVersionPriority('v1alpha1', 'v1beta1') < 0);
  assert.ok(compareVersionPriority('v1alpha2', 'v1alpha10') < 0, 'numbers, not strings');
  assert.equal(compareVersionPriority('v1', 'v1'), 0);
  assert.equal(compareVersionPriority('v01', 'v1'), 0, "as Go's Atoi reads it");
  // Not kube-like: a dotted version, a gamma, a number past int64 — after every kube-like one.
  for (const odd of ['v1.2', 'v1gamma1', 'v99999999999999999999', 'V1', 'v1beta']) assert.ok(compareVersionPriority(odd, 'v1alpha1') < 0, odd);
  assert.ok(compareVersionPriority('a1', 'b1') > 0, 'alphabetical among the others');
});

test('versionsOutrankingStorage: the served (or, asked, listed) versions discovery would prefer over storage', () => {
  const memcached = [
    { name: 'v1alpha1', served: true, storage: true },
    { name: 'v1beta1', served: false, storage: false },
  ];
  assert.deepEqual(versionsOutrankingStorage(memcached), [], 'v1beta1 listed but not served');
  assert.deepEqual(versionsOutrankingStorage(memcached, true), ['v1beta1']);
  assert.deepEqual(
    versionsOutrankingStorage([
      { name: 'v1alpha1', served: true, storage: true },
      { name: 'v1beta1', served: true },
      { name: 'v1', served: true },
    ]),
    ['v1', 'v1beta1'],
  );
  assert.deepEqual(
    versionsOutrankingStorage([
      { name: 'v2', served: true, storage: true },
      { name: 'v1', served: true },
      { name: 'v2beta1', served: true },
    ]),
    [],
    'the newest is the hub: nothing outranks it',
  );
  assert.deepEqual(versionsOutrankingStorage([{ name: 'v1', served: true }]), [], 'no storage version');
});

test("operless crd warns about the reference operator's v1beta1 spoke above its v1alpha1 hub, and about nothing else", async () => {
  const { crdWarnings } = await import('../../../src/crd/generate.ts');
  const { resources } = await import('../../../src/resources.ts');
  const warnings = crdWarnings(resources);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] as string,
    /^memcacheds\.cache\.example\.com: v1beta1 outranks the storage version v1alpha1 in Kubernetes version priority.*namespace deletion.*Make the newest version the hub/,
  );
  const memcached = resources.find((r) => r.definition.kind === 'Memcached');
  assert.ok(memcached);
  assert.deepEqual(crdWarnings([{ ...memcached, unservedVersions: [] }]), []);
});
