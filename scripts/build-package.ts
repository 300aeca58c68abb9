/**
 * Builds what the `operless` npm package ships: `dist/` with JavaScript and `.d.ts` files
 * compiled from `src/` (tsconfig.build.json rewrites the `.ts` import extensions to `.js`),
 * plus the non-TypeScript files the code finds next to itself (the Go and Maven modules the
 * test environment builds its binaries from).
 *
 * Why: Node runs this repository's `.ts` sources directly, but refuses to strip types from
 * files under `node_modules`, so a project that installs Operless needs JavaScript.
 * Consumers get `dist/` through the `exports` conditions in package.json; inside this
 * repository, `node --conditions=operless-source` maps the same specifiers to `src/`.
 *
 *   node scripts/build-package.ts        # npm run build:package; npm's `prepare`: run by `npm install`
 *                                        # in a checkout, npm pack/publish, and directory or git installs
 *
 * Tests that install Operless as a package build it with `stagePackage(dir)`: the same build
 * into a folder of their own holding what the package ships (package.json and its `files`),
 * never into this checkout's `dist/`, which other tests and tools running at the same time read.
 * Within one `npm test` run the package is compiled once and copied for each test that stages
 * it (scripts/build-cache.ts).
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCacheDir, cachedBuildSync, hashInputs } from './build-cache.ts';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const DIST = join(ROOT, 'dist');

/** Files under src/ that are not TypeScript but are read at run time, relative to src/. */
export const ASSETS = ['testing/modules'];

/** Compiles `src/` into `outDir` (default: this checkout's `dist/`), replacing what was there. */
export function buildPackage(outDir: string = DIST): void {
  rmSync(outDir, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', outDir], { cwd: ROOT, stdio: 'inherit' });
  for (const asset of ASSETS) cpSync(join(ROOT, 'src', asset), join(outDir, asset), { recursive: true });
}

/** What decides the staged package: the sources, the build's tsconfigs, the manifest and what it ships. */
const STAGE_INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

/**
 * The package as it would be published, in `dir` (created): package.json (without its
 * lifecycle scripts: the copy is built already), the `files` it lists, and `dist/` compiled
 * there. Returns `dir`, for a `file:` dependency. With a build cache (`OPERLESS_BUILD_CACHE`,
 * set by `npm test`: scripts/build-cache.ts) a package staged earlier in the run from the same
 * sources is copied instead of compiled again.
 */
export function stagePackage(dir: string): string {
  const cacheDir = buildCacheDir();
  if (!cacheDir) return stageInto(dir);
  const shipped = (readManifest().files ?? []).filter((entry) => !isDist(entry));
  const key = hashInputs(ROOT, [...STAGE_INPUTS, ...shipped], { node: process.version });
  const entry = cachedBuildSync(cacheDir, 'staged-package', key, stageInto);
  mkdirSync(dir, { recursive: true });
  cpSync(entry, dir, { recursive: true });
  return dir;
}

function readManifest(): { files?: string[]; scripts?: Record<string, string> } {
  return JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files?: string[]; scripts?: Record<string, string> };
}

/** The manifest's `dist/` entry: compiled for the staged copy, never taken from the checkout. */
function isDist(entry: string): boolean {
  return entry.replace(/\/$/, '') === 'dist';
}

function stageInto(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const manifest = readManifest();
  for (const entry of manifest.files ?? []) {
    if (isDist(entry)) continue;
    cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  }
  const { scripts: _scripts, ...published } = manifest;
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(published, null, 2)}\n`);
  buildPackage(join(dir, 'dist'));
  return dir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildPackage();
  process.stdout.write(`built ${DIST}\n`);
}
