/**
 * `operless rbac --namespaces`: the project's RBAC files rewritten per namespace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAllDocuments } from 'yaml';
import { rbac } from '../../../src/cli/commands/rbac.ts';
import { UsageError } from '../../../src/cli/args.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;

test('rbac --namespaces prints a Role and RoleBinding per namespace from infra/rbac, and no ClusterRole', async () => {
  const { output } = await rbac(['--project', ROOT, '--namespaces', 'team-a,team-b']);
  assert.match(output, /^# Namespace-scoped \(team-a, team-b\) RBAC from infra\/rbac\/memcached-function\.yaml/);
  const objects = parseAllDocuments(output)
    .map((d) => d.toJS() as { kind: string; metadata: { namespace?: string } })
    .filter(Boolean);
  assert.deepEqual(
    objects.map((o) => `${o.kind} ${o.metadata.namespace}`),
    ['Role team-a', 'Role team-b', 'RoleBinding team-a', 'RoleBinding team-b'],
  );
});

test('rbac without --namespaces prints the RBAC as shipped; a bad namespace is a usage error naming --namespaces', async () => {
  const { output } = await rbac(['--project', ROOT]);
  assert.match(output, /kind: ClusterRole\n/);
  await assert.rejects(
    rbac(['--project', ROOT, '--namespaces', 'team-a,Nope']),
    (err: Error) => err instanceof UsageError && /^--namespaces: .*"Nope"/.test(err.message),
  );
});
