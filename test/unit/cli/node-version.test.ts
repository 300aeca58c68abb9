/**
 * `operless` run by a Node.js older than 24 says which Node it needs and how to get it,
 * instead of failing with ERR_UNKNOWN_FILE_EXTENSION and a stack trace. Runs bin/operless.js
 * with every older `node` found on PATH or in the usual places (the machine's own Node is
 * often older than the pinned one), and always with the pinned Node reporting an older version.
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

/**
 * The runs to check: every older Node.js installed here (which also proves the file parses on
 * it), and always the pinned Node.js reporting itself as 20.1.0 through a preloaded module —
 * so the check runs on every machine, with or without an older Node.
 */
const SIMULATED =
  "data:text/javascript,Object.defineProperty(process,'version',{value:'v20.1.0'});Object.defineProperty(process,'versions',{value:{...process.versions,node:'20.1.0'}});";
const runs = [
  ...older.map((node) => ({ label: `${node.version} at ${node.path}`, version: node.version, argv: [node.path, BIN, '--help'] })),
  { label: 'Node.js 24 reporting v20.1.0', version: 'v20.1.0', argv: [process.execPath, '--import', SIMULATED, BIN, '--help'] },
];

test('an older Node.js is told which Node operless needs and how to get it, without a stack trace', () => {
  for (const { label, version, argv } of runs) {
    const run = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    assert.equal(run.status, 1, `${label}: exit code 1 (stderr: ${run.stderr})`);
    assert.match(run.stderr, /needs Node\.js 24 or newer/, label);
    assert.ok(run.stderr.includes(version), `${label}: names the Node.js that ran it`);
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
