/**
 * Bundles the forwarder into ONE self-contained ES module with esbuild — what the
 * container image runs (`node forwarder.mjs`), so the image needs no node_modules and no
 * dev dependencies. Used by infra/forwarder/Dockerfile and by the tests.
 *
 *   node src/build/forwarder-bundle.ts [outFile]     (default dist/forwarder/forwarder.mjs)
 */
import { build } from 'esbuild';
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { operlessEsbuildPlugins } from './esbuild-plugins.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export const DEFAULT_BUNDLE_PATH = join(root, 'dist/forwarder/forwarder.mjs');

export async function bundleForwarder(outFile: string = DEFAULT_BUNDLE_PATH): Promise<{ outFile: string; bytes: number }> {
  await build({
    entryPoints: [join(root, 'src/forwarder/main.ts')],
    outfile: outFile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    // ES module builds first, as the functions' bundles (serverless.yml): they tree-shake (with
    // the CommonJS builds first the same code bundles ~0.36 MiB larger, docs/forwarder.md).
    mainFields: ['module', 'main'],
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
    // The same stubs as the functions: client-node's undici, proxy agents and generated clients are never run.
    plugins: operlessEsbuildPlugins(),
    // CommonJS dependencies (prom-client, parts of the AWS SDK) call require().
    banner: { js: "import { createRequire as __operlessCreateRequire } from 'node:module'; const require = __operlessCreateRequire(import.meta.url);" },
  });
  return { outFile, bytes: statSync(outFile).size };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { outFile, bytes } = await bundleForwarder(process.argv[2] ? resolve(process.argv[2]) : undefined);
  process.stderr.write(`forwarder bundle: ${outFile} (${(bytes / 1024 / 1024).toFixed(2)} MiB)\n`);
}
