import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crd } from '../../../src/cli/commands/crd.ts';
import { CRD_DIR as DEFAULT_CRD_DIR } from '../../../src/resources.ts';

test("crd --out writes the project's CRDs, identical to the checked-in ones; a second run writes nothing", async () => {
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
  assert.deepEqual(
    stale.stale.map((s) => s.problem),
    ['outdated'],
  );
  assert.match(readFileSync(file, 'utf8'), /minimum: 1/, '--check changed nothing');
});

test('the checked-in CRDs are up to date', async () => {
  const result = await crd(['--check']);
  assert.equal(result.exitCode ?? 0, 0, result.output);
});

test('in an Operless project, crd renders the resources of src/resources.ts into its infra/crds', async () => {
  const project = mkdtempSync(join(tmpdir(), 'operless-crd-project-'));
  mkdirSync(join(project, 'src'));
  const crdModule = new URL('../../../src/crd/index.ts', import.meta.url).href;
  writeFileSync(
    join(project, 'src', 'resources.ts'),
    `
import { defineResource, integer, object, required } from ${JSON.stringify(crdModule)};
const Widget = defineResource({
  group: 'widgets.example.com', version: 'v1', kind: 'Widget',
  spec: object({ size: required(integer({ minimum: 1 })) }),
});
export const resources = [{ definition: Widget, source: 'src/widget.ts' }];
`,
  );
  const checked = await crd(['--check', '--project', project]);
  assert.equal(checked.exitCode, 1);
  assert.match(checked.output, /widgets\.widgets\.example\.com\.yaml is missing/);
  const written = await crd(['--project', project]);
  assert.match(written.output, /wrote .*infra\/crds\/widgets\.widgets\.example\.com\.yaml/);
  const text = readFileSync(join(project, 'infra', 'crds', 'widgets.widgets.example.com.yaml'), 'utf8');
  assert.match(text, /Generated from src\/widget\.ts by `operless crd`/);
  assert.match(text, /kind: Widget/);
  assert.equal((await crd(['--check', '--project', project])).exitCode ?? 0, 0);
});

test('outside a project, or with a src/resources.ts that exports no resources, crd says what to do', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'operless-crd-empty-'));
  await assert.rejects(crd(['--project', empty]), /no src\/resources\.ts in .*`operless init` creates one/);
  mkdirSync(join(empty, 'src'));
  writeFileSync(join(empty, 'src', 'resources.ts'), 'export const resources = [{ nope: true }];\n');
  await assert.rejects(crd(['--project', empty]), /must export `resources`: an array of \{ definition, source \}/);
});
