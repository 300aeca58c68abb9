/**
 * A readable difference between what an object is and what a write would make it, as
 * `kubectl diff` shows it: fields the server sets on every write (resourceVersion,
 * managedFields, generation, timestamps, uid) are left out, so only what the write changes
 * shows. Pure.
 *
 * A line per changed leaf, addressed by its path (`spec.template.spec.containers[0].image`):
 * `+` added, `-` removed, `~` changed (old → new). Lists are compared by index; a whole
 * object added or removed shows as one line. Lines come sorted by path, so a diff reads the
 * same on every run.
 */

export interface DiffLine {
  readonly op: '+' | '-' | '~';
  readonly path: string;
  readonly before?: unknown;
  readonly after?: unknown;
}

/** metadata fields the server writes on every change: never part of a preview's diff. */
const SERVER_METADATA = ['resourceVersion', 'managedFields', 'generation', 'creationTimestamp', 'uid', 'selfLink'];

/** The object without the fields the server sets (and without `status` unless `keepStatus`). */
export function withoutServerFields(object: unknown, keepStatus: boolean): unknown {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return object;
  const { metadata, status, ...rest } = object as Record<string, unknown>;
  const meta =
    typeof metadata === 'object' && metadata !== null
      ? Object.fromEntries(Object.entries(metadata as Record<string, unknown>).filter(([k]) => !SERVER_METADATA.includes(k)))
      : metadata;
  return { ...rest, ...(meta !== undefined ? { metadata: meta } : {}), ...(keepStatus && status !== undefined ? { status } : {}) };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const plain = /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key);
  return plain ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`;
}

function walk(before: unknown, after: unknown, path: string, out: DiffLine[]): void {
  if (before === undefined && after === undefined) return;
  if (before === undefined) return void out.push({ op: '+', path, after });
  if (after === undefined) return void out.push({ op: '-', path, before });
  if (isRecord(before) && isRecord(after)) {
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) walk(before[key], after[key], join(path, key), out);
    return;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    for (let i = 0; i < Math.max(before.length, after.length); i++) walk(before[i], after[i], join(path, i), out);
    return;
  }
  if (JSON.stringify(before) !== JSON.stringify(after)) out.push({ op: '~', path, before, after });
}

/** The lines that turn `before` into `after` (both already without server fields); empty when equal. */
export function objectDiff(before: unknown, after: unknown): DiffLine[] {
  const out: DiffLine[] = [];
  walk(before, after, '', out);
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** One diff line as text: `~ spec.replicas: 1 → 3`. */
export function diffLineText(line: DiffLine): string {
  const show = (v: unknown) => JSON.stringify(v);
  if (line.op === '~') return `~ ${line.path}: ${show(line.before)} → ${show(line.after)}`;
  return `${line.op} ${line.path}: ${show(line.op === '+' ? line.after : line.before)}`;
}
