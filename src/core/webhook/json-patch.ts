/**
 * The JSON Patch (RFC 6902) that turns one JSON value into another: what a mutating
 * admission webhook answers, computed from the object a defaulting handler returns.
 *
 * Guarantees: applying `diffJson(a, b)` to `a` (RFC 6902 semantics, pointers escaped per
 * RFC 6901: `~` → `~0`, `/` → `~1`) gives a value deep-equal to `b`; equal inputs give `[]`.
 * Objects are compared member by member (`add`, `remove`, `replace`); an array that changed
 * is replaced whole (list order and element identity are the schema's business, and a whole
 * replacement is always correct). Members whose value is `undefined` count as absent, as in
 * JSON. Pure; never throws on JSON input.
 */

export type JsonPatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

/** RFC 6901 escaping of one reference token. */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The operations that turn `from` into `to` (both JSON values). */
export function diffJson(from: unknown, to: unknown): JsonPatchOperation[] {
  const out: JsonPatchOperation[] = [];
  diffAt('', from, to, out);
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function diffAt(path: string, from: unknown, to: unknown, out: JsonPatchOperation[]): void {
  if (jsonEqual(from, to)) return;
  if (isPlainObject(from) && isPlainObject(to)) {
    for (const key of Object.keys(from)) {
      if (own(from, key) !== undefined && own(to, key) === undefined) out.push({ op: 'remove', path: `${path}/${escapePointerToken(key)}` });
    }
    for (const key of Object.keys(to)) {
      const value = own(to, key);
      if (value === undefined) continue;
      const child = `${path}/${escapePointerToken(key)}`;
      const before = own(from, key);
      if (before === undefined) out.push({ op: 'add', path: child, value: clone(value) });
      else diffAt(child, before, value, out);
    }
    return;
  }
  out.push({ op: 'replace', path, value: clone(to) });
}

/** A member of `object` itself (never one inherited, such as `__proto__`). */
function own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** Deep equality of JSON values (`undefined` members count as absent). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keysA = Object.keys(a).filter((k) => a[k] !== undefined);
    const keysB = Object.keys(b).filter((k) => b[k] !== undefined);
    return keysA.length === keysB.length && keysA.every((k) => own(b, k) !== undefined && jsonEqual(a[k], own(b, k)));
  }
  return false;
}

function clone(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}
