import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveScope, SCOPE_OPTION } from '../../../src/cli/scope.ts';
import { parseCommandArgs } from '../../../src/cli/args.ts';

const spec = { name: 'status', summary: '', usage: '', options: SCOPE_OPTION };
const args = (...argv: string[]) => parseCommandArgs(spec, argv);

function project(params: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), 'operless-scope-'));
  if (params !== undefined) writeFileSync(join(dir, 'serverless.yml'), `service: s\nparams:\n  default:\n    clusterId: c\n${params}`);
  return dir;
}

test('the scope comes from --namespaces, else OPERLESS_NAMESPACES, else serverless.yml params.default.namespaces, else none', () => {
  const dir = project("    namespaces: 'team-c, team-a'\n");
  try {
    assert.deepEqual(resolveScope(args('--namespaces', 'b,a,a'), dir, { OPERLESS_NAMESPACES: 'x' }), { namespaces: ['a', 'b'], source: '--namespaces' });
    assert.deepEqual(resolveScope(args(), dir, { OPERLESS_NAMESPACES: 'x,y' }), { namespaces: ['x', 'y'], source: 'OPERLESS_NAMESPACES' });
    assert.deepEqual(resolveScope(args(), dir, {}), { namespaces: ['team-a', 'team-c'], source: 'serverless.yml params.default.namespaces' });
    assert.deepEqual(resolveScope(args(), dir, { OPERLESS_NAMESPACES: ' ' }).source, 'serverless.yml params.default.namespaces', 'a blank variable is unset');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const params of [undefined, "    namespaces: ''\n", '']) {
    const none = project(params);
    try {
      assert.deepEqual(resolveScope(args(), none, {}), { namespaces: [], source: 'none' });
    } finally {
      rmSync(none, { recursive: true, force: true });
    }
  }
});

test('a bad scope is a usage error naming where it came from', () => {
  const dir = project('    namespaces: ${env:NS}\n');
  try {
    assert.throws(() => resolveScope(args('--namespaces', 'Team_A'), dir, {}), {
      name: 'UsageError',
      message: /^--namespaces: every entry must be a namespace name .*"Team_A"/,
    });
    assert.throws(() => resolveScope(args(), dir, { OPERLESS_NAMESPACES: 'a,B' }), { name: 'UsageError', message: /^OPERLESS_NAMESPACES: / });
    assert.throws(() => resolveScope(args(), dir, {}), {
      name: 'UsageError',
      message: /serverless\.yml params\.default\.namespaces must be a comma-separated list .*pass --namespaces/,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
