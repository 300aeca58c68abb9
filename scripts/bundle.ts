/**
 * esbuild bundles of the Lambda functions, without the serverless CLI: the same options as
 * `custom.esbuild` in serverless.yml (read from it, so the two cannot drift), one `.mjs` per
 * function in `functions/`. For tests and benchmarks that need the shipped code fast;
 * `scripts/package.ts` is the real packaging path.
 *
 *   node scripts/bundle.ts [outDir]        # default .build/functions/<name>.mjs
 */
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';
import { parse } from 'yaml';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

interface EsbuildSettings {
  minify?: boolean;
  sourcemap?: boolean;
  target?: string;
  platform?: 'node';
  format?: 'esm' | 'cjs';
  outputFileExtension?: string;
  mainFields?: string[];
  exclude?: string[];
  banner?: Record<string, string>;
}

/** The function names and handler files declared in serverless.yml, and its esbuild settings. */
export function readServerlessConfig(path: string = join(ROOT, 'serverless.yml')): { functions: Record<string, string>; esbuild: EsbuildSettings } {
  // osls-specific tags (!Ref, !GetAtt …) are irrelevant here: keep them as plain values.
  const doc = parse(readFileSync(path, 'utf8'), { customTags: (tags) => tags, logLevel: 'silent' }) as {
    functions: Record<string, { handler: string }>;
    custom: { esbuild: EsbuildSettings };
  };
  const functions: Record<string, string> = {};
  for (const [name, fn] of Object.entries(doc.functions)) {
    functions[name] = `${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.ts`;
  }
  return { functions, esbuild: doc.custom.esbuild };
}

export interface BundleResult {
  readonly name: string;
  readonly path: string;
  readonly bytes: number;
}

export async function bundleFunctions(outDir: string = join(ROOT, '.build', 'functions')): Promise<BundleResult[]> {
  const { functions, esbuild } = readServerlessConfig();
  const ext = esbuild.outputFileExtension ?? '.js';
  const results: BundleResult[] = [];
  for (const [name, entry] of Object.entries(functions)) {
    const outfile = join(outDir, `${name}${ext}`);
    const options: BuildOptions = {
      entryPoints: [join(ROOT, entry)],
      outfile,
      bundle: true,
      minify: esbuild.minify ?? false,
      sourcemap: esbuild.sourcemap ?? false,
      target: esbuild.target ?? 'node24',
      platform: esbuild.platform ?? 'node',
      format: esbuild.format ?? 'esm',
      mainFields: esbuild.mainFields ?? ['module', 'main'],
      external: esbuild.exclude ?? [],
      banner: esbuild.banner ?? {},
      metafile: true,
      logLevel: 'silent',
    };
    const out = await build(options);
    const bytes = Object.entries(out.metafile?.outputs ?? {}).find(([file]) => resolve(ROOT, file) === outfile)?.[1].bytes ?? 0;
    results.push({ name, path: outfile, bytes });
  }
  return results;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const results = await bundleFunctions(process.argv[2] ? resolve(process.argv[2]) : undefined);
  for (const r of results) console.log(`${r.name.padEnd(12)} ${relative(process.cwd(), r.path)}  ${(r.bytes / 1024).toFixed(0)} KiB`);
}
