/**
 * Node.js built-in modules reached through `process.getBuiltinModule()` instead of an ES
 * `import` in a bundle — a cold-start measure.
 *
 * Why: an ES import of a built-in makes Node build its ESM facade, which reads every export
 * once — including lazy getters that are never used otherwise. On Node 24, `node:http`'s
 * `WebSocket`, `CloseEvent` and `MessageEvent` getters load Node's internal undici, so
 * `import http from 'node:http'` in a fresh process costs several times what
 * `require('node:http')` does (`fs` and `util` pay for `fs.promises` and friends the same way,
 * less). Figures: docs/benchmarks.md, "Function bundle and cold start".
 *
 * Guarantees:
 * - only ES imports (`import`, `import()`) of specifiers `module.isBuiltin` accepts are
 *   rewritten; `require()` calls and everything else resolve as before;
 * - the replacement is a CommonJS module `module.exports = process.getBuiltinModule(<specifier>)`:
 *   esbuild's interop gives importers the same default and named exports, read when used, so
 *   no getter runs before the code touches it;
 * - it needs no `require` in scope (unlike a `require()` shim), only Node ≥ 22.3 / 20.16.
 */
import { isBuiltin } from 'node:module';
import type { Plugin } from 'esbuild';

const NAMESPACE = 'operless-builtin';

/** Source of the module that stands for the built-in `specifier`. */
export function builtinModuleSource(specifier: string): string {
  return `module.exports = process.getBuiltinModule(${JSON.stringify(specifier)});\n`;
}

/** The esbuild plugin: ES imports of Node built-ins become `process.getBuiltinModule` lookups. */
export function builtinsWithoutEsmFacade(): Plugin {
  return {
    name: 'operless-builtins-without-esm-facade',
    setup(build) {
      build.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
        if (args.kind !== 'import-statement' && args.kind !== 'dynamic-import') return undefined;
        if (args.namespace === NAMESPACE || !isBuiltin(args.path)) return undefined;
        return { path: args.path, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({ contents: builtinModuleSource(args.path), loader: 'js' }));
    },
  };
}
