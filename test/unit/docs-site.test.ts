/**
 * The docs site's sidebar (scripts/docs-site-config.ts) reaches every page under docs/: a new
 * page is either in a folder the sidebar lists by itself (how-to, reference, decisions) or named
 * in one of its four kinds, so no page of the site is an orphan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sidebar } from '../../scripts/docs-site-config.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Item {
  readonly text: string;
  readonly link?: string;
  readonly items?: readonly Item[];
}

const links = (items: readonly Item[]): string[] => items.flatMap((item) => [...(item.link ? [item.link] : []), ...links(item.items ?? [])]);

function pagesUnder(dir: string, prefix: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return pagesUnder(path, `${prefix}${name}/`);
    return name.endsWith('.md') && name !== 'index.md' ? [`/${prefix}${name.replace(/\.md$/, '')}`] : [];
  });
}

test('the sidebar links every page under docs/', () => {
  const linked = new Set(links(sidebar(ROOT)));
  const missing = pagesUnder(join(ROOT, 'docs'), 'docs/').filter((page) => !linked.has(page));
  assert.deepEqual(missing, [], 'name the page in one of the four kinds of scripts/docs-site-config.ts sidebar()');
});

test('a page added to docs/how-to/ appears under How-to guides with its first heading as title', () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-docs-sidebar-'));
  try {
    mkdirSync(join(dir, 'docs', 'how-to'), { recursive: true });
    writeFileSync(join(dir, 'docs', 'how-to', 'rotate-a-certificate.md'), '# Rotate the `webhook` certificate\n\ntext\n');
    writeFileSync(join(dir, 'docs', 'how-to', 'index.md'), '# How-to guides\n');
    const howTo = sidebar(dir).find((group) => group.text === 'How-to guides');
    assert.deepEqual(howTo?.items, [{ text: 'Rotate the webhook certificate', link: '/docs/how-to/rotate-a-certificate' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
