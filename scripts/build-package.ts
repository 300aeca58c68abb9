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
 *   node scripts/build-package.ts        # npm run build:package (also run by npm pack/publish)
 */
import { cpSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const DIST = join(ROOT, 'dist');

/** Files under src/ that are not TypeScript but are read at run time, relative to src/. */
export const ASSETS = ['testing/modules'];

export function buildPackage(): void {
  rmSync(DIST, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
  for (const asset of ASSETS) cpSync(join(ROOT, 'src', asset), join(DIST, asset), { recursive: true });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildPackage();
  process.stdout.write(`built ${DIST}\n`);
}
