/**
 * A cache of deterministic build outputs (a `serverless package`, the staged npm package),
 * keyed by a hash of everything that decides them, so that the test files of one `npm test`
 * run that need the same output build it once.
 *
 * Where: the folder named by `OPERLESS_BUILD_CACHE`. `npm test` (scripts/test.ts) creates a
 * fresh one for each run and removes it at the end; without the variable nothing is cached and
 * every call builds, exactly as before.
 *
 * Guarantees: an entry's key is the hash of the contents of its input files (walked, sorted,
 * with their paths) and of the options, so a source changed during a run is a new key, never a
 * stale hit. An entry is built into a temporary folder beside it and renamed into place only
 * when the build succeeded: a failed or interrupted build leaves nothing, and two processes
 * building one entry at once both succeed (one rename wins, the other copy is discarded).
 * Callers copy an entry before they use it, so no test ever sees another's writes.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The cache folder of this run, or undefined: nothing is cached. */
export function buildCacheDir(): string | undefined {
  const dir = process.env.OPERLESS_BUILD_CACHE;
  return dir ? dir : undefined;
}

/**
 * A hash of `inputs` (paths relative to `root`; folders walked recursively, skipping
 * node_modules and dot-entries) — each file's path and content — and of `options` (JSON).
 */
export function hashInputs(root: string, inputs: readonly string[], options: unknown): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(options ?? null));
  for (const file of inputs.flatMap((input) => filesUnder(root, input)).sort()) {
    hash.update(`\0${file}\0`);
    hash.update(readFileSync(join(root, file)));
  }
  return hash.digest('hex').slice(0, 32);
}

function filesUnder(root: string, path: string): string[] {
  const full = join(root, path);
  const stats = statSync(full, { throwIfNoEntry: false });
  if (!stats) return [];
  if (!stats.isDirectory()) return [relative(root, full)];
  return readdirSync(full)
    .filter((name) => name !== 'node_modules' && !name.startsWith('.'))
    .flatMap((name) => filesUnder(root, join(path, name)));
}

/**
 * The entry `<name>-<key>` of `cacheDir`, built by `build(dir)` into a fresh folder when it is
 * not there yet. Returns the entry's path; throws what `build` throws (nothing is kept then).
 */
export async function cachedBuild(cacheDir: string, name: string, key: string, build: (dir: string) => Promise<unknown>): Promise<string> {
  const entry = join(cacheDir, `${name}-${key}`);
  if (existsSync(entry)) return entry;
  const building = startBuilding(cacheDir, name, key);
  try {
    await build(join(building, 'out'));
    commit(join(building, 'out'), entry);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return entry;
}

/** `cachedBuild` for a synchronous `build`. */
export function cachedBuildSync(cacheDir: string, name: string, key: string, build: (dir: string) => unknown): string {
  const entry = join(cacheDir, `${name}-${key}`);
  if (existsSync(entry)) return entry;
  const building = startBuilding(cacheDir, name, key);
  try {
    build(join(building, 'out'));
    commit(join(building, 'out'), entry);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return entry;
}

function startBuilding(cacheDir: string, name: string, key: string): string {
  mkdirSync(cacheDir, { recursive: true });
  return mkdtempSync(join(cacheDir, `.${name}-${key}-`));
}

/** Renames a finished build into place; another process's copy already there wins. */
function commit(built: string, entry: string): void {
  try {
    renameSync(built, entry);
  } catch (err) {
    if (!existsSync(entry)) throw err;
  }
}
