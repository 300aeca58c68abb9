/**
 * A custom resource definition in TypeScript: group, version, names, scope, the spec and status
 * schemas (from `schema.ts`), subresources and printer columns. From it come the resource's
 * TypeScript type (`ResourceOf<typeof def>`), the `KindRef` a controller uses to address it,
 * and the `apiextensions.k8s.io/v1` CustomResourceDefinition (`generateCrd`).
 *
 * Guarantees: names are checked when the definition is built, with the contract's validators
 * (contract/names.ts: DNS rules for group and plural, PascalCase kind, version like `v1alpha1`), printer column paths are checked against the
 * schema, and the scale subresource's paths must point at integer fields that exist.
 */
import { isConventionalVersion, isDns1035Label, isDnsSubdomain, isKind, KIND_MAX_LENGTH } from '../contract/names.ts';
import type { KindRef, KubeObject, ObjectMeta } from '../kube/types.ts';
import { SchemaError, type CelRule, type Infer, type OpenApiSchema, type Schema } from './schema.ts';

export interface PrinterColumn {
  readonly name: string;
  readonly type: 'integer' | 'number' | 'string' | 'boolean' | 'date';
  /** Simple JSONPath into the object, e.g. `.spec.size` or `.status.conditions[?(@.type=="Available")].status`. */
  readonly jsonPath: string;
  readonly description?: string;
  readonly priority?: number;
  readonly format?: string;
}

export interface ScaleSubresource {
  /** e.g. `.spec.size`: what `kubectl scale` writes. */
  readonly specReplicasPath: string;
  readonly statusReplicasPath: string;
  readonly labelSelectorPath?: string;
}

export interface ResourceOptions<Spec extends Schema<object, boolean>, Status extends Schema<object, boolean>> {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** Lower-case plural for REST paths; default `<kind lower-case>s`. */
  readonly plural?: string;
  readonly singular?: string;
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  readonly scope: 'Namespaced' | 'Cluster';
  readonly description?: string;
  readonly spec: Spec;
  readonly status?: Status;
  /** Rules on the whole object (self = the object), e.g. immutability across spec fields. */
  readonly validations?: readonly CelRule[];
  /** Default true when a status schema is given. */
  readonly statusSubresource?: boolean;
  readonly scale?: ScaleSubresource;
  readonly printerColumns?: readonly PrinterColumn[];
}

export interface ResourceDefinition<SpecT, StatusT> {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly listKind: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly scope: 'Namespaced' | 'Cluster';
  readonly description?: string;
  readonly specSchema: OpenApiSchema;
  readonly specRequired: boolean;
  readonly statusSchema?: OpenApiSchema;
  readonly validations: readonly CelRule[];
  readonly statusSubresource: boolean;
  readonly scale?: ScaleSubresource;
  readonly printerColumns: readonly PrinterColumn[];
  /** How controllers and clients address the kind. */
  readonly kindRef: KindRef;
  /** `<plural>.<group>`: the CRD's name. */
  readonly crdName: string;
  /** Type-level only. */
  readonly __spec?: SpecT;
  readonly __status?: StatusT;
}

/** The object type of a resource: `{ apiVersion, kind, metadata, spec, status? }`. */
export type ResourceOf<D> =
  D extends ResourceDefinition<infer SpecT, infer StatusT> ? KubeObject & { metadata: ObjectMeta; spec: SpecT; status?: StatusT } : never;

export function defineResource<Spec extends Schema<object, boolean>, Status extends Schema<object, boolean>>(
  options: ResourceOptions<Spec, Status>,
): ResourceDefinition<Infer<Spec>, Infer<Status>> {
  const plural = options.plural ?? `${options.kind.toLowerCase()}s`;
  const singular = options.singular ?? options.kind.toLowerCase();
  const where = `resource ${options.kind}`;
  if (!isDnsSubdomain(options.group) || !options.group.includes('.')) {
    throw new SchemaError(`${where}: group ${JSON.stringify(options.group)} must be a DNS subdomain with a dot, e.g. cache.example.com`);
  }
  if (!isConventionalVersion(options.version))
    throw new SchemaError(`${where}: version ${JSON.stringify(options.version)} must look like v1, v1beta1 or v1alpha1`);
  if (!isKind(options.kind)) throw new SchemaError(`${where}: kind must be PascalCase, at most ${KIND_MAX_LENGTH} characters`);
  for (const name of [plural, singular, ...(options.shortNames ?? []), ...(options.categories ?? [])]) {
    if (!isDns1035Label(name)) throw new SchemaError(`${where}: name ${JSON.stringify(name)} must be a lower-case DNS label`);
  }
  if (options.spec.openApi.type !== 'object') throw new SchemaError(`${where}: spec must be an object schema`);
  if (options.status && options.status.openApi.type !== 'object') throw new SchemaError(`${where}: status must be an object schema`);
  const statusSubresource = options.statusSubresource ?? options.status !== undefined;
  const schemaOf = { spec: options.spec.openApi, status: options.status?.openApi };
  for (const column of options.printerColumns ?? []) {
    checkPath(where, `printer column ${column.name}`, column.jsonPath, schemaOf);
  }
  if (options.scale) {
    if (!statusSubresource) throw new SchemaError(`${where}: the scale subresource needs the status subresource`);
    for (const [what, path] of [
      ['specReplicasPath', options.scale.specReplicasPath],
      ['statusReplicasPath', options.scale.statusReplicasPath],
    ] as const) {
      const field = checkPath(where, `scale ${what}`, path, schemaOf);
      if (field?.type !== 'integer') throw new SchemaError(`${where}: scale ${what} ${path} must point at an integer field`);
    }
  }
  return {
    group: options.group,
    version: options.version,
    kind: options.kind,
    plural,
    singular,
    listKind: `${options.kind}List`,
    shortNames: [...(options.shortNames ?? [])],
    categories: [...(options.categories ?? [])],
    scope: options.scope,
    description: options.description,
    specSchema: options.spec.openApi,
    specRequired: options.spec.isRequired,
    statusSchema: options.status?.openApi,
    validations: [...(options.validations ?? [])],
    statusSubresource,
    scale: options.scale,
    printerColumns: [...(options.printerColumns ?? [])],
    kindRef: Object.freeze({
      apiVersion: `${options.group}/${options.version}`,
      kind: options.kind,
      plural,
      namespaced: options.scope === 'Namespaced',
    }),
    crdName: `${plural}.${options.group}`,
  };
}

/** Checks that `.spec.a.b` (filters like `[?(@.type=="X")]` allowed) names fields of the schema. */
function checkPath(where: string, what: string, path: string, roots: { spec: OpenApiSchema; status: OpenApiSchema | undefined }): OpenApiSchema | undefined {
  const segments = path.replace(/\[[^\]]*\]/g, '').split('.');
  if (segments[0] !== '' || segments.length < 2) throw new SchemaError(`${where}: ${what} path ${path} must start with "."`);
  const [, top, ...rest] = segments;
  if (top === 'metadata') return undefined;
  let current: OpenApiSchema | undefined = top === 'spec' ? roots.spec : top === 'status' ? roots.status : undefined;
  if (!current) throw new SchemaError(`${where}: ${what} path ${path} must start with .metadata, .spec or .status (with a schema)`);
  for (const segment of rest) {
    const element: OpenApiSchema = current.type === 'array' && current.items ? current.items : current;
    const next: OpenApiSchema | undefined = element.properties?.[segment];
    if (!next) throw new SchemaError(`${where}: ${what} path ${path}: no field "${segment}" in the schema`);
    current = next;
  }
  return current;
}
