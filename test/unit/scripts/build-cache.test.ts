/**
 * The build cache (scripts/build-cache.ts): keys follow the inputs' contents, an entry is built
 * once, a failed build leaves nothing, and two builders of one entry at once both get it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachedBuild, cachedBuildSync, hashInputs } from '../../../scripts/build-cache.ts';

function tree(): string {
  const root = mkdtempSync(join(tmpdir(), 'operless-build-cache-test-'));
  mkdirSync(join(root, 'src', 'deep'), { recursive: true });
  mkdirSync(join(root, 'src', 'node_modules'), { recursive: true });
  writeFileSync(join(root, 'src', 'a.ts'), 'a');
  writeFileSync(join(root, 'src', 'deep', 'b.ts'), 'b');
  writeFileSync(join(root, 'src', 'node_modules', 'ignored.js'), 'x');
  writeFileSync(join(root, 'top.yml'), 'top');
  return root;
}

test('the key follows every input file, its path and the options; not node_modules or dot-entries', (t) => {
  const root = tree();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const key = () => hashInputs(root, ['src', 'top.yml', 'missing.json'], { stage: 'dev' });
  const first = key();
  assert.match(first, /^[0-9a-f]{32}$/);
  assert.equal(key(), first, 'same inputs, same key');
  assert.notEqual(hashInputs(root, ['src', 'top.yml'], { stage: 'prod' }), first, 'options count');
  writeFileSync(join(root, 'src', 'node_modules', 'ignored.js'), 'changed');
  writeFileSync(join(root, 'src', '.hidden'), 'new');
  assert.equal(key(), first, 'node_modules and dot-entries do not count');
  writeFileSync(join(root, 'src', 'deep', 'b.ts'), 'B');
  const changed = key();
  assert.notEqual(changed, first, "a deep file's content counts");
  writeFileSync(join(root, 'src', 'deep', 'c.ts'), '');
  assert.notEqual(key(), changed, 'a new (empty) file counts');
  assert.notEqual(hashInputs(root, ['src'], { stage: 'dev' }), key(), 'which inputs count');
});

test('an entry is built once; later calls return it without building', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'operless-build-cache-test-'));
  t.after(() => rmSync(cache, { recursive: true, force: true }));
  let builds = 0;
  const build = async (dir: string) => {
    builds++;
    mkdirSync(dir);
    writeFileSync(join(dir, 'out.txt'), `build ${builds}`);
  };
  const entry = await cachedBuild(cache, 'thing', 'k1', build);
  assert.equal(await cachedBuild(cache, 'thing', 'k1', build), entry);
  assert.equal(
    cachedBuildSync(cache, 'thing', 'k1', () => assert.fail('built again')),
    entry,
  );
  assert.equal(builds, 1);
  assert.equal(readFileSync(join(entry, 'out.txt'), 'utf8'), 'build 1');
  await cachedBuild(cache, 'thing', 'k2', build);
  assert.equal(builds, 2, 'another key is another build');
  assert.deepEqual(readdirSync(cache).sort(), ['thing-k1', 'thing-k2'], 'no temporary folder is left');
});

test('a failed build leaves nothing, and the next call builds again', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'operless-build-cache-test-'));
  t.after(() => rmSync(cache, { recursive: true, force: true }));
  await assert.rejects(
    cachedBuild(cache, 'thing', 'k', async (dir) => {
      mkdirSync(dir);
      writeFileSync(join(dir, 'half.txt'), 'half');
      throw new Error('compiler said no');
    }),
    /compiler said no/,
  );
  assert.throws(
    () =>
      cachedBuildSync(cache, 'thing', 'k', () => {
        throw new Error('again no');
      }),
    /again no/,
  );
  assert.deepEqual(readdirSync(cache), []);
  const entry = cachedBuildSync(cache, 'thing', 'k', (dir) => mkdirSync(dir));
  assert.ok(existsSync(entry));
});

test('two builders of one entry at once: both succeed with the same entry, one copy is kept', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'operless-build-cache-test-'));
  t.after(() => rmSync(cache, { recursive: true, force: true }));
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const build = (n: number) => async (dir: string) => {
    mkdirSync(dir);
    writeFileSync(join(dir, 'who.txt'), String(n));
    await gate;
  };
  const both = Promise.all([cachedBuild(cache, 'thing', 'k', build(1)), cachedBuild(cache, 'thing', 'k', build(2))]);
  release();
  const [a, b] = await both;
  assert.equal(a, b);
  assert.match(readFileSync(join(a, 'who.txt'), 'utf8'), /^[12]$/);
  assert.deepEqual(readdirSync(cache), ['thing-k'], 'the losing copy is discarded');
});
