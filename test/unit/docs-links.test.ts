/**
 * Every doc's relative links resolve (file and heading) and every repository path a doc names in
 * code exists (scripts/docs-links.ts), so a moved or renamed file breaks `npm test`, not a reader.
 * The checker itself is tested on small pages beside it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anchorOf, checkDocs, docPages, type DocFiles, headingAnchors, problemsOf } from '../../scripts/docs-links.ts';

test('every link and named path of the docs resolves', () => {
  const problems = checkDocs();
  assert.deepEqual(
    problems.map((p) => `${p.page}:${p.line}: ${p.problem}`),
    [],
  );
  assert.ok(docPages().includes('README.md') && docPages().includes('docs/tutorial.md'));
});

const files = (paths: Record<string, string>): DocFiles => ({
  exists: (path) => Object.keys(paths).some((p) => p === path || p.startsWith(`${path}/`)),
  anchors: (path) => (paths[path] === undefined ? undefined : headingAnchors(paths[path]!)),
});

test("anchors are GitHub's: lower case, punctuation dropped, spaces to dashes, repeats numbered", () => {
  assert.equal(anchorOf('`operless create webhook --kind <Kind> [--force]`'), 'operless-create-webhook---kind-kind---force');
  assert.equal(anchorOf('Per-key ordering (FIFO)'), 'per-key-ordering-fifo');
  assert.deepEqual([...headingAnchors('# A\n```\n# not a heading\n```\n## A\n### B c\n')], ['a', 'a-1', 'b-c']);
});

test('problemsOf finds a missing file, a missing heading and a named path that does not exist', () => {
  const repo = files({ 'docs/a.md': '# Title\n## Some section\n', 'src/core/reconcile/batch.ts': '' });
  const page = [
    'See [a](a.md), [b](a.md#some-section), [c](missing.md), [d](a.md#nope), [e](https://example.com/x.md).',
    "Code: `src/core/reconcile/batch.ts`, `src/core/gone.ts`, `src/controllers/site.ts` (a project's), `test/<kind>.ts`.",
    '```',
    '[f](nowhere.md) `src/core/also-gone.ts`',
    '```',
    'Up: [g](../../outside.md)',
  ].join('\n');
  assert.deepEqual(
    problemsOf('docs/b.md', page, repo).map((p) => `${p.line}: ${p.problem}`),
    [
      '1: link missing.md: docs/missing.md does not exist',
      '1: link a.md#nope: docs/a.md has no heading #nope',
      '2: names src/core/gone.ts, which does not exist',
      '6: link ../../outside.md leaves the repository',
    ],
  );
});
