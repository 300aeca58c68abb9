/**
 * Template of `src/<kind>/types.ts`: the kind's spec and status schemas and its
 * `defineResource`. The schema is described once (`kindSchema`) and both printed as the
 * module's source and built as a value (`kindResource`), from which `create api` renders the
 * fresh kind's CRD — so the CRD written beside the module is the module's own. Pure.
 */
import type { KindRef } from '../../../kube/types.ts';
import { conditions, integer, object, required, string, type Schema } from '../../../crd/schema.ts';
import { defineResource } from '../../../crd/resource.ts';
import { camel, constant } from '../../names.ts';
import type { ApiEntry } from '../../project-file.ts';

/** The spec field that names a related object: `configMapRef` for ConfigMap. */
export function refField(kind: KindRef): string {
  return `${camel(kind.kind)}Ref`;
}

const refDescription = (kind: KindRef) => `The ${kind.kind} (same namespace) this object reads; a change of it reconciles this object.`;

/** Options of a schema builder: plain values, printed as an object literal. */
type Options = Readonly<Record<string, string | number>>;

/** One call of a crd/schema.ts builder, described once: printed as source (`sourceOf`) and built as a value (`schemaOf`). */
type Field =
  | { readonly builder: 'string' | 'integer' | 'conditions'; readonly options: Options; readonly required?: boolean }
  | { readonly builder: 'object'; readonly fields: Readonly<Record<string, Field>>; readonly options: Options; readonly required?: boolean };

/** The schema of a `spec.<kind>Ref`: a name, in the object's own namespace. */
function refSchema(kind: KindRef): Field {
  return {
    builder: 'object',
    fields: { name: { builder: 'string', required: true, options: { minLength: 1, maxLength: 253, description: `Name of the ${kind.kind}.` } } },
    options: { description: refDescription(kind) },
  };
}

/** The schema of a fresh kind: spec and status fields with their descriptions, and the resource's identity. */
function kindSchema(api: ApiEntry) {
  return {
    spec: {
      fields: {
        message: { builder: 'string', options: { maxLength: 256, description: 'An example field: replace it with the desired state of your kind.' } },
        ...Object.fromEntries((api.watches ?? []).map((w) => [refField(w), refSchema(w)])),
      } as Record<string, Field>,
      description: `Desired state of the ${api.kind}.`,
    },
    status: {
      fields: {
        observedGeneration: {
          builder: 'integer',
          options: { format: 'int64', minimum: 0, description: 'The .metadata.generation this status was computed from.' },
        },
        conditions: { builder: 'conditions', options: { description: 'Ready (and any others), as metav1.Condition.' } },
      } as Record<string, Field>,
      description: `Observed state of the ${api.kind}.`,
    },
    identity: {
      group: api.group,
      version: api.version,
      kind: api.kind,
      plural: api.plural,
      scope: api.namespaced ? 'Namespaced' : 'Cluster',
      description: `${api.kind} is the Schema for the ${api.plural} API.`,
    } as const,
    printerColumns: [
      { name: 'Ready', type: 'string' as const, jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'Age', type: 'date' as const, jsonPath: '.metadata.creationTimestamp' },
    ],
  };
}

/** A TypeScript literal of a plain value: single-quoted strings, unquoted keys. */
function literal(value: string | number | Options): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `{ ${Object.entries(value)
    .map(([key, v]) => `${key}: ${literal(v)}`)
    .join(', ')} }`;
}

function sourceOf(field: Field): string {
  const call =
    field.builder === 'object'
      ? `object({ ${Object.entries(field.fields)
          .map(([name, f]) => `${name}: ${sourceOf(f)}`)
          .join(', ')} }, ${literal(field.options)})`
      : `${field.builder}(${literal(field.options)})`;
  return field.required ? `required(${call})` : call;
}

function schemaOf(field: Field): Schema<unknown> {
  const built: Schema<unknown> =
    field.builder === 'object'
      ? object(schemasOf(field.fields), field.options)
      : field.builder === 'string'
        ? string(field.options)
        : field.builder === 'integer'
          ? integer(field.options)
          : conditions(field.options);
  return field.required ? required(built) : built;
}

function schemasOf(fields: Readonly<Record<string, Field>>): Record<string, Schema<unknown>> {
  return Object.fromEntries(Object.entries(fields).map(([name, f]) => [name, schemaOf(f)]));
}

/** The fields of an object schema, one per line, as the module lists them. */
function fieldLines(fields: Readonly<Record<string, Field>>): string {
  return Object.entries(fields)
    .map(([name, f]) => `    ${name}: ${sourceOf(f)},\n`)
    .join('');
}

/** The fresh kind's resource as a value: what the generated module defines (its CRD is rendered from it). */
export function kindResource(api: ApiEntry) {
  const schema = kindSchema(api);
  return defineResource({
    ...schema.identity,
    spec: required(object(schemasOf(schema.spec.fields), { description: schema.spec.description })),
    status: object(schemasOf(schema.status.fields), { description: schema.status.description }),
    printerColumns: schema.printerColumns,
  });
}

export function typesModule(api: ApiEntry): string {
  const k = api.kind;
  const schema = kindSchema(api);
  const { message, ...refs } = schema.spec.fields;
  return `/**
 * The ${k} resource (${api.group}/${api.version}, ${api.namespaced ? 'namespaced' : 'cluster-scoped'}): its spec and status
 * schemas, from which come both the TypeScript type and the CRD (\`operless crd\` writes
 * infra/crds/${api.plural}.${api.group}.yaml). Describe the desired state in the spec; the
 * controller reports what it observed in the status.
 */
import { conditions, defineResource, integer, object, required, string, type Infer, type ResourceOf } from 'operless/crd';

export const ${camel(k)}Spec = required(object(
  {
    // TODO: the desired state of a ${k}. Fields: string, integer, boolean, oneOf, array, map,
    // object, quantity, resourceRequirements; required(...) or a default makes a field present.
${fieldLines({ ...(message ? { message } : {}), ...refs })}  },
  { description: ${literal(schema.spec.description)} },
));

export const ${camel(k)}Status = object(
  {
${fieldLines(schema.status.fields)}  },
  { description: ${literal(schema.status.description)} },
);

export type ${k}Spec = Infer<typeof ${camel(k)}Spec>;
export type ${k}Status = Infer<typeof ${camel(k)}Status>;

export const ${k}Resource = defineResource({
${Object.entries(schema.identity)
  .map(([key, value]) => `  ${key}: ${literal(value)},\n`)
  .join('')}  spec: ${camel(k)}Spec,
  status: ${camel(k)}Status,
  printerColumns: [
${schema.printerColumns.map((column) => `    ${literal(column)},\n`).join('')}  ],
});

export type ${k} = ResourceOf<typeof ${k}Resource>;

/** How controllers and clients address ${k} objects. */
export const ${constant(k)} = ${k}Resource.kindRef;
`;
}
