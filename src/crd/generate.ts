/**
 * CRD generation: turns a `ResourceDefinition` into an `apiextensions.k8s.io/v1`
 * CustomResourceDefinition and writes `<outDir>/<plural>.<group>.yaml` — the equivalent of
 * `controller-gen crd`. Which resources is the caller's: `operless crd` renders a project's
 * `src/resources.ts` (this repository's own is src/resources.ts too).
 *
 * Guarantees: output is deterministic (same definition → byte-identical YAML), so a test can
 * compare the checked-in files with a fresh rendering (`staleCrds`); `writeCrds` only rewrites
 * files whose content changed.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { OpenApiSchema } from './schema.ts';
import type { ResourceDefinition } from './resource.ts';
import { preferredSpokeProblem, versionsOutrankingStorage } from './version-priority.ts';

export type AnyResource = ResourceDefinition<unknown, unknown>;

/** A resource to render, with the file that defines it. */
export interface GeneratedResource {
  readonly definition: ResourceDefinition<unknown, unknown>;
  /** Repository path of the TypeScript definition (named in the generated file's header). */
  readonly source: string;
  /**
   * Other versions of the kind (spokes), listed with `served: false`: a plain install serves the
   * storage version only and needs no conversion webhook; the chart serves them all when it adds
   * the conversion stanza (docs/architecture.md, "Webhooks are functions behind the forwarder").
   */
  readonly unservedVersions?: readonly AnyResource[];
}

/** How the API server converts between a CRD's versions: a webhook (HTTPS, trusted through `caBundle`). */
export interface CrdConversionWebhook {
  /** `{ url }` or `{ service: { namespace, name, path, port } }`, with `caBundle` (base64 PEM) when known. */
  readonly clientConfig: Record<string, unknown>;
}

/** More than one version: the others are served beside `definition` (the storage version, the hub). */
export interface CrdVersionOptions {
  readonly servedVersions?: readonly AnyResource[];
  /** Listed with `served: false` (their schemas ready for a conversion webhook, not served without one). */
  readonly unservedVersions?: readonly AnyResource[];
  /** Required when `servedVersions` differ in schema: the API server calls it to convert. */
  readonly conversion?: CrdConversionWebhook;
}

/** The CustomResourceDefinition object for a resource (and its other served versions). */
export function generateCrd(def: AnyResource, options: CrdVersionOptions = {}): Record<string, unknown> {
  const names: Record<string, unknown> = { kind: def.kind, listKind: def.listKind, plural: def.plural, singular: def.singular };
  if (def.shortNames.length > 0) names.shortNames = [...def.shortNames];
  if (def.categories.length > 0) names.categories = [...def.categories];
  const served = options.servedVersions ?? [];
  const others = [...served, ...(options.unservedVersions ?? [])];
  for (const other of others) {
    if (other.group !== def.group || other.kind !== def.kind || other.plural !== def.plural || other.version === def.version) {
      throw new Error(
        `CRD ${def.crdName}: served version ${other.group}/${other.version} ${other.kind} must be another version of ${def.group} ${def.kind} (plural ${def.plural})`,
      );
    }
  }
  const versions = [def, ...others].sort((a, b) => a.version.localeCompare(b.version)).map((v) => versionEntry(v, v === def, v === def || served.includes(v)));
  const spec: Record<string, unknown> = { group: def.group, names, scope: def.scope, versions };
  if (options.conversion) {
    spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: options.conversion.clientConfig, conversionReviewVersions: ['v1'] } };
  }
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: def.crdName, labels: { 'app.kubernetes.io/managed-by': 'operless' } },
    spec,
  };
}

