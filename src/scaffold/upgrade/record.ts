/**
 * The pristine record: what the scaffold generated for the project, kept in the project under
 * `.scaffold/files/` (committed with it), so `operless upgrade` has the base of its three-way
 * merge, and the order the project's kinds and webhooks were added in (`steps.json`). Every scaffold command (init, create api, create webhook, upgrade) rewrites it as a
 * whole from the project's operless.json (render.ts); the files regenerated from operless.json
 * as a whole are not recorded.
 *
 * Guarantee: the record is replaced, never merged — after a command it holds exactly what
 * that scaffold generates for the project, nothing stale.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { ScaffoldError } from '../names.ts';
import type { RenderedProject, Step } from './render.ts';

export const RECORD_DIR = '.scaffold';
const FILES = 'files';
/** The order kinds and webhooks were added in (render.ts `Step`). */
const STEPS = 'steps.json';

const RECORD_README = `# What the Operless scaffold generated

\`files/\` holds each file as \`operless init\`, \`create api\`, \`create webhook\` or \`upgrade\` last
generated it, before any edit of yours. \`operless upgrade\` merges a newer scaffold into your
files with it as the base, keeping your edits. Commit it; do not edit it.
`;

/** The recorded files by path, or an empty map when the project has no record (made before it existed). */
export function readRecord(root: string): Map<string, string> {
  const base = join(root, RECORD_DIR, FILES);
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) files.set(relative(base, full).split('\\').join('/'), readFileSync(full, 'utf8'));
    }
  };
  if (existsSync(base)) walk(base);
  return files;
}

/** The recorded steps; none when the project has no record. */
export function readSteps(root: string): Step[] {
  const path = join(root, RECORD_DIR, STEPS);
  if (!existsSync(path)) return [];
  let steps: unknown;
  try {
    steps = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ScaffoldError(`${RECORD_DIR}/${STEPS} is not valid JSON (${(err as Error).message}); restore it from version control`);
  }
  const valid = (s: unknown) =>
    typeof s === 'object' && s !== null && (typeof (s as { api?: unknown }).api === 'string' || typeof (s as { webhook?: unknown }).webhook === 'string');
  if (!Array.isArray(steps) || !steps.every(valid))
    throw new ScaffoldError(`${RECORD_DIR}/${STEPS} must be a list of {"api": <Kind>} and {"webhook": <Kind>}; restore it from version control`);
  return steps as Step[];
}

/** Replaces the record with `rendered` (its derived files left out) and `steps`. */
export function writeRecord(root: string, rendered: RenderedProject, steps: readonly Step[]): void {
  const dir = join(root, RECORD_DIR);
  rmSync(join(dir, FILES), { recursive: true, force: true });
  for (const [path, content] of rendered.files) {
    if (rendered.derived.has(path)) continue;
    const full = join(dir, FILES, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
  writeFileSync(join(dir, STEPS), `${JSON.stringify(steps, null, 2)}\n`);
  writeFileSync(join(dir, 'README.md'), RECORD_README);
}
