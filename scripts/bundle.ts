/**
 * esbuild bundles of the Lambda functions, without the serverless CLI: the same options as
 * `custom.esbuild` in serverless.yml (read from it, so the two cannot drift), laid out as
 * serverless-esbuild lays them out: per function an entry `<name>.mjs` and, with code
 * splitting, its chunks in `<name>.chunks/` beside it. For tests and benchmarks that need the
 * shipped code fast; `scripts/package.ts` is the real packaging path.
 *
 *   node scripts/bundle.ts [outDir]        # default .build/functions/<name>.mjs (+ <name>.chunks/)
 */
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, join, relative, resolve } from 'node:path';
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
  /** The entry file (what the handler names). */
  readonly path: string;
  /** What a cold start loads: the entry plus the chunks it imports statically, transitively. */
  readonly bytes: number;
  /** Every file esbuild wrote for the function: the entry and all its chunks, lazily imported ones too. */
  readonly totalBytes: number;
  /** Those files, absolute paths, the entry first. */
  readonly files: readonly string[];
}

/**
 * The esbuild options serverless-esbuild derives from `custom.esbuild`, for one entry point
 * (with a metafile). `serviceDir` is where `custom.esbuild.plugins` is resolved from.
 */
export function esbuildOptions(esbuild: EsbuildSettings, entry: string, outfile: string, serviceDir: string = ROOT): BuildOptions & { metafile: true } {
  const ext = extname(outfile);
  // serverless-esbuild builds into an `outdir`; with splitting so must this (chunks land beside the entry).
  const output: BuildOptions = esbuild.splitting
    ? {
        outdir: dirname(outfile),
        entryNames: basename(outfile, ext),
        outExtension: { '.js': ext },
        splitting: true,
        ...(esbuild.chunkNames ? { chunkNames: esbuild.chunkNames } : {}),
      }
    : { outfile };
  return {
    entryPoints: [entry],
    ...output,
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

type Outputs = Record<string, { bytes: number; imports: readonly { path: string; kind: string; external?: boolean }[] }>;

/**
 * The files reachable from `entry` through `importsOf` (what one file imports, as file names),
 * each once, the entry first: the modules a load of `entry` reads. One walk for both views of a
 * bundle, an esbuild metafile here and a packaged zip in scripts/package.ts.
 */
export function reachable(entry: string, importsOf: (file: string) => readonly string[]): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const next of importsOf(file)) visit(next);
  };
  visit(entry);
  return [...seen];
}

export async function bundleFunctions(outDir: string = join(ROOT, '.build', 'functions')): Promise<BundleResult[]> {
  const { functions, esbuild } = readServerlessConfig();
  // serverless.yml picks the extension per stage (a `${…}` variable); the shipped one is .mjs.
  const ext = esbuild.outputFileExtension?.startsWith('.') ? esbuild.outputFileExtension : '.mjs';
  const results: BundleResult[] = [];
  for (const [name, entry] of Object.entries(functions)) {
    const outfile = join(outDir, `${name}${ext}`);
    const outputs: Outputs = (await build(esbuildOptions(esbuild, join(ROOT, entry), outfile))).metafile.outputs;
    // Metafile paths are relative to esbuild's working directory, the process's.
    const key = Object.keys(outputs).find((file) => resolve(file) === outfile);
    if (!key) throw new Error(`esbuild wrote no ${outfile} (outputs: ${Object.keys(outputs).join(', ')})`);
    const size = (files: string[]) => files.reduce((sum, f) => sum + (outputs[f]?.bytes ?? 0), 0);
    // All the files esbuild wrote, as the zip holds them: a few chunks nothing imports included
    // (dynamic imports in code esbuild shook out); a cold start loads the static part only.
    const all = [key, ...Object.keys(outputs).filter((f) => f !== key)];
    results.push({
      name,
      path: outfile,
      bytes: size(reachable(key, (f) => (outputs[f]?.imports ?? []).filter((i) => !i.external && i.kind === 'import-statement').map((i) => i.path))),
      totalBytes: size(all),
      files: all.map((f) => resolve(f)),
    });
  }
  return results;
}

/**
 * Copies a function's files (entry and chunks, keeping their relative layout) into `dir`, the
 * entry renamed `entryName` when given; returns the copied entry's path. A copy has its own
 * module instances: its chunks are copies too, so no state is shared with another copy.
 */
export function copyBundle(bundle: BundleResult, dir: string, entryName: string = basename(bundle.path)): string {
  const from = dirname(bundle.path);
  for (const file of bundle.files) {
    const to = file === bundle.path ? join(dir, entryName) : join(dir, relative(from, file));
    mkdirSync(dirname(to), { recursive: true });
    cpSync(file, to);
  }
  return join(dir, entryName);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const results = await bundleFunctions(process.argv[2] ? resolve(process.argv[2]) : undefined);
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  for (const r of results)
    console.log(
      `${r.name.padEnd(12)} ${relative(process.cwd(), r.path)}  cold start loads ${kib(r.bytes)} (entry + static chunks), ${kib(r.totalBytes)} in ${r.files.length} files`,
    );
}
