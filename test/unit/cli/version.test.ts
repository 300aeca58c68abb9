/**
 * `operless --version` (and `-v`, `version`) prints the version of the package it runs from, as
 * its package.json says, and exits 0 — in a checkout here (src/), and the same code from dist/
 * in an installed package (test/integration/install-from-clone.test.ts installs one).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const BIN = join(ROOT, 'bin', 'operless.js');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

for (const flag of ['--version', '-v', 'version']) {
  test(`operless ${flag} prints the package's version`, () => {
    const r = spawnSync(process.execPath, [BIN, flag], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `operless ${VERSION}\n`);
  });
}

test('the usage names --version', () => {
  const r = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
  assert.match(r.stdout, /operless --version/);
});