function versionEntry(def: AnyResource, storage: boolean, served: boolean): Record<string, unknown> {
  const properties: Record<string, OpenApiSchema> = {
    apiVersion: {
      description: 'APIVersion defines the versioned schema of this representation of an object.',
      type: 'string',
    },
    kind: { description: 'Kind is a string value representing the REST resource this object represents.', type: 'string' },
    metadata: { type: 'object' },
    spec: def.specSchema,
  };
  if (def.statusSchema) properties.status = def.statusSchema;
  const root: OpenApiSchema = { description: def.description, type: 'object', properties };
  if (def.specRequired) root.required = ['spec'];
  if (def.validations.length > 0) root['x-kubernetes-validations'] = def.validations.map((v) => ({ ...v }));
  if (!root.description) delete root.description;

  const version: Record<string, unknown> = { name: def.version, served, storage };
  if (def.printerColumns.length > 0) {
    version.additionalPrinterColumns = def.printerColumns.map((c) => clean({ ...c }));
  }
  version.schema = { openAPIV3Schema: root };
  const subresources: Record<string, unknown> = {};
  if (def.statusSubresource) subresources.status = {};
  if (def.scale) subresources.scale = clean({ ...def.scale });
  if (Object.keys(subresources).length > 0) version.subresources = subresources;
  return version;
}

/** The file name of a resource's CRD: `<plural>.<group>.yaml`. */
export function crdFileName(def: AnyResource): string {
  return `${def.crdName}.yaml`;
}

/** The command that regenerates the CRDs, named in each file's header. */
export const DEFAULT_GENERATOR = 'operless crd';

/** The CRD object of a listed resource: its storage version served, its `unservedVersions` listed. */
export function resourceCrd(resource: GeneratedResource): Record<string, unknown> {
  return generateCrd(resource.definition, resource.unservedVersions ? { unservedVersions: resource.unservedVersions } : {});
}

/** The YAML text of a resource's CRD, with a header naming its source and the command that regenerates it. */
export function renderCrd(resource: GeneratedResource, generator: string = DEFAULT_GENERATOR): string {
  const header = [
    `# CustomResourceDefinition for ${resource.definition.kind} (${resource.definition.group}/${resource.definition.version}).`,
    `# Generated from ${resource.source} by \`${generator}\`. Do not edit by hand:`,
    '# change the TypeScript definition and regenerate.',
  ].join('\n');
  return `${header}\n${stringify(resourceCrd(resource), { lineWidth: 0 })}`;
}

/**
 * Warnings about the listed resources: a version listed beside the storage version that outranks
 * it in Kubernetes version priority (version-priority.ts) — not served by the generated file, but
 * the preferred version wherever it is served with the conversion stanza (the chart refuses that
 * unless `conversion.preferredSpoke` acknowledges it). Pure.
 */
export function crdWarnings(resources: readonly GeneratedResource[]): string[] {
  return resources.flatMap((resource) => {
    const def = resource.definition;
    const outranking = versionsOutrankingStorage(
      [{ name: def.version, storage: true }, ...(resource.unservedVersions ?? []).map((v) => ({ name: v.version }))],
      true,
    );
    return outranking.length === 0 ? [] : [`${preferredSpokeProblem(def.crdName, def.version, outranking)}.`];
  });
}

/** Writes every CRD into `outDir`; returns the paths whose content changed. */
export function writeCrds(outDir: string, resources: readonly GeneratedResource[], generator: string = DEFAULT_GENERATOR): string[] {
  mkdirSync(outDir, { recursive: true });
  const written: string[] = [];
  for (const resource of resources) {
    const path = join(outDir, crdFileName(resource.definition));
    const text = renderCrd(resource, generator);
    if (existsSync(path) && readFileSync(path, 'utf8') === text) continue;
    writeFileSync(path, text);
    written.push(path);
  }
  return written;
}

/** The CRD files in `outDir` that are missing or differ from a fresh rendering. */
export function staleCrds(
  outDir: string,
  resources: readonly GeneratedResource[],
  generator: string = DEFAULT_GENERATOR,
): { path: string; problem: 'missing' | 'outdated' }[] {
  const stale: { path: string; problem: 'missing' | 'outdated' }[] = [];
  for (const resource of resources) {
    const path = join(outDir, crdFileName(resource.definition));
    if (!existsSync(path)) stale.push({ path, problem: 'missing' });
    else if (readFileSync(path, 'utf8') !== renderCrd(resource, generator)) stale.push({ path, problem: 'outdated' });
  }
  return stale;
}

/** Paths of this project's CRD files (for tests and the dev loop). */
export function crdPaths(outDir: string, resources: readonly GeneratedResource[]): string[] {
  return resources.map((r) => join(outDir, crdFileName(r.definition)));
}

function clean<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}
