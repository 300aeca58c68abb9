/**
 * `operless upgrade` as a user runs it, on a project an older scaffold generated, kept as a
 * fixture (fixtures/upgrade-project.json: made by `operless init` + `create api --owns
 * ConfigMap` before the controller and test templates changed). The author wrote a real
 * reconcile into the controller (it applies a ConfigMap holding spec.message) and a line in its
 * test checking that ConfigMap; `operless upgrade --operless-version file:<this Operless,
 * staged as a package>` merges today's templates in without a conflict, keeping both edits,
 * and the project's own `npm install && npm test` (type-check, its integration test on a real
 * kube-apiserver + etcd from ~/.cache/operless) passes. A second copy whose author edited the
 * very line the new template changes is reported as a conflict: exit 1, the file listed, the
 * markers in it — and `--dry-run` wrote nothing before.
 *
 * Slow by nature (the package staged, an npm install from the registry cache, the generated
 * project's tests): one project is installed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stagePackage } from '../../scripts/build-package.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'bin', 'operless.js');
const FIXTURE = JSON.parse(readFileSync(join(ROOT, 'test', 'integration', 'fixtures', 'upgrade-project.json'), 'utf8')) as { files: Record<string, string> };
const CONTROLLER = 'src/site/controller.ts';
const TEST = 'test/site.test.ts';
let work: string;
let operlessPackage: string;

/** Runs a command with this repository's Node 24 first on PATH; returns its exit code and output. */
function run(command: string, args: string[], cwd: string) {
  // Without NODE_TEST_CONTEXT: the project's own `node --test` must not think it is nested in this one.
  const { NODE_TEST_CONTEXT: _nested, ...inherited } = process.env;
  const env = { ...inherited, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, npm_config_fund: 'false', npm_config_audit: 'false' };
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 600_000 });
  return { code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** The fixture written out as a project in `dir`. */
function materialize(dir: string): string {
  for (const [path, content] of Object.entries(FIXTURE.files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** Replaces `from` (which must be there) by `to` in a file of the project. */
function edit(project: string, path: string, from: string, to: string): void {
  const text = readFileSync(join(project, path), 'utf8');
  assert.ok(text.includes(from), `${path} holds ${JSON.stringify(from)}`);
  writeFileSync(join(project, path), text.replace(from, to));
}

/** Every file of the project (node_modules aside), by path. */
function snapshot(project: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const path of (spawnSync('find', ['.', '-type', 'f', '-not', '-path', './node_modules/*'], { cwd: project, encoding: 'utf8' }).stdout ?? '')
    .split('\n')
    .filter(Boolean)) {
    files.set(path, readFileSync(join(project, path), 'utf8'));
  }
  return files;
}

const RECONCILE_TODO = /  \/\/ TODO: create or update the ConfigMap[^\n]*\n[^\n]*\n[^\n]*\n/;
const RECONCILE =
  "  await ctx.applyOwned(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: object.metadata.name, namespace: object.metadata.namespace }, data: { message: object.spec.message ?? '' } });\n";
const TEST_LINE =
  "  const configMap = await cp.kubectl(['get', 'configmap', 'site-sample', '-n', 'default', '-o', 'jsonpath={.data.message}']);\n  assert.equal(configMap.stdout, 'hello', configMap.stderr);\n";

before(() => {
  work = mkdtempSync(join(tmpdir(), 'operless-upgrade-'));
  operlessPackage = stagePackage(join(work, 'operless-package'));
});
after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test("the fixture is an older scaffold's: today's controller and test templates differ from it", () => {
  const fresh = join(work, 'fresh');
  assert.equal(run(process.execPath, [CLI, 'init', fresh, '--name', 'site-operator', '--domain', 'example.com', '--operless-version', '^0.1.0'], work).code, 0);
  assert.equal(
    run(process.execPath, [CLI, 'create', 'api', '--group', 'web', '--version', 'v1alpha1', '--kind', 'Site', '--owns', 'ConfigMap'], fresh).code,
    0,
  );
  for (const path of [CONTROLLER, TEST]) assert.notEqual(readFileSync(join(fresh, path), 'utf8'), FIXTURE.files[path], path);
});

test('an edited project upgrades without conflict, keeps the edits, and passes its own npm test', () => {
  const project = materialize(join(work, 'site-operator'));
  const controller = readFileSync(join(project, CONTROLLER), 'utf8');
  assert.match(controller, RECONCILE_TODO);
  writeFileSync(join(project, CONTROLLER), controller.replace(RECONCILE_TODO, RECONCILE));
  edit(
    project,
    TEST,
    "  assert.deepEqual(run.followUp, { type: 'none' }, 'nothing is requeued or dead-lettered');\n",
    `  assert.deepEqual(run.followUp, { type: 'none' }, 'nothing is requeued or dead-lettered');\n${TEST_LINE}`,
  );

  const r = run(process.execPath, [CLI, 'upgrade', '--operless-version', `file:${operlessPackage}`], project);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /^ {2}merged {7}src\/site\/controller\.ts$/m);
  assert.match(r.out, /^ {2}merged {7}test\/site\.test\.ts$/m);
  assert.match(r.out, /^ {2}updated {6}package\.json$/m);
  assert.match(r.out, /^ {2}updated {6}README\.md$/m, 'a file the author left alone takes the new template');
  assert.match(r.out, /^ {2}created {6}\.npmrc$/m, 'a file: dependency is installed as a copy, as init does it');
  assert.doesNotMatch(r.out, /conflicted/);
  const merged = readFileSync(join(project, CONTROLLER), 'utf8');
  assert.ok(merged.includes(RECONCILE), "the author's reconcile is kept");
  assert.match(merged, /`npx operless preview`/, "the new template's lines are in");
  const mergedTest = readFileSync(join(project, TEST), 'utf8');
  assert.ok(mergedTest.includes(TEST_LINE), "the author's test line is kept");
  assert.match(mergedTest, /status\.observedGeneration is the generation reconciled/);
  assert.equal(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies.operless, `file:${operlessPackage}`);

  const install = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], project);
  assert.equal(install.code, 0, install.out);
  const tested = run('npm', ['test'], project);
  assert.equal(tested.code, 0, tested.out);
  assert.match(tested.out, /✔ reconciling the sample Site/, "the project's integration test ran, with the author's ConfigMap check");
  assert.match(tested.out, /^ℹ fail 0$/m);

  const again = run(process.execPath, [CLI, 'upgrade', '--operless-version', `file:${operlessPackage}`], project);
  assert.equal(again.code, 0, again.out);
  assert.doesNotMatch(again.out, /merged|updated|created|conflicted/, 'a second upgrade has nothing to do');
});

