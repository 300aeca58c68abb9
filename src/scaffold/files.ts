/**
 * Writing a scaffold: a plan of file changes, checked as a whole before anything is written.
 *
 * - `create`: a new file; if it exists, the plan is refused (listing every such file) unless
 *   `force` — so a half-written project never results from a refusal.
 * - `insert`: text added before a marker line (`+operless:scaffold:<name>`) of an existing
 *   file, indented like the marker, so hand edits elsewhere in the file are kept (the
 *   kubebuilder approach). A missing marker is an error naming the file and the marker.
 * - `generated`: a file derived from the project file, always rewritten.
 * - `replace`: one exact text of an existing file replaced (a line the scaffolder wrote); when
 *   neither it nor its replacement is there, an error naming the file and what to do by hand.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ScaffoldError } from './names.ts';

export type FileChange =
  | { readonly type: 'create'; readonly path: string; readonly content: string }
  | { readonly type: 'insert'; readonly path: string; readonly marker: string; readonly content: string }
  | { readonly type: 'generated'; readonly path: string; readonly content: string }
  /** `content` replaces `find`. */
  | { readonly type: 'replace'; readonly path: string; readonly find: string; readonly content: string; readonly hint: string };

export interface AppliedChange {
  readonly path: string;
  readonly action: 'created' | 'overwritten' | 'updated' | 'unchanged';
}

/** The marker comment text for a named insertion point. */
export function marker(name: string): string {
  return `+operless:scaffold:${name}`;
}

/** Inserts `content` before the line holding `marker`, indented like that line. Pure. */
export function insertAtMarker(text: string, markerName: string, content: string, where = 'file'): string {
  const lines = text.split('\n');
  const index = lines.findIndex((line) => line.includes(marker(markerName)));
  if (index < 0) {
    throw new ScaffoldError(`${where} has no "${marker(markerName)}" marker line; put it back where new entries belong (see docs/scaffolding.md)`);
  }
  const indent = /^\s*/.exec(lines[index] ?? '')?.[0] ?? '';
  const added = content
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => (line.length > 0 ? indent + line : line));
  lines.splice(index, 0, ...added);
  return lines.join('\n');
}

/**
 * The content of every file a plan writes, from the files as `read` returns them (undefined:
 * absent). Pure: a missing marker or replaced text throws before anything is written.
 */
export function planContents(changes: readonly FileChange[], read: (path: string) => string | undefined): Map<string, string> {
  const contents = new Map<string, string>();
  const current = (path: string) => contents.get(path) ?? read(path);
  for (const change of changes) {
    if (change.type === 'insert') {
      const text = current(change.path);
      if (text === undefined) throw new ScaffoldError(`${change.path} is missing: is this an Operless project made by \`operless init\`?`);
      contents.set(change.path, insertAtMarker(text, change.marker, change.content, change.path));
    } else if (change.type === 'replace') {
      const text = current(change.path) ?? '';
      if (text.includes(change.find)) contents.set(change.path, text.replace(change.find, change.content));
      else if (!text.includes(change.content))
        throw new ScaffoldError(`${change.path}: cannot find ${JSON.stringify(change.find)} (edited by hand?); ${change.hint}`);
    } else {
      contents.set(change.path, change.content);
    }
  }
  return contents;
}

/** Applies a plan under `root`; refuses (writing nothing) when `create` targets exist and not `force`. */
export function applyChanges(root: string, changes: readonly FileChange[], options: { force?: boolean } = {}): AppliedChange[] {
  const existing = changes.filter((c) => c.type === 'create' && existsSync(join(root, c.path))).map((c) => c.path);
  if (existing.length > 0 && !options.force) {
    throw new ScaffoldError(`refusing to overwrite ${existing.join(', ')}; pass --force to overwrite`);
  }
  // Compute every new content first, so a missing marker writes nothing.
  const contents = planContents(changes, (path) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined));
  const applied: AppliedChange[] = [];
  for (const [path, content] of contents) {
    const full = join(root, path);
    const before = existsSync(full) ? readFileSync(full, 'utf8') : undefined;
    const created = changes.some((c) => c.path === path && c.type === 'create');
    const action: AppliedChange['action'] = before === undefined ? 'created' : before === content ? 'unchanged' : created ? 'overwritten' : 'updated';
    if (action !== 'unchanged') {
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, content);
    }
    applied.push({ path, action });
  }
  return applied;
}
