/**
 * The docs site, built offline from the repository's own files (`npm run docs:build`):
 *
 * 1. stages the pages into .build/docs-site/src/ (git-ignored) as the repository lays them out:
 *    README.md as the home page (index.md), CONTRIBUTING.md, CHANGELOG.md, docs/, and the
 *    benchmark charts (bench/results/*.svg), so every relative link and image of a page means
 *    the same on GitHub and on the site;
 * 2. renders the API reference with TypeDoc (typedoc-plugin-markdown) from the doc comments of
 *    every package entry (package.json `exports`) into the staged docs/api/; a TypeDoc warning
 *    fails the build (such as a public type naming a type no entry exports: export it from the
 *    entry it belongs to);
 * 3. builds the site with VitePress (scripts/docs-site-config.ts: sidebar, local search) into
 *    .build/docs-site/dist/. VitePress fails the build on a dead link between pages.
 *
 *   node scripts/docs-site.ts          # build; prints the output folder
 *
 * Guarantees: reads nothing from the network; a failed step exits non-zero naming the step.
 * test/e2e/docs-site.test.ts builds it, serves it on loopback and reads it in a real browser.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageEntries } from './api-report.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const SITE_DIR = join(ROOT, '.build', 'docs-site');
export const SITE_OUT = join(SITE_DIR, 'dist');

function step(name: string, command: string, args: readonly string[]): void {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, NO_COLOR: '1' } });
  if (result.status !== 0) {
    process.stderr.write(`docs site: ${name} failed (${result.error?.message ?? `exit ${result.status}`})\n`);
    process.exit(1);
  }
}

/** The site's icon: an "O" in a circle (browsers ask for one; without it every page logs a 404). */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><circle cx="16" cy="16" r="15" fill="#3451b2"/><circle cx="16" cy="16" r="8" fill="none" stroke="white" stroke-width="4"/></svg>\n';

/** Copies the pages and the benchmark charts into the staging folder, laid out as in the repository. */
export function stage(): string {
  rmSync(SITE_DIR, { recursive: true, force: true });
  const src = join(SITE_DIR, 'src');
  cpSync(join(ROOT, 'docs'), join(src, 'docs'), { recursive: true });
  cpSync(join(ROOT, 'README.md'), join(src, 'index.md'));
  for (const page of ['CONTRIBUTING.md', 'CHANGELOG.md']) if (existsSync(join(ROOT, page))) cpSync(join(ROOT, page), join(src, page));
  const charts = join(src, 'bench', 'results');
  mkdirSync(charts, { recursive: true });
  for (const name of readdirSync(join(ROOT, 'bench', 'results')).filter((n) => n.endsWith('.svg'))) {
    cpSync(join(ROOT, 'bench', 'results', name), join(charts, name));
  }
  mkdirSync(join(src, 'public'), { recursive: true });
  writeFileSync(join(src, 'public', 'favicon.svg'), FAVICON);
  mkdirSync(join(src, '.vitepress'), { recursive: true });
  const config = relative(join(src, '.vitepress'), join(ROOT, 'scripts', 'docs-site-config.ts'))
    .split('\\')
    .join('/');
  writeFileSync(
    join(src, '.vitepress', 'config.ts'),
    `import { siteConfig } from '${config}';\nexport default siteConfig(${JSON.stringify(src)}, ${JSON.stringify(SITE_OUT)}, ${JSON.stringify(join(SITE_DIR, 'cache'))});\n`,
  );
  return src;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const src = stage();
  const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
  step('the API reference (typedoc)', bin('typedoc'), [
    '--plugin',
    'typedoc-plugin-markdown',
    '--tsconfig',
    join(ROOT, 'tsconfig.json'),
    '--out',
    join(src, 'docs', 'api'),
    '--readme',
    'none',
    '--entryFileName',
    'index',
    '--hidePageHeader',
    '--hideBreadcrumbs',
    '--disableSources',
    '--excludePrivate',
    '--treatWarningsAsErrors',
    'true',
    '--logLevel',
    'Warn',
    ...packageEntries().flatMap(({ source }) => [source]),
  ]);
  step('the site (vitepress build)', bin('vitepress'), ['build', src]);
  process.stdout.write(`docs site: ${relative(ROOT, SITE_OUT)}\n`);
}
