/**
 * Installing Operless from a clone, exactly as docs/scaffolding.md tells a user to: a copy of
 * this checkout as `git clone` would give it (the files git tracks or would track, no dist/, no
 * node_modules), `npm ci` at its root, then
 * - `cd examples/tenancy && npm install && npm test` (the example depends on `file:../..`), and
 * - `operless init my-op --operless-version file:<clone>` → `operless create api` →
 *   `npm install` → `npm test` in the generated project, and
 * - `npm pack` of the clone (what `npm publish` would upload): the tarball holds dist/, bin/,
 *   the message schema and the LICENSE and none of the repository's sources, tests or scripts,
 *   and a project generated with `--operless-version file:<tarball>` passes the same steps.
 *
 * Why it exists: npm runs only `prepare` (not `prepack`) when it installs a package from a
 * directory or a git URL, so a package whose dist/ is built on `prepack` installs without it and
 * every `import 'operless'` fails to compile. The other tests that install Operless stage a
 * compiled package themselves (scripts/build-package.ts `stagePackage`), which is why they could
 * not see it. Nothing here builds the package for the user: the clone's own `npm ci` and the
 * projects' `npm install` must.
 *
 * Slow by nature (three npm installs from the registry cache, two package builds, the generated
 * projects' tests on a real control plane from ~/.cache/operless): one clone, one project from
 * it and one from its tarball.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let work: string;
let clone: string;
/** The tarball `npm pack` made of the clone. */
let tarball: string | undefined;

/** Runs a command as a user's shell would (this repository's Node 24 first on PATH); returns its output. */
function run(command: string, args: string[], cwd: string) {
  // Without NODE_TEST_CONTEXT: the projects' own `node --test` must not think it is nested in this one.
  const { NODE_TEST_CONTEXT: _nested, ...inherited } = process.env;
  const env = { ...inherited, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, npm_config_fund: 'false', npm_config_audit: 'false' };
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 600_000 });
  return { code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** This checkout's files as a clone of it would have them: tracked, or untracked and not ignored. */
function copyAsClone(to: string): void {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  for (const path of listed.split('\0').filter(Boolean)) {
    const from = join(ROOT, path);
    if (!existsSync(from)) continue; // deleted in the working tree, not yet committed
    mkdirSync(dirname(join(to, path)), { recursive: true });
    cpSync(from, join(to, path));
  }
}

before(() => {
  work = mkdtempSync(join(tmpdir(), 'operless-clone-'));
  clone = join(work, 'operless');
  copyAsClone(clone);
  assert.ok(!existsSync(join(clone, 'dist')), 'a clone has no dist/');
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test('npm ci in the clone installs its dependencies and builds the package it would ship', () => {
  const r = run('npm', ['ci', '--prefer-offline', '--loglevel=error'], clone);
  assert.equal(r.code, 0, r.out);
  assert.ok(existsSync(join(clone, 'dist', 'index.js')) && existsSync(join(clone, 'dist', 'index.d.ts')), 'prepare built dist/');
});

test('examples/tenancy: npm install && npm test, as docs/scaffolding.md says', () => {
  const example = join(clone, 'examples', 'tenancy');
  const install = run('npm', ['install', '--prefer-offline', '--loglevel=error'], example);
  assert.equal(install.code, 0, install.out);
  assert.ok(existsSync(join(example, 'node_modules', 'operless', 'dist', 'index.js')), 'operless is installed with its dist/');
  const tested = run('npm', ['test'], example);
  assert.equal(tested.code, 0, tested.out);
  assert.match(tested.out, /\bpass [1-9]\d*\b/);
  assert.match(tested.out, /\bfail 0\b/);
});

/** `operless init <name> --operless-version <spec>` → `create api` → `npm install` → `npm test`, asserted step by step. */
function generatedProjectPasses(name: string, spec: string): void {
  const cli = join(clone, 'bin', 'operless.js');
  const project = join(work, name);
  const init = run(process.execPath, [cli, 'init', project, '--domain', 'example.com', '--operless-version', spec], work);
  assert.equal(init.code, 0, init.out);
  const api = run(process.execPath, [cli, 'create', 'api', '--group', 'web', '--version', 'v1alpha1', '--kind', 'Site', '--owns', 'Deployment'], project);
  assert.equal(api.code, 0, api.out);
  const install = run('npm', ['install', '--prefer-offline', '--loglevel=error'], project);
  assert.equal(install.code, 0, install.out);
  const version = run(join(project, 'node_modules', '.bin', 'operless'), ['--version'], project);
  assert.equal(
    version.out,
    `operless ${(JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as { version: string }).version}\n`,
    'the installed command (dist/) knows its version',
  );
  const tested = run('npm', ['test'], project);
  assert.equal(tested.code, 0, tested.out);
  assert.match(tested.out, /\bpass [1-9]\d*\b/);
  assert.match(tested.out, /\bfail 0\b/);
}

test('a project from operless init --operless-version file:<clone> installs, compiles and passes its own tests', () => {
  generatedProjectPasses('my-op', `file:${clone}`);
});

test('npm pack of the clone holds what the package needs and nothing of the repository else', () => {
  const packed = join(work, 'packed');
  mkdirSync(packed);
  const r = run('npm', ['pack', '--loglevel=error', '--pack-destination', packed], clone);
  assert.equal(r.code, 0, r.out);
  const made = readdirSync(packed);
  assert.equal(made.length, 1, `one tarball: ${made.join(', ')}`);
  tarball = join(packed, made[0] ?? '');
  const listed = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const needed of [
    'package/package.json',
    'package/bin/operless.js',
    'package/dist/index.js',
    'package/dist/index.d.ts',
    'package/dist/kube/kinds.js',
    'package/dist/testing/index.js',
    'package/events/message.schema.json',
    'package/LICENSE',
  ]) {
    assert.ok(listed.includes(needed), `the tarball has ${needed}`);
  }
  const stray = listed.filter((path) => /^package\/(src|test|scripts|examples|bench|docs|node_modules|functions)\//.test(path));
  assert.deepEqual(stray, [], 'the tarball ships no sources, tests, scripts, examples, benchmarks, docs or node_modules');
});

test('a project from operless init --operless-version file:<tarball> installs, compiles and passes its own tests', () => {
  assert.ok(tarball, 'npm pack ran');
  generatedProjectPasses('my-packed-op', `file:${tarball}`);
});
