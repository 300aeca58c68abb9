/**
 * `operless upgrade`, without a cluster: each file's decision from base / ours / theirs, the
 * line merge (git merge-file) keeping both sides or marking a conflict, package.json merged by
 * key, the replayed scaffold equal to what the commands wrote, and an upgrade of a real
 * generated project whose record was made "older" — edits kept, conflicts marked and exit 1,
 * --dry-run writing nothing, bad input named.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { decideDerived, decideFile, upgradePackageJson } from '../../../src/scaffold/upgrade/decide.ts';
import { gitMergeFile } from '../../../src/scaffold/upgrade/merge-file.ts';
import { stepsOf } from '../../../src/scaffold/upgrade/render.ts';
import { readRecord, RECORD_DIR } from '../../../src/scaffold/upgrade/record.ts';
import { parseProjectFile, type ProjectFile } from '../../../src/scaffold/project-file.ts';
import { scaffoldApi, scaffoldInit, scaffoldUpgrade, scaffoldWebhook, ScaffoldError } from '../../../src/scaffold/index.ts';
import { upgrade } from '../../../src/cli/commands/upgrade.ts';
import { UsageError } from '../../../src/cli/args.ts';

const merge = gitMergeFile('9.9.9');
const lines = (...l: string[]) => `${l.join('\n')}\n`;

describe('decideFile', () => {
  test("the author's file is kept when the scaffold did not change it, replaced when only the scaffold did", () => {
    assert.deepEqual(decideFile('a', { base: 'x\n', ours: 'mine\n', theirs: 'x\n' }, merge), { path: 'a', outcome: 'unchanged' });
    assert.deepEqual(decideFile('a', { base: 'x\n', ours: 'y\n', theirs: 'y\n' }, merge), { path: 'a', outcome: 'unchanged' });
    assert.deepEqual(decideFile('a', { base: 'x\n', ours: 'x\n', theirs: 'y\n' }, merge), { path: 'a', outcome: 'updated', content: 'y\n' });
  });
  test('new, deleted and unrecorded files', () => {
    assert.deepEqual(decideFile('a', { theirs: 'y\n' }, merge), { path: 'a', outcome: 'created', content: 'y\n' });
    assert.deepEqual(decideFile('a', { base: 'x\n', theirs: 'y\n' }, merge), { path: 'a', outcome: 'deleted-by-you' });
    assert.deepEqual(decideFile('a', { ours: 'mine\n', theirs: 'y\n' }, merge), { path: 'a', outcome: 'no-base' });
  });
  test('edits of both on different lines merge; on the same line they conflict, with markers naming both sides', () => {
    const base = lines('one', 'two', 'three', 'four', 'five');
    const ours = lines('one', 'two (mine)', 'three', 'four', 'five');
    const theirs = lines('one', 'two', 'three', 'four', 'five (new template)');
    assert.deepEqual(decideFile('f.ts', { base, ours, theirs }, merge), {
      path: 'f.ts',
      outcome: 'merged',
      content: lines('one', 'two (mine)', 'three', 'four', 'five (new template)'),
    });
    const clash = decideFile('f.ts', { base, ours, theirs: lines('one', 'two (new template)', 'three', 'four', 'five') }, merge);
    assert.equal(clash.outcome, 'conflicted');
    assert.equal(clash.conflicts, 1);
    assert.equal(
      clash.content,
      lines('one', '<<<<<<< f.ts (yours)', 'two (mine)', '=======', 'two (new template)', '>>>>>>> f.ts (operless 9.9.9)', 'three', 'four', 'five'),
    );
  });
  test('derived files are regenerated whatever is there', () => {
    assert.deepEqual(decideDerived('w.yaml', 'old\n', 'new\n'), { path: 'w.yaml', outcome: 'regenerated', content: 'new\n' });
    assert.deepEqual(decideDerived('w.yaml', 'new\n', 'new\n'), { path: 'w.yaml', outcome: 'unchanged' });
  });
});

describe('upgradePackageJson', () => {
  const pkg = (operless: string, devDependencies: Record<string, string>, extra: Record<string, string> = {}) =>
    `${JSON.stringify({ name: 'p', dependencies: { operless, ...extra }, devDependencies }, null, 2)}\n`;
  test('bumps operless, moves pins the author left alone, keeps (and lists) pins the author changed, keeps added dependencies', () => {
    const base = pkg('^0.1.0', { typescript: '5.8.0', osls: '3.0.0' });
    const ours = pkg('^0.1.0', { typescript: '5.9.9', osls: '3.0.0' }, { zod: '^3.0.0' });
    const theirs = pkg('^0.2.0', { typescript: '5.9.0', osls: '3.1.0' });
    const { decision, kept } = upgradePackageJson(base, ours, theirs);
    assert.equal(decision.outcome, 'updated');
    const result = JSON.parse(decision.content ?? '');
    assert.deepEqual(result.dependencies, { operless: '^0.2.0', zod: '^3.0.0' });
    assert.deepEqual(result.devDependencies, { typescript: '5.9.9', osls: '3.1.0' });
    assert.deepEqual(kept, ["devDependencies.typescript (yours 5.9.9, the scaffold's 5.9.0)"]);
  });
  test('a package.json that is not JSON is named', () => {
    assert.throws(
      () => upgradePackageJson(undefined, '{ nope', '{}'),
      (err: Error) => err instanceof ScaffoldError && /package\.json \(yours\) is not a JSON object/.test(err.message),
    );
  });
});

test('steps: the recorded order first, each webhook after its kind, steps of kinds gone dropped', () => {
  const api = (kind: string, webhook = false) => ({
    group: 'g.example.com',
    version: 'v1',
    kind,
    plural: `${kind.toLowerCase()}s`,
    namespaced: true,
    owns: [],
    ...(webhook ? { webhook: { defaulting: true, validation: false } } : {}),
  });
  const project: ProjectFile = { name: 'p', domain: 'example.com', apis: [api('A', true), api('B'), api('C', true)] };
  assert.deepEqual(stepsOf(project), [{ api: 'A' }, { api: 'B' }, { api: 'C' }, { webhook: 'A' }, { webhook: 'C' }]);
  assert.deepEqual(stepsOf(project, [{ api: 'A' }, { webhook: 'A' }, { api: 'Gone' }, { webhook: 'C' }, { api: 'B' }]), [
    { api: 'A' },
    { webhook: 'A' },
    { api: 'B' },
    { api: 'C' },
    { webhook: 'C' },
  ]);
});

test('operless.json: scaffoldVersion round-trips; a bad one is named', () => {
  const text = JSON.stringify({ name: 'p', domain: 'example.com', scaffoldVersion: '0.1.0', apis: [] });
  assert.equal(parseProjectFile(text).scaffoldVersion, '0.1.0');
  assert.throws(
    () => parseProjectFile(JSON.stringify({ name: 'p', domain: 'example.com', scaffoldVersion: 3, apis: [] })),
    /"scaffoldVersion" must be the Operless version/,
  );
});

/** Every file under `dir` but the record, by path. */
function tree(dir: string, under = dir): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(under, { withFileTypes: true })) {
    const full = join(under, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== RECORD_DIR) for (const [p, c] of tree(dir, full)) files.set(p, c);
    } else {
      files.set(relative(dir, full), readFileSync(full, 'utf8'));
    }
  }
  return files;
}