test('an edit of the line the new template changes is a conflict: exit 1, listed, markers in the file; --dry-run writes nothing', () => {
  const project = materialize(join(work, 'conflicting'));
  edit(
    project,
    CONTROLLER,
    ' * Idempotent: running it twice, or twice at once, must converge on the same objects.\n',
    ' * Idempotent: it runs again after every change of a ConfigMap it owns.\n',
  );
  const before = snapshot(project);
  const dry = run(process.execPath, [CLI, 'upgrade', '--dry-run'], project);
  assert.equal(dry.code, 1, dry.out);
  assert.match(dry.out, /^ {2}conflicted {3}src\/site\/controller\.ts \(1 conflict\)$/m);
  assert.deepEqual(snapshot(project), before, '--dry-run wrote nothing');

  const r = run(process.execPath, [CLI, 'upgrade'], project);
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /^ {2}conflicted {3}src\/site\/controller\.ts \(1 conflict\)$/m);
  assert.match(r.out, /^ {2}merged {7}test\/site\.test\.ts$|^ {2}updated {6}test\/site\.test\.ts$/m, 'the test, not edited here, takes the new template');
  assert.match(r.out, /Resolve the <<<<<<< \.\.\. >>>>>>> blocks in: src\/site\/controller\.ts/);
  assert.match(
    readFileSync(join(project, CONTROLLER), 'utf8'),
    /<<<<<<< src\/site\/controller\.ts \(yours\)\n \* Idempotent: it runs again after every change of a ConfigMap it owns\.\n=======\n \* Idempotent: running it twice[^\n]*\n \* See what a change would do[^\n]*\n[^\n]*\n>>>>>>> src\/site\/controller\.ts \(operless /,
  );
});
