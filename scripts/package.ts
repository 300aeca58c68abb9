/**
 * `serverless package`, offline: runs the pinned osls CLI (with serverless-esbuild) on
 * serverless.yml with no AWS credentials, no network and a throw-away HOME, and reports the
 * CloudFormation template and each function's zip and bundle size.
 *
 *   node scripts/package.ts [--stage dev] [--param key=value]... [--out .serverless]
 *
 * Guarantees: a reconcile function whose budget reserve is at or above its timeout is refused
 * before anything is built, naming both (`refuseUnworkableBudgets`); the command never sees
 * the caller's AWS credentials or config (the environment is rebuilt from scratch), so a
 * successful package here proves it needs none; failures
 * print osls's own output. Within one `npm test` run a package of the same inputs is made
 * once and copied for each caller (scripts/build-cache.ts). `extractBundle` takes the
 * function's files out of its zip — the entry `.mjs` and its chunks, the exact files Lambda
 * would run — for the end-to-end tests and benchmarks.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';
import { packagedReserveProblems } from '../src/core/invocation/budget.ts';
import { parseServerlessYaml } from '../src/project/serverless-yml.ts';
import { buildCacheDir, cachedBuild, hashInputs } from './build-cache.ts';
import { reachable } from './bundle.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface PackageOptions {
  readonly stage?: string;
  readonly region?: string;
  /** `--param key=value` for each entry (see `params` in serverless.yml). */
  readonly params?: Readonly<Record<string, string>>;
  /** Output directory (default `.serverless/` in the repository). */
  readonly outDir?: string;
}

export interface PackagedFunction {
  /** Function key in serverless.yml, e.g. `memcached`. */
  readonly name: string;
  readonly zipPath: string;
  readonly zipBytes: number;
  /** Path of the bundle's entry inside the zip, e.g. `functions/memcached.mjs`. */
  readonly bundleEntry: string;
  /** What a cold start loads: the entry plus the chunks it imports statically, transitively. */
  readonly bundleBytes: number;
  /** The entry and every chunk in its folder (`functions/memcached.chunks/…`, lazily imported ones too), paths inside the zip, the entry first. */
  readonly bundleFiles: readonly string[];
  /** Their size together. */
  readonly bundleTotalBytes: number;
}

export interface CloudFormationResource {
  Type: string;
  Condition?: string;
  DependsOn?: string | string[];
  Properties?: Record<string, unknown>;
}

export interface CloudFormationTemplate {
  Resources: Record<string, CloudFormationResource>;
  Conditions?: Record<string, unknown>;
  Outputs?: Record<string, unknown>;
}

export interface PackageResult {
  readonly dir: string;
  readonly template: CloudFormationTemplate;
  readonly functions: PackagedFunction[];
  /** How long `osls package` took (for a copy from the build cache: when it was made). */
  readonly durationMs: number;
  /** Copied from the build cache, made earlier in this run with the same inputs. */
  readonly fromCache: boolean;
}

export class PackageError extends Error {
  override readonly name = 'PackageError';
}

/**
 * The whole environment `osls package` runs with: this Node first on PATH, `home` as HOME, no
 * AWS variables, telemetry and notifications off. Also used for generated projects' packaging.
 */
export function offlinePackageEnv(home: string): Record<string, string> {
  return {
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    HOME: home,
    // Never phone home; never look for credentials.
    SLS_TELEMETRY_DISABLED: '1',
    SLS_NOTIFICATIONS_MODE: 'off',
    SLS_DEPRECATION_DISABLE: '*',
    AWS_EC2_METADATA_DISABLED: 'true',
    CI: '1',
  };
}

/** What decides a package: serverless.yml, the sources it bundles, the pinned toolchain. */
const PACKAGE_INPUTS = ['serverless.yml', 'package.json', 'package-lock.json', 'tsconfig.json', 'functions', 'src', 'events'];
/** The first build's duration, kept beside a cached package (not copied out). */
const DURATION_FILE = '.operless-package-duration';

/**
 * Runs `osls package` offline and reads what it produced. With a build cache
 * (`OPERLESS_BUILD_CACHE`, set by `npm test`: scripts/build-cache.ts) a package of the same
 * inputs and options made earlier in the run is copied into `outDir` instead of made again.
 */
