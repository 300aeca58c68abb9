/**
 * `operless` run by a Node.js older than 24 says which Node it needs and how to get it,
 * instead of failing with ERR_UNKNOWN_FILE_EXTENSION and a stack trace. Runs bin/operless.js
 * with every older `node` found on PATH or in the usual places (the machine's own Node is
 * often older than the pinned one); with none installed there is nothing to run it with.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'operless.js');

/** Every `node` binary on PATH or in /usr/bin, /usr/local/bin, /bin whose major version is below 24. */
function olderNodes(): { path: string; version: string }[] {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/bin', '/usr/local/bin', '/bin'].filter(Boolean);
  const seen = new Set<string>();
  const found: { path: string; version: string }[] = [];
  for (const dir of dirs) {
    const candidate = join(dir, 'node');
    if (!existsSync(candidate)) continue;
    const real = realpathSync(candidate);
    if (seen.has(real)) continue;
    seen.add(real);
    const version = execFileSync(real, ['--version'], { encoding: 'utf8' }).trim();
    if (Number(version.replace(/^v/, '').split('.')[0]) < 24) found.push({ path: real, version });
  }
  return found;
}

const older = olderNodes();

test('an older Node.js is told which Node operless needs and how to get it, without a stack trace', { skip: older.length === 0 ? 'no Node.js older than 24 installed on this machine' : false }, () => {
  for (const node of older) {
    const run = spawnSync(node.path, [BIN, '--help'], { encoding: 'utf8' });
    assert.equal(run.status, 1, `${node.version}: exit code 1 (stderr: ${run.stderr})`);
    assert.match(run.stderr, /needs Node\.js 24 or newer/, node.version);
    assert.ok(run.stderr.includes(node.version), `${node.version}: names the Node.js that ran it`);
    assert.match(run.stderr, /npx operless|node_modules\/\.bin/, 'says how to get the pinned Node.js 24');
    assert.match(run.stderr, /install Node\.js 24/);
    assert.doesNotMatch(run.stderr, /ERR_UNKNOWN_FILE_EXTENSION|\n\s+at /, 'no stack trace');
    assert.equal(run.stdout, '');
  }
});

test('Node.js 24 runs the command', () => {
  const run = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /Usage: operless/);
});
