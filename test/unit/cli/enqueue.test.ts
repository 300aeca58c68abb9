import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ENQUEUE_REASON, listNamespaces, messageFor, selectKinds } from '../../../src/cli/commands/enqueue.ts';
import { decodeMessage, encodeMessage } from '../../../src/contract/message.ts';
import type { ProjectKind } from '../../../src/cli/kinds.ts';
import { UsageError } from '../../../src/cli/args.ts';

const MC: ProjectKind = {
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  plural: 'memcacheds',
  namespaced: true,
  group: 'cache.example.com',
  names: ['memcached', 'memcacheds', 'mc'],
};
const TENANT: ProjectKind = {
  apiVersion: 'example.com/v1',
  kind: 'Tenant',
  plural: 'tenants',
  namespaced: false,
  group: 'example.com',
  names: ['tenant', 'tenants'],
};

test('a named object becomes a valid Resync message without uid, for the target cluster', () => {
  const message = messageFor([MC], 'mc/default/cache', 'prod-eu', 1234);
  assert.deepEqual(message, {
    v: 1,
    cluster: 'prod-eu',
    apiVersion: 'cache.example.com/v1alpha1',
    kind: 'Memcached',
    namespace: 'default',
    name: 'cache',
    reason: ENQUEUE_REASON,
    observedAt: 1234,
    attempt: 0,
  });
  assert.equal(decodeMessage(encodeMessage(message)).ok, true);
  assert.equal(messageFor([TENANT], 'tenant/acme', 'c', 1).namespace, undefined);
});

test('an invalid name is a usage error naming the field, before anything is sent', () => {
  assert.throws(
    () => messageFor([MC], 'mc/default/Not_A_Name', 'c', 1),
    (err: unknown) => {
      assert.ok(err instanceof UsageError);
      assert.match(err.message, /"mc\/default\/Not_A_Name": .*name/);
      assert.doesNotMatch(err.message, /refusing/);
      return true;
    },
  );
  assert.throws(() => messageFor([MC], 'redis/default/x', 'c', 1), /unknown kind "redis"/);
});

test('--all covers the named kind or every kind, and --namespace does not apply to cluster-scoped kinds', () => {
  assert.deepEqual(
    selectKinds([MC, TENANT], 'mc', 'default').map((k) => k.kind),
    ['Memcached'],
  );
  assert.deepEqual(
    selectKinds([MC, TENANT], undefined, undefined).map((k) => k.kind),
    ['Memcached', 'Tenant'],
  );
  assert.throws(() => selectKinds([MC, TENANT], undefined, 'default'), /--namespace does not apply to cluster-scoped Tenant/);
  assert.throws(() => selectKinds([], undefined, undefined), /no CRDs found/);
});

test("--all in a namespace-scoped install lists the scope's namespaces; --namespace must be one of them", () => {
  assert.deepEqual(listNamespaces(['team-a', 'team-b'], undefined), ['team-a', 'team-b']);
  assert.deepEqual(listNamespaces(['team-a', 'team-b'], 'team-b'), ['team-b']);
  assert.deepEqual(listNamespaces([], 'default'), ['default']);
  assert.deepEqual(listNamespaces([], undefined), [], 'no scope: all namespaces at once');
  assert.throws(() => listNamespaces(['team-a'], 'kube-system'), /--namespace kube-system is outside the install's namespaces \(team-a\)/);
});
