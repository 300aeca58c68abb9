/**
 * Code splitting's layout (serverless.yml `splitting: true`, `chunkNames: '[entry].chunks/…'`):
 * the chunks-per-entry plugin puts a function's chunks in `<entry>.chunks/`, and
 * scripts/package.ts reads a zip's static and dynamic chunk imports from esbuild's output.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build, type BuildOptions } from 'esbuild';
import { chunksPerEntry } from '../../../src/build/esbuild-plugins.ts';
import { moduleImports } from '../../../scripts/package.ts';
import { ROOT } from '../../../scripts/bundle.ts';

test('chunksPerEntry: [entry] in chunkNames becomes the entry name; other builds are left alone', async () => {
  mkdirSync(join(ROOT, '.build'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.build', 'chunks-test-'));
  try {
    writeFileSync(join(dir, 'fn.ts'), 'import { a } from "./a.ts"; export const handler = async () => a + (await import("./lazy.ts")).b;');
    writeFileSync(join(dir, 'a.ts'), 'export const a = 1;');
    writeFileSync(join(dir, 'lazy.ts'), 'import { a } from "./a.ts"; export const b = a + 1;');
    const out = join(dir, 'out');
    const options: BuildOptions & { write: false } = {
      entryPoints: [join(dir, 'fn.ts')],
      outdir: out,
      bundle: true,
      format: 'esm',
      splitting: true,
      outExtension: { '.js': '.mjs' },
      write: false,
      logLevel: 'silent',
      plugins: [chunksPerEntry()],
    };
    const split = await build({ ...options, chunkNames: '[entry].chunks/[name]-[hash]' });
    const files = split.outputFiles.map((f) => relative(out, f.path)).sort();
    assert.ok(files.includes('fn.mjs'));
    assert.ok(
      files.every((f) => f === 'fn.mjs' || f.startsWith('fn.chunks/')),
      files.join(', '),
    );
    assert.ok(
      files.some((f) => /^fn\.chunks\/lazy-[A-Z0-9]+\.mjs$/.test(f)),
      files.join(', '),
    );
    const plain = await build({ ...options, chunkNames: 'chunks/[name]-[hash]' });
    assert.ok(plain.outputFiles.every((f) => !relative(out, f.path).includes('fn.chunks')));
    await assert.rejects(
      build({ ...options, entryPoints: [join(dir, 'fn.ts'), join(dir, 'lazy.ts')], chunkNames: '[entry].chunks/[name]' }),
      /needs exactly one entry point, got 2/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('moduleImports: static imports and re-exports of chunks; dynamic ones with "all"; never packages', () => {
  const code =
    'import{a as b}from"./fn.chunks/chunk-A.mjs";import"./fn.chunks/chunk-B.mjs";export{c}from"./fn.chunks/chunk-C.mjs";' +
    'import{createRequire as r}from"node:module";var l=async()=>(await import("./fn.chunks/lazy-D.mjs")).x;const s="import x from y";';
  assert.deepEqual(moduleImports(code, 'static'), ['./fn.chunks/chunk-A.mjs', './fn.chunks/chunk-B.mjs', './fn.chunks/chunk-C.mjs']);
  assert.deepEqual(moduleImports(code, 'all'), ['./fn.chunks/chunk-A.mjs', './fn.chunks/chunk-B.mjs', './fn.chunks/chunk-C.mjs', './fn.chunks/lazy-D.mjs']);
});
