/** The contract's name validators (contract/names.ts): Kubernetes' rules, with their length bounds. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  isApiVersion,
  isClusterId,
  isConventionalVersion,
  isDns1035Label,
  isDnsLabel,
  isDnsSubdomain,
  isEventReason,
  isKind,
  isLabelValue,
  isQualifiedName,
  isVersion,
} from '../../../src/contract/names.ts';

const cases: [string, (v: unknown) => boolean, unknown[], unknown[]][] = [
  ['isDnsLabel', isDnsLabel, ['a', 'default', '0abc', 'a-b', 'x'.repeat(63)], ['', 'A', '-a', 'a-', 'a.b', 'a_b', 'x'.repeat(64), 7, undefined]],
  ['isDns1035Label', isDns1035Label, ['a', 'memcacheds', 'mc-1'], ['0abc', '', 'a-', 'Mc', 'x'.repeat(64)]],
  [
    'isDnsSubdomain',
    isDnsSubdomain,
    ['a', 'memcached-sample', 'example.com', 'a.b.c', `${'a'.repeat(63)}.${'b'.repeat(189)}`],
    ['', 'a..b', '.a', 'a.', 'A.b', 'a_b', 'x'.repeat(254), null],
  ],
  ['isVersion', isVersion, ['v1', 'v0', 'v1beta1', 'v2alpha3', 'v10'], ['1', 'V1', 'v1gamma1', 'v1alpha', 'v', '']],
  ['isConventionalVersion', isConventionalVersion, ['v1', 'v1beta1', 'v2alpha3', 'v10'], ['v0', 'v01', 'v1alpha0', 'v1alpha', 'V1']],
  [
    'isApiVersion',
    isApiVersion,
    ['v1', 'apps/v1', 'cache.example.com/v1alpha1', 'x/v0'],
    ['', 'apps', 'apps/', '/v1', 'a..b/v1', '-/v1', 'Apps/v1', 'a/b/v1', `${'a'.repeat(315)}/v1`],
  ],
  ['isKind', isKind, ['Memcached', 'CacheCluster', 'A1', 'M'.repeat(63)], ['memcached', '', '1A', 'Mem_cached', 'Mem-cached', 'M'.repeat(64)]],
  [
    'isQualifiedName',
    isQualifiedName,
    ['cache.example.com/finalizer', 'finalizer', 'a/B_c.d-e', `x/${'n'.repeat(63)}`],
    ['', '/x', 'x/', 'A.b/x', 'x/-a', `x/${'n'.repeat(64)}`, 'a/b/c'],
  ],
  ['isLabelValue', isLabelValue, ['', 'a', 'web-1', 'A_b.c', 'v'.repeat(63)], ['-a', 'a-', 'a/b', 'a b', 'v'.repeat(64), 7]],
  [
    'isEventReason',
    isEventReason,
    ['ReconcileFailed', 'InvalidSpec', `R${'x'.repeat(127)}`],
    ['', 'invalidSpec', 'Invalid Spec', 'Invalid-Spec', `R${'x'.repeat(128)}`],
  ],
  ['isClusterId', isClusterId, ['default', 'prod-eu', 'Prod_1.a'], ['', '-a', 'a-', 'a/b', 'x'.repeat(64)]],
];

for (const [name, valid, good, bad] of cases) {
  test(`${name} accepts what Kubernetes accepts and nothing else`, () => {
    for (const v of good) assert.equal(valid(v), true, `${name}(${JSON.stringify(v)})`);
    for (const v of bad) assert.equal(valid(v), false, `${name}(${JSON.stringify(v)})`);
  });
}

test('every conventional version is a version, and every apiVersion made of a DNS subdomain and a version is an apiVersion', () => {
  for (const v of ['v1', 'v1beta1', 'v3alpha12']) {
    assert.ok(isConventionalVersion(v) && isVersion(v));
    assert.ok(isApiVersion(v) && isApiVersion(`cache.example.com/${v}`));
  }
});