/** A project with two kinds and webhooks added between them (the order the replay must keep). */
function generate(): string {
  const dir = mkdtempSync(join(tmpdir(), 'upgrade-unit-'));
  const root = join(dir, 'demo');
  scaffoldInit({ dir: root, domain: 'example.com' });
  scaffoldApi(root, { group: 'apps', version: 'v1', kind: 'WebApp', namespaced: true, owns: 'ConfigMap' });
  scaffoldWebhook(root, { kind: 'WebApp', defaulting: true, conversion: true, spoke: 'v1beta1' });
  scaffoldApi(root, { group: 'apps', version: 'v1', kind: 'Cache', namespaced: true });
  return root;
}

describe('upgrading a generated project', () => {
  test('the record is exactly what the commands wrote (CRDs and files regenerated from operless.json aside)', () => {
    const root = generate();
    try {
      const record = readRecord(root);
      const files = tree(root);
      for (const [path, content] of record) assert.equal(content, files.get(path), path);
      const unrecorded = [...files.keys()].filter((p) => !record.has(p)).sort();
      assert.deepEqual(unrecorded, [
        'infra/crds/caches.apps.example.com.yaml',
        'infra/crds/webapps.apps.example.com.yaml',
        'infra/forwarder/watches.yaml',
        'infra/forwarder/webhooks.yaml',
        'infra/rbac/forwarder.yaml',
        'operless.json',
      ]);
      const result = scaffoldUpgrade(root, { operlessDependency: '^0.1.0' });
      assert.deepEqual(
        result.files.filter((f) => f.outcome !== 'unchanged'),
        [],
        'a project of this scaffold has nothing to upgrade',
      );
    } finally {
      rmSync(join(root, '..'), { recursive: true, force: true });
    }
  });

  test("an older scaffold's project: untouched files updated, edited ones merged, a clash conflicted (exit 1); --dry-run writes nothing", async () => {
    const root = generate();
    try {
      const controller = 'src/web-app/controller.ts';
      const recorded = join(root, RECORD_DIR, 'files');
      const older = (path: string, from: string, to: string) => {
        const text = readFileSync(join(recorded, path), 'utf8');
        assert.ok(text.includes(from), `${path} has ${from}`);
        writeFileSync(join(recorded, path), text.replace(from, to));
        writeFileSync(join(root, path), readFileSync(join(root, path), 'utf8').replace(from, to));
      };
      // "Older" scaffold: three templates said something else; the project has that text.
      older(controller, 'Idempotent: running it twice', 'Idempotent: running twice');
      older('functions/cache.ts', 'Lambda entry point: the Cache', 'Entry point: the Cache');
      older('test/cache.test.ts', 'asks for nothing more', 'asks for nothing');
      // The author's edits: a reconcile line in the WebApp controller; the clashing line in the Cache test.
      const mine = readFileSync(join(root, controller), 'utf8').replace(
        '  const generation = object.metadata.generation;',
        '  const generation = object.metadata.generation; // mine',
      );
      writeFileSync(join(root, controller), mine);
      writeFileSync(
        join(root, 'test/cache.test.ts'),
        readFileSync(join(root, 'test/cache.test.ts'), 'utf8').replace('asks for nothing', 'asks for nothing at all'),
      );
      const before = tree(root);

      const dry = await upgrade(['--project', root, '--dry-run', '--operless-version', '^0.1.0']);
      assert.equal(dry.exitCode, 1);
      assert.match(dry.output, /Dry run: would upgrade/);
      assert.deepEqual(tree(root), before, '--dry-run wrote nothing');

      const run = await upgrade(['--project', root, '--operless-version', '^0.1.0']);
      assert.equal(run.exitCode, 1, run.output);
      assert.match(run.output, /^ {2}conflicted {3}test\/cache\.test\.ts \(1 conflict\)$/m);
      assert.match(run.output, /^ {2}merged {7}src\/web-app\/controller\.ts$/m);
      assert.match(run.output, /^ {2}updated {6}functions\/cache\.ts$/m);
      assert.match(run.output, /Resolve the <<<<<<< \.\.\. >>>>>>> blocks in: test\/cache\.test\.ts/);
      const merged = readFileSync(join(root, controller), 'utf8');
      assert.ok(merged.includes('Idempotent: running it twice') && merged.includes('// mine'), 'both the template change and the edit');
      assert.match(readFileSync(join(root, 'functions/cache.ts'), 'utf8'), /Lambda entry point: the Cache/);
      assert.match(
        readFileSync(join(root, 'test/cache.test.ts'), 'utf8'),
        /<<<<<<< test\/cache\.test\.ts \(yours\)\n.*asks for nothing at all.*\n=======\n.*asks for nothing more.*\n>>>>>>> /,
      );
      assert.equal(readRecord(root).get('functions/cache.ts'), readFileSync(join(root, 'functions/cache.ts'), 'utf8'), "the record is today's scaffold now");
    } finally {
      rmSync(join(root, '..'), { recursive: true, force: true });
    }
  });

  test('a project made before the record existed: differing files are left alone and listed, the record is written', async () => {
    const root = generate();
    try {
      rmSync(join(root, RECORD_DIR), { recursive: true });
      const path = 'src/cache/controller.ts';
      const edited = `${readFileSync(join(root, path), 'utf8')}// mine\n`;
      writeFileSync(join(root, path), edited);
      const run = await upgrade(['--project', root, '--operless-version', '^0.1.0']);
      assert.equal(run.exitCode, 0, run.output);
      assert.match(run.output, /^ {2}not merged {3}src\/cache\/controller\.ts$/m);
      // Without steps.json the replay puts WebApp's webhook after every kind, so the two files
      // holding that order differ from today's render as well: left alone too.
      assert.match(
        run.output,
        /Not merged \(no record of what the old scaffold generated; compare by hand with \.scaffold\/files\/\): serverless\.yml, src\/cache\/controller\.ts, src\/resources\.ts\n/,
      );
      assert.equal(readFileSync(join(root, path), 'utf8'), edited, 'left alone');
      assert.ok(readRecord(root).has(path), 'recorded now');
    } finally {
      rmSync(join(root, '..'), { recursive: true, force: true });
    }
  });

  test('bad arguments and a missing project are named', async () => {
    await assert.rejects(
      upgrade(['--operless-version', ' ']),
      (err: Error) => err instanceof UsageError && /--operless-version needs a dependency spec/.test(err.message),
    );
    await assert.rejects(upgrade(['somewhere']), (err: Error) => err instanceof UsageError && /unexpected argument "somewhere"/.test(err.message));
    const dir = mkdtempSync(join(tmpdir(), 'upgrade-unit-'));
    try {
      await assert.rejects(
        upgrade(['--project', dir]),
        (err: Error) => err instanceof UsageError && /no operless\.json in .*operless upgrade/.test(err.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('examples/tenancy', () => {
  test("carries the scaffold record operless init writes, current with today's scaffold, so operless upgrade merges there", () => {
    const root = join(import.meta.dirname, '../../../examples/tenancy');
    assert.ok(readRecord(root).size > 0, `examples/tenancy has no ${RECORD_DIR}/ record`);
    const result = scaffoldUpgrade(root, { dryRun: true, operlessDependency: 'file:../..' });
    assert.equal(result.written, false);
    assert.deepEqual(
      result.files.filter((f) => f.outcome !== 'unchanged').map((f) => `${f.outcome} ${f.path}`),
      [],
      'the example is behind the scaffold (or has no record): run `node ../../src/cli/main.ts upgrade --operless-version file:../..` in examples/tenancy and commit the result',
    );
  });
});
