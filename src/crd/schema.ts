/**
 * A schema DSL for custom resources: one definition gives both the TypeScript type of the
 * resource (`Infer<typeof schema>`) and its OpenAPI v3 validation schema for the CRD — what
 * controller-gen markers give a Go operator, without a code generator.
 *
 * Guarantees:
 * - Every node produces a *structural* schema (each level has a `type`, or is int-or-string /
 *   preserve-unknown-fields), as the API server requires for CRDs.
 * - `Infer<S>` is the shape a reconcile reads from the API server: fields that are required or
 *   have a default are present (the API server applies defaults on read and write); all other
 *   fields are optional.
 * - Options are validated when the schema is built (a default outside its own bounds, a
 *   minimum above a maximum …), so a broken definition fails at build time, not in a cluster.
 */

/** `x-kubernetes-validations` rule (CEL), evaluated by the API server. */
export interface CelRule {
  readonly rule: string;
  /** Shown to the user when the rule fails; say what to do. */
  readonly message?: string;
  readonly messageExpression?: string;
  readonly reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  readonly fieldPath?: string;
}

/** The subset of OpenAPI v3 (`JSONSchemaProps`) the DSL emits. */
export interface OpenApiSchema {
  type?: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
  description?: string;
  format?: string;
  default?: unknown;
  enum?: readonly unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  properties?: Record<string, OpenApiSchema>;
  required?: string[];
  items?: OpenApiSchema;
  additionalProperties?: OpenApiSchema;
  anyOf?: OpenApiSchema[];
  'x-kubernetes-int-or-string'?: true;
  'x-kubernetes-preserve-unknown-fields'?: true;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: CelRule[];
}

/**
 * A schema node. `T` is the TypeScript type of the value; `Present` is `true` when the field
 * is always there once the API server has stored it (required, or defaulted).
 */
export interface Schema<T, Present extends boolean = boolean> {
  readonly openApi: OpenApiSchema;
  readonly isRequired: boolean;
  readonly hasDefault: boolean;
  /** Type-level only: never set at runtime. */
  readonly __type?: T;
  readonly __present?: Present;
}

/** The TypeScript type described by a schema node. */
export type Infer<S> = S extends Schema<infer T, boolean> ? T : never;

export type AnySchema = Schema<unknown, boolean>;
export type Properties = Record<string, AnySchema>;

export type PresentKeys<P extends Properties> = {
  [K in keyof P]: P[K] extends Schema<unknown, true> ? K : never;
}[keyof P];
export type OptionalKeys<P extends Properties> = Exclude<keyof P, PresentKeys<P>>;
export type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The object type of a set of properties: present fields required, the rest optional. */
export type InferProperties<P extends Properties> = Simplify<{ [K in PresentKeys<P>]: Infer<P[K]> } & { [K in OptionalKeys<P>]?: Infer<P[K]> }>;

/** Options every node accepts. */
export interface CommonOptions {
  readonly description?: string;
  readonly validations?: readonly CelRule[];
}

export type Defaulted<O, T> = O extends { default: T } ? true : false;

function node<T, P extends boolean>(openApi: OpenApiSchema, options: CommonOptions & { default?: unknown }): Schema<T, P> {
  const schema: OpenApiSchema = { ...openApi };
  if (options.description !== undefined) schema.description = options.description;
  if (options.default !== undefined) schema.default = options.default;
  if (options.validations && options.validations.length > 0) {
    for (const v of options.validations) {
      if (!v.rule.trim()) throw new SchemaError('a CEL validation has an empty rule');
    }
    schema['x-kubernetes-validations'] = options.validations.map((v) => ({ ...v }));
  }
  return { openApi: orderKeys(schema), isRequired: false, hasDefault: options.default !== undefined };
}

/** A schema definition mistake, reported when the schema is built. */
export class SchemaError extends Error {
  override readonly name = 'SchemaError';
}

export interface IntegerOptions extends CommonOptions {
  readonly minimum?: number;
  readonly maximum?: number;
  readonly default?: number;
  /** `int32` (default) or `int64`. */
  readonly format?: 'int32' | 'int64';
}

export function integer<const O extends IntegerOptions>(options: O = {} as O): Schema<number, Defaulted<O, number>> {
  const { minimum, maximum } = options;
  checkBounds('integer', minimum, maximum, options.default);
  if (options.default !== undefined && !Number.isInteger(options.default)) {
    throw new SchemaError(`integer default ${options.default} is not an integer`);
  }
  return node({ type: 'integer', format: options.format ?? 'int32', minimum, maximum }, options);
}

export interface NumberOptions extends CommonOptions {
  readonly minimum?: number;
  readonly maximum?: number;
  readonly default?: number;
}

