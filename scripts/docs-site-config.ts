/**
 * The docs site's VitePress configuration: the four kinds of docs (tutorial, how-to guides,
 * reference, explanation) as the sidebar, local search, and GitHub's heading anchors, so a link
 * `page.md#a-heading` works the same on GitHub and on the site (scripts/docs-links.ts checks them).
 *
 * scripts/docs-site.ts stages the pages as the repository lays them out (README.md as the home
 * page, docs/…), so every relative link means the same on GitHub and on the site; the sidebar is
 * read from the staged folders, so a new page under docs/how-to/, docs/reference/ or
 * docs/decisions/ shows up without an edit here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { anchorOf } from './docs-links.ts';

interface SidebarItem {
  readonly text: string;
  readonly link?: string;
  readonly items?: readonly SidebarItem[];
  readonly collapsed?: boolean;
}

interface HtmlRenderer {
  renderer: { rules: Record<string, (tokens: { content: string }[], index: number) => string> };
}

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Raw HTML in a page is shown as text, comments are kept: the pages hold no markup, but doc
 * comments and tables do hold `<placeholder>`s that Vue would otherwise compile as elements.
 */
function textOnlyHtml(md: HtmlRenderer): void {
  for (const rule of ['html_inline', 'html_block']) {
    md.renderer.rules[rule] = (tokens, index) => {
      const content = tokens[index]!.content;
      return /^\s*<!--[\s\S]*-->\s*$/.test(content) ? content : escapeHtml(content);
    };
  }
}

/** A page's title: its first `# ` heading, else its file name. */
function titleOf(file: string): string {
  const heading = /^# (.+)$/m.exec(readFileSync(file, 'utf8'));
  return (heading?.[1] ?? file.replace(/^.*\//, '').replace(/\.md$/, '')).replace(/`/g, '');
}

function folderItems(srcDir: string, folder: string): SidebarItem[] {
  const dir = join(srcDir, 'docs', folder);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.md') && name !== 'index.md')
    .sort()
    .map((name) => ({ text: titleOf(join(dir, name)), link: `/docs/${folder}/${name.replace(/\.md$/, '')}` }));
}

function pages(srcDir: string, names: readonly string[]): SidebarItem[] {
  return names.filter((name) => existsSync(join(srcDir, `${name}.md`))).map((name) => ({ text: titleOf(join(srcDir, `${name}.md`)), link: `/${name}` }));
}

function docs(srcDir: string, names: readonly string[]): SidebarItem[] {
  return pages(
    srcDir,
    names.map((name) => `docs/${name}`),
  );
}

/** The sidebar: the four kinds, in the order a newcomer needs them. */
export function sidebar(srcDir: string): SidebarItem[] {
  return [
    {
      text: 'Start',
      items: [
        ...pages(srcDir, ['index']).map((item) => ({ ...item, link: '/' })),
        ...docs(srcDir, ['tutorial', 'getting-started', 'overview']),
        ...pages(srcDir, ['CONTRIBUTING', 'CHANGELOG']),
      ],
    },
    { text: 'How-to guides', items: folderItems(srcDir, 'how-to') },
    {
      text: 'Reference',
      items: [
        ...docs(srcDir, ['configuration']),
        ...folderItems(srcDir, 'reference'),
        ...(existsSync(join(srcDir, 'docs', 'api', 'index.md')) ? [{ text: 'API (TypeDoc)', link: '/docs/api/' }] : []),
        ...docs(srcDir, ['cli', 'compatibility', 'testenv', 'local-runner']),
      ],
    },
    {
      text: 'Explanation',
      items: [
        ...docs(srcDir, ['architecture', 'semantics', 'forwarder', 'security', 'faults', 'deploy', 'scaffolding', 'memcached', 'benchmarks']),
        { text: 'Decisions', collapsed: true, items: folderItems(srcDir, 'decisions') },
      ],
    },
  ];
}

/** The configuration for pages staged in `srcDir`, built into `outDir`. */
export function siteConfig(srcDir: string, outDir: string, cacheDir: string) {
  return {
    title: 'Operless',
    description: 'Kubernetes operators that run as serverless functions',
    srcDir,
    outDir,
    cacheDir,
    cleanUrls: false,
    head: [['link', { rel: 'icon', type: 'image/svg+xml', href: '/favicon.svg' }]],
    lastUpdated: false,
    // Pages link to the repository's sources (src/…, LICENSE): files of the repository, not pages.
    ignoreDeadLinks: [/(^|\/)(src|test|scripts|infra|events|examples|functions|bin)\//, /(^|\/)LICENSE$/],
    markdown: { anchor: { slugify: anchorOf }, config: textOnlyHtml },
    themeConfig: {
      search: { provider: 'local' },
      nav: [
        { text: 'Tutorial', link: '/docs/tutorial' },
        { text: 'How-to', link: '/docs/how-to/' },
        { text: 'Reference', link: '/docs/reference/' },
        { text: 'Architecture', link: '/docs/architecture' },
      ],
      sidebar: sidebar(srcDir),
      outline: { level: [2, 3] },
    },
  };
}
