/**
 * builtinsWithoutEsmFacade (src/build/builtin-modules.ts): ES imports of Node built-ins in a
 * bundle become `process.getBuiltinModule` lookups with the same exports, `require()` calls
 * are left alone, and — the reason for it — importing such a bundle in a fresh Node 24
 * process no longer loads Node's internal undici through `node:http`'s lazy getters.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { build } from 'esbuild';
import { builtinModuleSource, builtinsWithoutEsmFacade } from '../../../src/build/builtin-modules.ts';

async function bundle(contents: string, withPlugin: boolean, loader: 'js' | 'ts' = 'js'): Promise<string> {
  const out = await build({
    stdin: { contents, loader, resolveDir: import.meta.dirname },
    bundle: true,
    platform: 'node',
    format: 'esm',
    write: false,
    logLevel: 'silent',
    plugins: withPlugin ? [builtinsWithoutEsmFacade()] : [],
  });
  return out.outputFiles[0]!.text;
}

const dataUrl = (source: string): string => `data:text/javascript;base64,${Buffer.from(source).toString('base64')}`;

const ENTRY = [
  "import http from 'node:http';",
  "import { request, Agent } from 'node:https';",
  "import { readFileSync } from 'fs';",
  "import * as path from 'node:path';",
  'export { http, request, Agent, readFileSync, path };',
  "export const lazy = () => import('node:os');",
].join('\n');

test('ES imports of built-ins become getBuiltinModule lookups with the same exports', async () => {
  const code = await bundle(ENTRY, true);
  assert.doesNotMatch(code, /from\s*"(node:)?(http|https|fs|path|os)"/);
  for (const m of ['node:http', 'node:https', 'fs', 'node:path', 'node:os']) assert.ok(code.includes(`process.getBuiltinModule(${JSON.stringify(m)})`), m);
  const mod = (await import(dataUrl(code))) as Record<string, unknown> & { lazy(): Promise<{ default: unknown; hostname: unknown }> };
  const { default: http } = await import('node:http');
  const https = await import('node:https');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const os = await import('node:os');
  assert.equal(mod.http, http);
  assert.equal(mod.request, https.request);
  assert.equal(mod.Agent, https.Agent);
  assert.equal(mod.readFileSync, fs.readFileSync);
  assert.equal((mod.path as typeof path).join, path.join);
  const lazyOs = await mod.lazy();
  assert.equal(lazyOs.hostname, os.hostname);
  assert.equal(lazyOs.default, os.default);
});

test('require() of a built-in is left alone', async () => {
  const code = await bundle("const http = require('node:http'); module.exports = { http };", true);
  assert.ok(!code.includes('getBuiltinModule'));
  assert.equal(builtinModuleSource('node:http'), 'module.exports = process.getBuiltinModule("node:http");\n');
});

test("a bundle importing node:http no longer loads Node's internal undici when imported", async () => {
  const probe = (code: string): boolean => {
    const script =
      `const before = new Set(process.moduleLoadList); await import(${JSON.stringify(dataUrl(code))});` +
      "process.stdout.write(String(process.moduleLoadList.some((m) => !before.has(m) && m.includes('deps/undici'))));";
    return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }) === 'true';
  };
  const entry = "import http from 'node:http'; export const codes = http.STATUS_CODES;";
  // The control: without the plugin the ESM facade of node:http loads undici (Node 24.21).
  assert.equal(probe(await bundle(entry, false)), true, 'an ES import of node:http is expected to load undici on this Node version');
  assert.equal(probe(await bundle(entry, true)), false);
});