export async function packageService(options: PackageOptions = {}): Promise<PackageResult> {
  refuseUnworkableBudgets(readFileSync(join(ROOT, 'serverless.yml'), 'utf8'));
  const dir = resolve(options.outDir ?? join(ROOT, '.serverless'));
  const cacheDir = buildCacheDir();
  if (!cacheDir) return readPackage(dir, await runPackage(options, dir), false);
  const key = hashInputs(ROOT, PACKAGE_INPUTS, { stage: options.stage, region: options.region, params: options.params, node: process.version });
  let built = false;
  const entry = await cachedBuild(cacheDir, 'package', key, async (out) => {
    const durationMs = await runPackage(options, out);
    writeFileSync(join(out, DURATION_FILE), String(durationMs));
    built = true;
  });
  rmSync(dir, { recursive: true, force: true });
  cpSync(entry, dir, { recursive: true, filter: (source) => basename(source) !== DURATION_FILE });
  return readPackage(dir, Number(readFileSync(join(entry, DURATION_FILE), 'utf8')), !built);
}

/** `osls package` into `dir` (replaced); returns how long it took. */
async function runPackage(options: PackageOptions, dir: string): Promise<number> {
  const home = mkdtempSync(join(tmpdir(), 'operless-sls-home-'));
  const cli = createRequire(import.meta.url).resolve('osls/bin/serverless.js');
  const args = [cli, 'package', '--stage', options.stage ?? 'dev', '--region', options.region ?? 'us-east-1', '--package', dir];
  for (const [key, value] of Object.entries(options.params ?? {})) args.push('--param', `${key}=${value}`);
  const env = offlinePackageEnv(home);
  const started = Date.now();
  rmSync(dir, { recursive: true, force: true });
  try {
    const { code, output } = await run(process.execPath, args, { cwd: ROOT, env });
    if (code !== 0) {
      throw new PackageError(`serverless package failed (exit ${code}). Its output:\n${output.trim()}`);
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  return Date.now() - started;
}

function readPackage(dir: string, durationMs: number, fromCache: boolean): PackageResult {
  const template = JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as CloudFormationTemplate;
  const functions = readdirSync(dir)
    .filter((f) => f.endsWith('.zip'))
    .sort()
    .map((file) => describeZip(file.slice(0, -'.zip'.length), join(dir, file)));
  return { dir, template, functions, durationMs, fromCache };
}

/**
 * Refuses to package a reconcile function whose `OPERLESS_BUDGET_RESERVE_MS` is at or above
 * its `timeout`: every invocation would refuse it (core/invocation/budget.ts), so it is refused here first.
 */
export function refuseUnworkableBudgets(serverlessYaml: string): void {
  const problems = packagedReserveProblems(parseServerlessYaml(serverlessYaml).runtimes);
  if (problems.length > 0) throw new PackageError(`serverless.yml cannot work: ${problems.join('; ')}`);
}

function describeZip(name: string, zipPath: string): PackagedFunction {
  const entries = zipEntries(readFileSync(zipPath));
  // The entry is the one module outside a chunk folder (serverless.yml: chunkNames '[entry].chunks/…').
  const modules = entries.filter((e) => e.name.endsWith('.mjs'));
  const entryCandidates = modules.filter((e) => !e.name.includes('.chunks/'));
  const bundle = entryCandidates[0];
  if (!bundle || entryCandidates.length > 1) {
    throw new PackageError(`${zipPath} holds ${entryCandidates.length} entry bundles, expected one (entries: ${entries.map((e) => e.name).join(', ')})`);
  }
  const byName = new Map(modules.map((e) => [e.name, e]));
  // Each module read and scanned once; a specifier resolves against the importing module's folder.
  const scanned = new Map<string, { static: string[]; all: string[] }>();
  const importsOf =
    (only: 'static' | 'all') =>
    (from: string): string[] => {
      const module = byName.get(from);
      if (!module) throw new PackageError(`${zipPath}: ${from} is imported but not in the zip`);
      let found = scanned.get(from);
      if (!found) {
        const code = module.read().toString('utf8');
        const resolved = (specs: string[]) => specs.map((spec) => posix.join(posix.dirname(from), spec));
        found = { static: resolved(moduleImports(code, 'static')), all: resolved(moduleImports(code, 'all')) };
        scanned.set(from, found);
      }
      return found[only];
    };
  const size = (files: string[]) => files.reduce((sum, f) => sum + (byName.get(f)?.size ?? 0), 0);
  reachable(bundle.name, importsOf('all')); // every chunk the entry can import is in the zip (or this throws)
  // Every other module must be in the entry's own chunk folder: no other function's chunks. esbuild
  // also emits a few chunks nothing imports (dynamic imports in code it shook out, e.g.
  // OpenTelemetry's getMachineId-<platform>): shipped, never loaded, counted in the total.
  const chunkDir = `${bundle.name.slice(0, -'.mjs'.length)}.chunks/`;
  const foreign = modules.filter((e) => e !== bundle && !e.name.startsWith(chunkDir)).map((e) => e.name);
  if (foreign.length > 0) throw new PackageError(`${zipPath} holds modules outside ${chunkDir} (another function's bundle or chunks?): ${foreign.join(', ')}`);
  const files = [bundle.name, ...modules.filter((e) => e !== bundle).map((e) => e.name)];
  return {
    name,
    zipPath,
    zipBytes: statSync(zipPath).size,
    bundleEntry: bundle.name,
    bundleBytes: size(reachable(bundle.name, importsOf('static'))),
    bundleFiles: files,
    bundleTotalBytes: size(files),
  };
}

/**
 * The relative module specifiers an esbuild ESM output imports: static `import … from "./x"`,
 * `import "./x"` and `export … from "./x"`, and with `all` dynamic `import("./x")` too. Only
 * relative specifiers (chunks); packages and built-ins are not files of the bundle.
 */
export function moduleImports(code: string, only: 'static' | 'all'): string[] {
  const found = new Set<string>();
  for (const m of code.matchAll(/(?:^|[;}\s])(?:import|export)\s*(?:[^"'();]*?\bfrom\s*)?["'](\.\.?\/[^"']+)["']/g)) found.add(m[1] as string);
  if (only === 'all') for (const m of code.matchAll(/\bimport\(\s*["'](\.\.?\/[^"']+)["']\s*\)/g)) found.add(m[1] as string);
  return [...found];
}

interface ZipEntry {
  readonly name: string;
  readonly size: number;
  read(): Buffer;
}

/** Lists a zip's entries from its central directory (stored and deflated entries). */
export function zipEntries(zip: Buffer): ZipEntry[] {
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 65_535); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new PackageError('not a zip file (no end of central directory)');
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new PackageError('corrupt zip central directory');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    entries.push({
      name,
      size,
      read() {
        const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
        const data = zip.subarray(start, start + compressed);
        if (method === 0) return Buffer.from(data);
        if (method === 8) return inflateRawSync(data);
        throw new PackageError(`zip entry ${name} uses unsupported compression method ${method}`);
      },
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/**
 * Writes a function's bundle — its entry and chunks, laid out as in the zip — out of its zip
 * into `outDir` (default `.serverless/bundles/<name>`, inside the repository, so that a module
 * the bundle leaves to the runtime — `@aws-sdk/client-ssm` — resolves from its node_modules as
 * the managed runtime provides it). Returns the entry `.mjs` path.
 */
export function extractBundle(fn: PackagedFunction, outDir: string = join(ROOT, '.serverless', 'bundles', fn.name)): string {
  const entries = new Map(zipEntries(readFileSync(fn.zipPath)).map((e) => [e.name, e]));
  for (const file of fn.bundleFiles) {
    const entry = entries.get(file);
    if (!entry) throw new PackageError(`${fn.zipPath} has no entry ${file}`);
    const path = join(outDir, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, entry.read());
  }
  return join(outDir, fn.bundleEntry);
}

function run(command: string, args: string[], options: { cwd: string; env: Record<string, string> }): Promise<{ code: number; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code: code ?? 1, output }));
  });
}

function parseArgs(argv: string[]): PackageOptions {
  const params: Record<string, string> = {};
  let stage: string | undefined;
  let outDir: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new PackageError(`${arg} needs a value`);
      return v;
    };
    if (arg === '--stage') stage = value();
    else if (arg === '--out') outDir = value();
    else if (arg === '--param') {
      const kv = value();
      const eq = kv.indexOf('=');
      if (eq < 1) throw new PackageError(`--param expects key=value, got ${JSON.stringify(kv)}`);
      params[kv.slice(0, eq)] = kv.slice(eq + 1);
    } else throw new PackageError(`unknown argument ${arg} (usage: node scripts/package.ts [--stage s] [--param key=value]... [--out dir])`);
  }
  return { ...(stage ? { stage } : {}), ...(outDir ? { outDir } : {}), params };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const result = await packageService(parseArgs(process.argv.slice(2)));
    const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
    console.log(`packaged into ${relative(process.cwd(), result.dir) || '.'} in ${(result.durationMs / 1000).toFixed(1)} s`);
    for (const fn of result.functions) {
      console.log(
        `  ${fn.name.padEnd(12)} zip ${kib(fn.zipBytes).padStart(9)}   bundle ${fn.bundleEntry}: cold start loads ${kib(fn.bundleBytes)}, ${kib(fn.bundleTotalBytes)} in ${fn.bundleFiles.length} files`,
      );
    }
  } catch (err) {
    console.error(err instanceof PackageError ? err.message : err);
    process.exitCode = 1;
  }
}