export function number<const O extends NumberOptions>(options: O = {} as O): Schema<number, Defaulted<O, number>> {
  checkBounds('number', options.minimum, options.maximum, options.default);
  return node({ type: 'number', minimum: options.minimum, maximum: options.maximum }, options);
}

export interface StringOptions extends CommonOptions {
  readonly default?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  /** ECMA 262 regular expression (the API server's dialect: no lookaround). */
  readonly pattern?: string;
  readonly format?: string;
}

export function string<const O extends StringOptions>(options: O = {} as O): Schema<string, Defaulted<O, string>> {
  checkBounds('string length', options.minLength, options.maxLength, options.default?.length);
  if (options.pattern !== undefined) {
    let re: RegExp;
    try {
      re = new RegExp(options.pattern, 'u');
    } catch (err) {
      throw new SchemaError(`string pattern ${JSON.stringify(options.pattern)} is not a valid regular expression: ${(err as Error).message}`);
    }
    if (options.default !== undefined && !re.test(options.default)) {
      throw new SchemaError(`string default ${JSON.stringify(options.default)} does not match its own pattern ${options.pattern}`);
    }
  }
  return node({ type: 'string', format: options.format, minLength: options.minLength, maxLength: options.maxLength, pattern: options.pattern }, options);
}

export interface EnumOptions<V extends string> extends CommonOptions {
  readonly default?: V;
}

/** A string restricted to `values`; infers the union of the literals. */
export function oneOf<const V extends readonly [string, ...string[]], const O extends EnumOptions<V[number]> = {}>(
  values: V,
  options: O = {} as O,
): Schema<V[number], Defaulted<O, string>> {
  if (options.default !== undefined && !values.includes(options.default)) {
    throw new SchemaError(`enum default ${JSON.stringify(options.default)} is not one of ${values.join(', ')}`);
  }
  return node({ type: 'string', enum: [...values] }, options);
}

export interface BooleanOptions extends CommonOptions {
  readonly default?: boolean;
}

export function boolean<const O extends BooleanOptions>(options: O = {} as O): Schema<boolean, Defaulted<O, boolean>> {
  return node({ type: 'boolean' }, options);
}

export interface ObjectOptions extends CommonOptions {
  /** Usually `{}` so that the defaults of nested fields apply when the object is omitted. */
  readonly default?: Record<string, unknown>;
  readonly minProperties?: number;
  readonly maxProperties?: number;
}

/** An object with known properties. Unknown properties are pruned by the API server. */
export function object<P extends Properties, const O extends ObjectOptions = {}>(
  properties: P,
  options: O = {} as O,
): Schema<InferProperties<P>, Defaulted<O, Record<string, unknown>>> {
  const props: Record<string, OpenApiSchema> = {};
  const required: string[] = [];
  for (const [name, child] of Object.entries(properties)) {
    props[name] = child.openApi;
    if (child.isRequired) required.push(name);
  }
  // The API server validates defaults against the schema: a default without a required field is refused.
  const missing = options.default ? required.filter((name) => !(name in (options.default as object))) : [];
  if (missing.length > 0) {
    throw new SchemaError(`object default ${JSON.stringify(options.default)} lacks the required field(s) ${missing.join(', ')}`);
  }
  return node(
    {
      type: 'object',
      properties: props,
      required: required.length > 0 ? required : undefined,
      minProperties: options.minProperties,
      maxProperties: options.maxProperties,
    },
    options,
  );
}

export interface ArrayOptions extends CommonOptions {
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly default?: readonly unknown[];
  /** How server-side apply merges the list (default `atomic`). */
  readonly listType?: 'atomic' | 'set' | 'map';
  /** Keys of a `map` list, e.g. `['type']` for conditions. */
  readonly listMapKeys?: readonly string[];
}

export function array<I extends AnySchema, const O extends ArrayOptions = {}>(
  items: I,
  options: O = {} as O,
): Schema<Infer<I>[], Defaulted<O, readonly unknown[]>> {
  checkBounds('array length', options.minItems, options.maxItems, options.default?.length);
  if (options.listType === 'map') {
    const keys = options.listMapKeys ?? [];
    if (keys.length === 0) throw new SchemaError('a list of type "map" needs listMapKeys');
    for (const key of keys) {
      if (!items.openApi.properties?.[key]) throw new SchemaError(`list map key "${key}" is not a property of the list items`);
      if (!items.openApi.required?.includes(key) && items.openApi.properties[key]?.default === undefined) {
        throw new SchemaError(`list map key "${key}" must be required or defaulted in the list items`);
      }
    }
  } else if (options.listMapKeys) {
    throw new SchemaError('listMapKeys only applies to listType "map"');
  }
  return node(
    {
      type: 'array',
      items: items.openApi,
      minItems: options.minItems,
      maxItems: options.maxItems,
      'x-kubernetes-list-type': options.listType,
      'x-kubernetes-list-map-keys': options.listMapKeys ? [...options.listMapKeys] : undefined,
    },
    options,
  );
}

