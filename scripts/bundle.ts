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
import { loadEsbuildPlugins } from '../src/build/esbuild-plugins.ts';
import { parseServerlessYaml, type EsbuildSettings } from '../src/project/serverless-yml.ts';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** The function names and handler files declared in serverless.yml, and its esbuild settings. */
export function readServerlessConfig(path: string = join(ROOT, 'serverless.yml')): { functions: Record<string, string>; esbuild: EsbuildSettings } {
  const { functions, esbuild } = parseServerlessYaml(readFileSync(path, 'utf8'));
  return { functions: Object.fromEntries(functions.map((f) => [f.name, f.module])), esbuild };
}

export interface BundleResult {
  readonly name: string;
  readonly path: string;
  readonly bytes: number;
}

/**
 * The esbuild options serverless-esbuild derives from `custom.esbuild`, for one entry point
 * (with a metafile). `serviceDir` is where `custom.esbuild.plugins` is resolved from.
 */
export function esbuildOptions(esbuild: EsbuildSettings, entry: string, outfile: string, serviceDir: string = ROOT): BuildOptions & { metafile: true } {
  return {
    entryPoints: [entry],
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
    plugins: loadEsbuildPlugins(esbuild.plugins, serviceDir),
    metafile: true,
    logLevel: 'silent',
  };
}

export async function bundleFunctions(outDir: string = join(ROOT, '.build', 'functions')): Promise<BundleResult[]> {
  const { functions, esbuild } = readServerlessConfig();
  // serverless.yml picks the extension per stage (a `${…}` variable); the shipped one is .mjs.
  const ext = esbuild.outputFileExtension?.startsWith('.') ? esbuild.outputFileExtension : '.mjs';
  const results: BundleResult[] = [];
  for (const [name, entry] of Object.entries(functions)) {
    const outfile = join(outDir, `${name}${ext}`);
    const out = await build(esbuildOptions(esbuild, join(ROOT, entry), outfile));
    const bytes = Object.entries(out.metafile?.outputs ?? {}).find(([file]) => resolve(ROOT, file) === outfile)?.[1].bytes ?? 0;
    results.push({ name, path: outfile, bytes });
  }
  return results;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const results = await bundleFunctions(process.argv[2] ? resolve(process.argv[2]) : undefined);
  for (const r of results) console.log(`${r.name.padEnd(12)} ${relative(process.cwd(), r.path)}  ${(r.bytes / 1024).toFixed(0)} KiB`);
}
