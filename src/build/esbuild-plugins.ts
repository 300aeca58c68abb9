/**
 * The esbuild plugins every Operless bundle is built with — the stubs of
 * unreachable-modules.ts and the built-in imports of builtin-modules.ts — in the form
 * serverless-esbuild loads them: `serverless.yml` names this file in
 * `custom.esbuild.plugins`, serverless-esbuild `require`s it relative to the service
 * directory and uses its default export, an array of plugins.
 *
 *   custom:
 *     esbuild:
 *       plugins: src/build/esbuild-plugins.ts                          # this repository
 *       plugins: node_modules/operless/dist/build/esbuild-plugins.js   # a project using Operless
 *
 * `loadEsbuildPlugins` does the same for the tools that call esbuild themselves
 * (scripts/bundle.ts), so their bundles are the shipped ones.
 *
 * `chunksPerEntry` gives each function its own chunk folder when code splitting is on: it
 * replaces `[entry]` in `chunkNames` with the entry's file name, so serverless.yml's
 * `chunkNames: '[entry].chunks/[name]-[hash]'` puts memcached's chunks in
 * `functions/memcached.chunks/`. serverless-esbuild builds every function into one folder and,
 * with `package.individually`, leaves out of a function's zip the other functions' bundles and
 * whatever starts with their name and a dot (`functions/resync.` …): named so, each zip holds
 * its own entry and chunks only (docs/deploy.md, "Bundle layout").
 */
import { createRequire } from 'node:module';
import { basename, extname, resolve } from 'node:path';
import type { Plugin } from 'esbuild';
import { builtinsWithoutEsmFacade } from './builtin-modules.ts';
import { stubUnreachableModules } from './unreachable-modules.ts';

/** A fresh list of the plugins (esbuild plugins hold no state, but callers may append). */
export function operlessEsbuildPlugins(): Plugin[] {
  return [stubUnreachableModules(), builtinsWithoutEsmFacade(), chunksPerEntry()];
}

/** Replaces `[entry]` in `chunkNames` with the single entry point's file name without extension. */
export function chunksPerEntry(): Plugin {
  return {
    name: 'operless-chunks-per-entry',
    setup(build) {
      const options = build.initialOptions;
      if (!options.chunkNames?.includes('[entry]')) return;
      const entries = Array.isArray(options.entryPoints) ? options.entryPoints : Object.values(options.entryPoints ?? {});
      const only = entries.length === 1 ? entries[0] : undefined;
      const path = typeof only === 'string' ? only : only?.in;
      if (!path) throw new Error(`chunkNames ${JSON.stringify(options.chunkNames)} names [entry]: it needs exactly one entry point, got ${entries.length}`);
      options.chunkNames = options.chunkNames.replaceAll('[entry]', basename(path, extname(path)));
    },
  };
}

export default operlessEsbuildPlugins();

/**
 * The plugins a `custom.esbuild.plugins` setting names, loaded the way serverless-esbuild
 * does: `require(<serviceDir>/<setting>)`, its default export, called when it is a function.
 * No setting: no plugins.
 */
export function loadEsbuildPlugins(setting: string | undefined, serviceDir: string): Plugin[] {
  if (!setting) return [];
  const file = resolve(serviceDir, setting);
  let loaded: unknown;
  try {
    loaded = createRequire(import.meta.url)(file);
  } catch (err) {
    throw new Error(`serverless.yml custom.esbuild.plugins: cannot load ${file} (${(err as Error).message}); fix the path, relative to ${serviceDir}`, {
      cause: err,
    });
  }
  if (typeof loaded === 'object' && loaded !== null && 'default' in loaded) loaded = loaded.default;
  if (typeof loaded === 'function') loaded = (loaded as () => unknown)();
  if (!Array.isArray(loaded)) {
    throw new Error(`serverless.yml custom.esbuild.plugins: ${file} must export an array of esbuild plugins (default export), got ${typeof loaded}`);
  }
  return loaded as Plugin[];
}
