import { test } from 'node:test';
import assert from 'node:assert/strict';
import { impersonating, impersonationFrom, IMPERSONATION_OPTIONS } from '../../../src/cli/cluster.ts';
import { parseCommandArgs, UsageError, type CommandSpec } from '../../../src/cli/args.ts';
import type { EndpointAuth } from '../../../src/kube/transport.ts';

const spec: CommandSpec = { name: 'x', summary: 'x', usage: '', options: IMPERSONATION_OPTIONS };

test('--as and repeated --as-group become an impersonation; --as-group alone is a usage error', () => {
  assert.equal(impersonationFrom(parseCommandArgs(spec, [])), undefined);
  assert.deepEqual(impersonationFrom(parseCommandArgs(spec, ['--as', 'fn', '--as-group', 'a', '--as-group', 'b'])), { user: 'fn', groups: ['a', 'b'] });
  assert.throws(() => impersonationFrom(parseCommandArgs(spec, ['--as-group', 'a'])), UsageError);
});

test('impersonation adds Impersonate-User and one Impersonate-Group value per group, keeping the credentials', async () => {
  const base: EndpointAuth = { server: 'https://k', credentials: async () => ({ ca: 'CA', headers: { Authorization: 'Bearer t' } }) };
  const creds = await impersonating(base, { user: 'fn', groups: ['operless:memcached', 'other'] }).credentials();
  assert.equal(creds.ca, 'CA');
  assert.equal(creds.headers.Authorization, 'Bearer t');
  assert.equal(creds.headers['Impersonate-User'], 'fn');
  assert.deepEqual(creds.headers['Impersonate-Group'], ['operless:memcached', 'other']);
  const noGroups = await impersonating(base, { user: 'fn', groups: [] }).credentials();
  assert.equal('Impersonate-Group' in noGroups.headers, false);
});
