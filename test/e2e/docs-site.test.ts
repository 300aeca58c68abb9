/**
 * The docs site as a reader gets it: `npm run docs:build`'s script (scripts/docs-site.ts) builds
 * it offline, a static server serves the output on loopback, and a real headless Chromium (the
 * system's, driven over the DevTools protocol by puppeteer-core; nothing is downloaded) reads it:
 * - the tutorial page renders, with no console error and no failed request;
 * - every page link of the tutorial page and the sidebar answers 200, its `#anchor` a heading id;
 * - the local search finds "requeueAfter";
 * - the benchmark chart on the benchmarks page loads, and the TypeDoc API pages list the root
 *   entry's names.
 * A screenshot of the tutorial page is kept under .build/test-artefacts/ (git-ignored); its
 * path is printed. Chromium is installed with apt-get when missing, as scripts/run.sh does.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { SITE_OUT } from '../../scripts/docs-site.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARTEFACTS = join(ROOT, '.build', 'test-artefacts', 'docs-site');

/** The system's Chromium, installed with apt-get (as root) when it is missing. */
function chromium(): string {
  const find = () =>
    ['chromium', 'chromium-browser'].map((name) => spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim()).find(Boolean);
  const found = find();
  if (found) return found;
  const root = process.getuid?.() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get']).status === 0;
  assert.ok(root && apt, 'Chromium is not installed and cannot be installed here (needs root and apt-get): install the Debian package "chromium"');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { env, stdio: 'ignore' }).status === 0;
  if (!install()) {
    spawnSync('apt-get', ['update'], { env, stdio: 'ignore' });
    assert.ok(install(), 'apt-get install chromium failed');
  }
  const installed = find();
  assert.ok(installed, 'chromium was installed but is not on PATH');
  return installed;
}

/** Runs the site build; its output is shown only when it fails. */
async function build(): Promise<void> {
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'docs-site.ts')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `the docs site build failed:\n${output.slice(-4000)}`);
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.png': 'image/png',
};

/** A static server of the built site on loopback: `/dir/` is its index.html, nothing outside the site. */
function serve(dir: string): Promise<Server> {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    let file = join(dir, path);
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!file.startsWith(dir) || !existsSync(file)) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** What went wrong in the pages the current test opened; each test starts with none. */
const problems: string[] = [];
let browser: Browser;
let base: string;
let userData: string;
let server: Server;

beforeEach(() => {
  problems.length = 0;
});

before(async () => {
  const executablePath = chromium();
  await build();
  server = await serve(SITE_OUT);
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  userData = mkdtempSync(join(tmpdir(), 'operless-docs-chromium-'));
  browser = await puppeteer.launch({
    executablePath,
    headless: true,
    userDataDir: userData,
    // --no-sandbox: the test may run as root, where Chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (userData) rmSync(userData, { recursive: true, force: true });
});

/** A page that records console errors, page errors and failed requests into `problems`. */
async function open(path: string): Promise<Page> {
  const page = await browser.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`${path}: console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`${path}: page error: ${error instanceof Error ? error.message : String(error)}`));
  page.on('requestfailed', (request) => problems.push(`${path}: request failed: ${request.url()}`));
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${path}: ${response.status()} for ${response.url()}`);
  });
  await page.setViewport({ width: 1280, height: 900 });
  const response = await page.goto(`${base}${path}`, { waitUntil: 'networkidle0' });
  assert.equal(response?.status(), 200, path);
  return page;
}

test('the tutorial page renders, with no console error, and a screenshot is kept', async (t) => {
  const page = await open('/docs/tutorial.html');
  const heading = await page.$eval('.vp-doc h1', (h) => h.textContent ?? '');
  assert.match(heading, /first operator/i);
  const sidebar = await page.$$eval('.VPSidebar a', (links) => links.map((a) => a.textContent?.trim() ?? ''));
  for (const group of ['Add a webhook', 'Redrive a dead-letter queue', 'Forwarder configuration reference'])
    assert.ok(sidebar.includes(group), `the sidebar lists "${group}": ${sidebar.join(', ')}`);
  mkdirSync(ARTEFACTS, { recursive: true });
  const screenshot = join(ARTEFACTS, 'tutorial.png');
  await page.screenshot({ path: screenshot, fullPage: false });
  t.diagnostic(`screenshot: ${screenshot}`);
  await page.close();
  assert.deepEqual(problems, []);
});

test('every page link of the tutorial page and the sidebar resolves, anchors included', async () => {
  const page = await open('/docs/tutorial.html');
  const hrefs = await page.$$eval('a[href]', (links) => links.map((a) => (a as unknown as { href: string }).href));
  await page.close();
  const pages = [...new Set(hrefs.filter((href) => href.startsWith(base)).filter((href) => /(\.html|\/)(#.*)?$/.test(href)))];
  assert.ok(pages.length > 30, `links found: ${pages.length}`);
  const bad: string[] = [];
  const bodies = new Map<string, string>();
  for (const href of pages) {
    const url = new URL(href);
    const target = `${url.origin}${url.pathname}`;
    if (!bodies.has(target)) {
      const response = await fetch(target);
      bodies.set(target, response.ok ? await response.text() : '');
      if (!response.ok) bad.push(`${target}: ${response.status}`);
    }
    const anchor = decodeURIComponent(url.hash.slice(1));
    if (anchor && bodies.get(target) && !bodies.get(target)!.includes(`id="${anchor}"`)) bad.push(`${href}: no element #${anchor}`);
  }
  assert.deepEqual(bad, []);
});

test('the local search finds "requeueAfter"', async () => {
  const page = await open('/docs/tutorial.html');
  await page.click('.VPNavBarSearch button');
  await page.waitForSelector('.VPLocalSearchBox input');
  await page.type('.VPLocalSearchBox input', 'requeueAfter');
  await page.waitForFunction("document.querySelectorAll('.VPLocalSearchBox .results .result').length > 0", { timeout: 60_000 });
  const titles = await page.$$eval('.VPLocalSearchBox .results .result', (results) => results.map((r) => r.textContent?.replace(/\s+/g, ' ').trim() ?? ''));
  assert.ok(titles.length > 0);
  assert.ok(
    titles.some((title) => /requeueAfter/i.test(title)),
    titles.slice(0, 5).join(' | '),
  );
  await page.close();
  assert.deepEqual(problems, []);
});

test('the benchmark chart loads and the API reference lists the root entry', async () => {
  const page = await open('/docs/benchmarks.html');
  const charts = await page.$$eval('.vp-doc img[src$=".svg"]', (images) =>
    images.map((img) => img as unknown as { src: string; naturalWidth: number }).map((img) => ({ src: img.src, width: img.naturalWidth })),
  );
  assert.ok(charts.length > 0, 'the benchmarks page shows a chart');
  for (const chart of charts) assert.ok(chart.width > 0, `${chart.src} did not load`);
  await page.close();
  const api = await open('/docs/api/index.html');
  const text = await api.$eval('.vp-doc', (doc) => doc.textContent ?? '');
  await api.close();
  assert.match(text, /index/);
  const root = await open('/docs/api/index/index.html');
  const names = await root.$eval('.vp-doc', (doc) => doc.textContent ?? '');
  await root.close();
  for (const name of ['defineController', 'requeueAfter', 'toSqsHandler']) assert.ok(names.includes(name), name);
  assert.deepEqual(problems, []);
});
