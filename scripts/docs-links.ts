/**
 * The docs' link and path check: every relative Markdown link of a doc resolves to a file of the
 * repository (its `#anchor` to a heading of that file), and every repository path a doc names in
 * code (`src/core/reconcile/batch.ts`, `test/e2e/`) exists. The pages are README.md, CONTRIBUTING.md,
 * CHANGELOG.md and docs/**.md; the generated API pages of the docs site are checked by its build.
 *
 *   node scripts/docs-links.ts     # print every problem, exit 1 when there is one
 *
 * `problemsOf` is pure (a page's text and a file lookup in, problems out) and tested beside it;
 * `test/unit/docs-links.test.ts` runs it over the repository in `npm test`.
 *
 * What is not a repository path: a path inside a fenced block (commands and output of generated
 * projects), one on a page about a generated project (`PROJECT_PAGES`), one with a placeholder
 * (`<kind>`, `*`, `…`) or a hidden (git-ignored work) folder, and one under a folder the repository
 * does not have at its top (a generated project's `src/controllers/…` starts with `src/` too, so
 * names under `src/` are checked only when the folder after `src/` exists here).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

/**
 * Pages about a generated project (`operless init`, `create api`): the paths they name in code are
 * that project's (`infra/forwarder/watches.yaml`), so only their links are checked.
 */
export const PROJECT_PAGES: readonly string[] = ['docs/tutorial.md', 'docs/scaffolding.md', 'docs/cli.md', 'docs/how-to/'];

/** Top-level folders whose files docs name in code spans. */
const REPO_FOLDERS = ['src', 'test', 'docs', 'scripts', 'bench', 'infra', 'events', 'examples', 'functions', 'bin'] as const;

export interface DocProblem {
  readonly page: string;
  readonly line: number;
  readonly problem: string;
}

/** What a page may look up: whether a repository-relative path exists, and a page's heading anchors. */
export interface DocFiles {
  exists(path: string): boolean;
  anchors(path: string): ReadonlySet<string> | undefined;
}

/** GitHub's and VitePress's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
export function anchorOf(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a page's headings (outside fenced blocks), with GitHub's `-1`, `-2` for repeats. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const match = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!match) continue;
    const base = anchorOf(match[1]!);
    const count = seen.get(base) ?? 0;
    anchors.add(count === 0 ? base : `${base}-${count}`);
    seen.set(base, count + 1);
  }
  return anchors;
}

/** The problems of one page (`page` is its repository-relative path). */
export function problemsOf(page: string, text: string, files: DocFiles): DocProblem[] {
  const problems: DocProblem[] = [];
  const lines = text.split('\n');
  let fenced = false;
  lines.forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    const report = (problem: string) => problems.push({ page, line: index + 1, problem });
    const prose = line.replace(/`[^`]*`/g, '``');
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved =
        pathPart === ''
          ? page
          : normalize(join(dirname(page), decodeURIComponent(pathPart)))
              .split('\\')
              .join('/');
      if (resolved.startsWith('..')) {
        report(`link ${target} leaves the repository`);
        continue;
      }
      if (!files.exists(resolved)) {
        report(`link ${target}: ${resolved} does not exist`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md')) {
        const anchors = files.anchors(resolved);
        if (anchors && !anchors.has(anchor)) report(`link ${target}: ${resolved} has no heading #${anchor}`);
      }
    }
    if (PROJECT_PAGES.some((p) => page === p || (p.endsWith('/') && page.startsWith(p)))) return;
    for (const match of line.matchAll(/`([^`\s]+)`/g)) {
      const named = match[1]!.replace(/[.,:;]$/, '').replace(/:\d+(-\d+)?$/, '');
      const top = named.split('/')[0]!;
      if (!(REPO_FOLDERS as readonly string[]).includes(top) || !named.includes('/')) continue;
      if (/[<>*…{}$]|\.\.\.|\/\./.test(named)) continue;
      const clean = named.replace(/\/$/, '');
      const second = clean.split('/').slice(0, 2).join('/');
      if (top === 'src' && clean.split('/').length > 2 && !files.exists(second)) continue;
      if (!files.exists(clean)) report(`names ${named}, which does not exist`);
    }
  });
  return problems;
}

/** The repository's files, read from disk. */
export function repositoryFiles(root: string = ROOT): DocFiles {
  const cache = new Map<string, Set<string>>();
  return {
    exists: (path) => existsSync(join(root, path)),
    anchors: (path) => {
      if (!cache.has(path)) {
        try {
          cache.set(path, headingAnchors(readFileSync(join(root, path), 'utf8')));
        } catch {
          return undefined;
        }
      }
      return cache.get(path);
    },
  };
}

/** The pages checked: README.md, CONTRIBUTING.md, CHANGELOG.md and every Markdown file under docs/. */
export function docPages(root: string = ROOT): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir)).flatMap((name) => {
      const path = `${dir}/${name}`;
      if (name.startsWith('.') || name === 'node_modules' || path === 'docs/api') return [];
      return statSync(join(root, path)).isDirectory() ? walk(path) : name.endsWith('.md') ? [path] : [];
    });
  return [...['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md'].filter((p) => existsSync(join(root, p))), ...walk('docs')].sort();
}

/** Every problem of every page. */
export function checkDocs(root: string = ROOT): DocProblem[] {
  const files = repositoryFiles(root);
  return docPages(root).flatMap((page) => problemsOf(page, readFileSync(join(root, page), 'utf8'), files));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkDocs();
  for (const p of problems) process.stderr.write(`${p.page}:${p.line}: ${p.problem}\n`);
  process.stdout.write(`${docPages().length} pages, ${problems.length} problems\n`);
  if (problems.length > 0) process.exit(1);
}
