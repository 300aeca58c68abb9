/**
 * Problems of a forwarder configuration, each naming its field by path (`primaries[1].kind`)
 * and saying what is expected: the list a `ConfigError` carries.
 *
 * `schemaProblem` is the one place the schema validator's failures (ajv's error objects) are
 * put into the forwarder's words: what a value must be comes from the schema itself
 * (`x-expected`, `x-messages`, `minimum`/`maximum`, the known fields of a mapping), so a new
 * field needs no new message. At most one problem is kept per field: the first, as the
 * validator reports them in document order.
 */
import type { JsonSchema } from './schema.ts';

/** A failure as ajv reports it (the fields this module reads). */
export interface SchemaError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, unknown>>;
}

/** The problems found so far, one per field path, in the order found. */
export class Problems {
  readonly #byPath = new Map<string, string>();

  add(path: string, message: string): void {
    if (!this.#byPath.has(path)) this.#byPath.set(path, message);
  }

  /** Whether the field at `path`, or anything inside it, has a problem. */
  has(path: string): boolean {
    for (const key of this.#byPath.keys()) {
      if (key === path || key.startsWith(`${path}.`) || key.startsWith(`${path}[`)) return true;
    }
    return false;
  }

  get size(): number {
    return this.#byPath.size;
  }

  /** The problems as `path: message` lines. */
  lines(): string[] {
    return [...this.#byPath].map(([path, message]) => `${path}: ${message}`);
  }
}

/** How a value reads in a problem: `string "x"`, `number 3`, `a list`, `a mapping`, `null`. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** The dotted path of a field (`primaries[0].kind`) from its JSON-pointer segments. */
export function fieldPath(segments: readonly string[]): string {
  let path = '';
  for (const segment of segments) path = /^\d+$/.test(segment) ? `${path}[${segment}]` : join(path, segment);
  return path || '(root)';
}

export function join(path: string, key: string): string {
  return path && path !== '(root)' ? `${path}.${key}` : key;
}

function pointerSegments(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function resolve(root: JsonSchema, node: JsonSchema | boolean | undefined): JsonSchema | undefined {
  if (typeof node !== 'object') return undefined;
  const name = node.$ref?.match(/^#\/definitions\/(.+)$/)?.[1];
  return name ? { ...root.definitions?.[name], ...node } : node;
}

/** The schema of the value at `segments` (following `properties`, `items` and `$ref`), if the schema has one. */
function schemaAt(root: JsonSchema, segments: readonly string[]): JsonSchema | undefined {
  let node = resolve(root, root);
  for (const segment of segments) {
    if (!node) return undefined;
    node = resolve(root, node.items ?? node.properties?.[segment]);
  }
  return node;
}

function valueAt(document: unknown, segments: readonly string[]): unknown {
  let value = document;
  for (const segment of segments) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[segment] : undefined;
  return value;
}

/** What a value of this schema's type is called: "a string", "a number", a mapping's or list's `x-expected`. */
function typeWords(node: JsonSchema | undefined, value: unknown): string {
  switch (node?.type) {
    case 'string':
      return 'a string';
    case 'boolean':
      return 'true or false';
    case 'integer':
      return typeof value === 'number' && Number.isFinite(value) ? 'a whole number' : 'a number';
    case 'number':
      return 'a number';
    case 'array':
      return node['x-expected'] ?? 'a list';
    default:
      return node?.['x-expected'] ?? 'a mapping';
  }
}

/** The fields a mapping's schema allows (not those it names only to refuse). */
function knownFields(node: JsonSchema | undefined): string[] {
  return Object.entries(node?.properties ?? {})
    .filter(([, field]) => typeof field === 'object' && field.not === undefined)
    .map(([name]) => name);
}

/** One validator failure as a problem `[path, message]`, in the forwarder's words. */
export function schemaProblem(error: SchemaError, document: unknown, root: JsonSchema): [string, string] {
  const segments = pointerSegments(error.instancePath);
  const node = schemaAt(root, segments);
  const value = valueAt(document, segments);
  const path = fieldPath(segments);
  const expected = node?.['x-expected'];
  switch (error.keyword) {
    case 'required': {
      const name = String(error.params.missingProperty);
      const field = resolve(root, node?.properties?.[name]);
      return [join(path, name), field?.['x-messages']?.required ?? `is required${field?.['x-expected'] ? `: ${field['x-expected']}` : ''}`];
    }
    case 'additionalProperties': {
      const name = String(error.params.additionalProperty);
      return [join(path, name), `unknown field (expected one of: ${knownFields(node).join(', ')})`];
    }
    case 'type': {
      const words = typeWords(node, value);
      return [path, `must be ${words}, got ${words === 'a whole number' ? value : describe(value)}`];
    }
    case 'minimum':
    case 'maximum':
      return [path, `must be between ${node?.minimum} and ${node?.maximum}, got ${value}`];
    case 'pattern':
      return [path, `must be ${expected ?? `a string matching ${node?.pattern}`}, got ${JSON.stringify(value)}`];
    case 'maxLength':
      return [
        path,
        `must be at most ${error.params.limit} characters long${expected ? ` (${expected})` : ''}, got ${typeof value === 'string' ? [...value].length : '?'}`,
      ];
    case 'enum':
      return [path, `must be ${expected ?? `one of ${node?.enum?.join(', ')}`}, got ${describe(value)}`];
    case 'minItems':
    case 'not':
      return [path, node?.['x-messages']?.[error.keyword] ?? `must be ${expected ?? 'something else'}`];
    default:
      return [path, `is invalid (${error.keyword})`];
  }
}
