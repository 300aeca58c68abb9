/**
 * The esbuild plugins of src/build reach the shipped bundles through the real packaging path:
 * `serverless package` (osls + serverless-esbuild, which `require`s the file serverless.yml's
 * `custom.esbuild.plugins` names). Checks each function's `.mjs` and chunks from its zip: stubbed
 * client-node modules, built-ins through `process.getBuiltinModule`, no ES import of
 * `node:http`, within the size the stubs give (well under the 1.5 MiB budget).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extractBundle, packageService } from '../../scripts/package.ts';

test('serverless package ships bundles built with the Operless esbuild plugins', async () => {
  const work = mkdtempSync(join(tmpdir(), 'operless-bundle-plugins-'));
  try {
    const packaged = await packageService({ outDir: join(work, 'package') });
    assert.deepEqual(packaged.functions.map((f) => f.name).sort(), ['memcached', 'resync', 'webhooks']);
    for (const fn of packaged.functions) {
      const dir = join(work, 'bundles', fn.name);
      extractBundle(fn, dir);
      // The entry and its chunks (code splitting): the stubs sit wherever client-node's code went.
      const code = fn.bundleFiles.map((file) => readFileSync(join(dir, file), 'utf8')).join('\n');
      assert.match(code, /undici \(the fetch dispatcher of the generated API clients/, `${fn.name}: the undici stub`);
      assert.match(code, /is not bundled by Operless/, fn.name);
      assert.ok(code.includes('process.getBuiltinModule("node:https")'), `${fn.name}: node:https through getBuiltinModule`);
      assert.doesNotMatch(code, /from\s*"node:https?"/, `${fn.name}: no ES import of node:http(s)`);
      // With the SQS client it carries (docs/architecture.md) a function bundle is ~0.5 MiB;
      // without the stubs it would be ~1.2 MiB more (undici alone is ~720 KiB).
      assert.ok(fn.bundleTotalBytes < 768 * 1024, `${fn.name} bundle (entry + chunks) is ${fn.bundleTotalBytes} bytes: are the stubs applied?`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
