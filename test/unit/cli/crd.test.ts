import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crd } from '../../../src/cli/commands/crd.ts';
import { DEFAULT_CRD_DIR } from '../../../src/crd/generate.ts';

test('crd --out writes the project\'s CRDs, identical to the checked-in ones; a second run writes nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-crd-'));
  const first = await crd(['--out', dir, '--json']);
  const written = JSON.parse(first.output) as { written: string[] };
  assert.equal(written.written.length, readdirSync(DEFAULT_CRD_DIR).filter((f) => f.endsWith('.yaml')).length);
  for (const file of readdirSync(dir)) assert.equal(readFileSync(join(dir, file), 'utf8'), readFileSync(join(DEFAULT_CRD_DIR, file), 'utf8'));
  const second = await crd(['--out', dir]);
  assert.match(second.output, /are up to date/);
  assert.equal(second.exitCode ?? 0, 0);
});

test('crd --check exits 1 naming stale and missing files, and writes nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-crd-'));
  const missing = await crd(['--out', dir, '--check']);
  assert.equal(missing.exitCode, 1);
  assert.match(missing.output, /✘ .*memcacheds\.cache\.example\.com\.yaml is missing/);
  assert.match(missing.output, /Run `operless crd --out /);
  assert.deepEqual(readdirSync(dir), []);

  await crd(['--out', dir]);
  const file = join(dir, 'memcacheds.cache.example.com.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace('minimum: 0', 'minimum: 1'));
  const stale = JSON.parse((await crd(['--out', dir, '--check', '--json'])).output) as { upToDate: boolean; stale: { path: string; problem: string }[] };
  assert.equal(stale.upToDate, false);
  assert.deepEqual(stale.stale.map((s) => s.problem), ['outdated']);
  assert.match(readFileSync(file, 'utf8'), /minimum: 1/, '--check changed nothing');
});

test('the checked-in CRDs are up to date', async () => {
  const result = await crd(['--check']);
  assert.equal(result.exitCode ?? 0, 0, result.output);
});