export interface MapOptions extends CommonOptions {
  readonly maxProperties?: number;
  readonly default?: Record<string, unknown>;
}

/** An object used as a map from arbitrary keys to `values`. */
export function map<V extends AnySchema, const O extends MapOptions = {}>(
  values: V,
  options: O = {} as O,
): Schema<Record<string, Infer<V>>, Defaulted<O, Record<string, unknown>>> {
  return node({ type: 'object', additionalProperties: values.openApi, maxProperties: options.maxProperties }, options);
}

export interface IntOrStringOptions extends CommonOptions {
  readonly default?: number | string;
  readonly pattern?: string;
}

/** `x-kubernetes-int-or-string` (ports by name or number, Kubernetes quantities). */
export function intOrString<const O extends IntOrStringOptions>(options: O = {} as O): Schema<number | string, Defaulted<O, number | string>> {
  return node(
    {
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      pattern: options.pattern,
      'x-kubernetes-int-or-string': true,
    },
    options,
  );
}

/** Any JSON object, kept as is (`x-kubernetes-preserve-unknown-fields`). Use sparingly. */
export function unknownObject(options: CommonOptions = {}): Schema<Record<string, unknown>, false> {
  return node({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, options);
}

/** Marks a field required: the API server rejects objects without it. */
export function required<T>(schema: Schema<T, boolean>): Schema<T, true> {
  if (schema.hasDefault) throw new SchemaError('a field with a default cannot also be required (the default would never apply)');
  return { ...schema, isRequired: true } as Schema<T, true>;
}

/** The pattern the API server uses for resource quantities (`resource.Quantity`). */
export const QUANTITY_PATTERN = '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** A Kubernetes quantity such as `256Mi`, `0.5` or `100m`. */
export function quantity(options: CommonOptions = {}): Schema<number | string, false> {
  return intOrString({ ...options, pattern: QUANTITY_PATTERN });
}

/** `corev1.ResourceRequirements` (requests and limits; `claims` is not offered). */
export function resourceRequirements(options: CommonOptions = {}) {
  return object(
    {
      limits: map(quantity(), { description: 'Maximum amount of compute resources allowed (e.g. cpu: 500m, memory: 256Mi).' }),
      requests: map(quantity(), { description: 'Minimum amount of compute resources required.' }),
    },
    options,
  );
}

/** `metav1.Condition`, as controller-gen emits it. */
export const condition = object({
  type: required(
    string({
      maxLength: 316,
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
      description: 'Type of condition in CamelCase.',
    }),
  ),
  status: required(oneOf(['True', 'False', 'Unknown'], { description: 'Status of the condition.' })),
  observedGeneration: integer({ format: 'int64', minimum: 0, description: 'The .metadata.generation the condition was set from.' }),
  lastTransitionTime: required(string({ format: 'date-time', description: 'Last time the condition changed status.' })),
  reason: required(
    string({
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
      description: 'Programmatic identifier of the last transition, in CamelCase.',
    }),
  ),
  message: required(string({ maxLength: 32768, description: 'Human-readable details of the last transition.' })),
});

/** A `conditions` list keyed by `type`, merged per type by server-side apply. */
export function conditions(options: CommonOptions = {}) {
  return array(condition, { ...options, listType: 'map', listMapKeys: ['type'], maxItems: 32 });
}

function checkBounds(what: string, min: number | undefined, max: number | undefined, value: number | undefined): void {
  if (min !== undefined && max !== undefined && min > max) throw new SchemaError(`${what} minimum ${min} is above its maximum ${max}`);
  if (value === undefined) return;
  if (min !== undefined && value < min) throw new SchemaError(`${what} default ${value} is below its minimum ${min}`);
  if (max !== undefined && value > max) throw new SchemaError(`${what} default ${value} is above its maximum ${max}`);
}

/** Drops undefined fields and puts keys in a stable order, so generated YAML diffs cleanly. */
function orderKeys(schema: OpenApiSchema): OpenApiSchema {
  const order: (keyof OpenApiSchema)[] = [
    'description',
    'type',
    'format',
    'default',
    'enum',
    'pattern',
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'minLength',
    'maxLength',
    'minItems',
    'maxItems',
    'minProperties',
    'maxProperties',
    'anyOf',
    'items',
    'additionalProperties',
    'properties',
    'required',
    'x-kubernetes-int-or-string',
    'x-kubernetes-preserve-unknown-fields',
    'x-kubernetes-list-type',
    'x-kubernetes-list-map-keys',
    'x-kubernetes-map-type',
    'x-kubernetes-validations',
  ];
  const out: Record<string, unknown> = {};
  for (const key of order) {
    if (schema[key] !== undefined) out[key] = schema[key];
  }
  return out as OpenApiSchema;
}
