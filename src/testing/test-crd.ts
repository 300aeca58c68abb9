/**
 * `testCrd`: the CustomResourceDefinition of a schemaless kind for tests — any `spec` and any
 * `status` object is accepted and kept (`x-kubernetes-preserve-unknown-fields`), so a test can
 * create objects of the kind without writing a schema. Pass it to `startControlPlane({ crds })`
 * or `installCrds`.
 *
 * Guarantees:
 * - One version, served and stored; `metadata.name` is `<plural>.<group>`; `plural` defaults to
 *   the lower-cased kind + `s`, `singular` is the lower-cased kind, `listKind` is `<kind>List`
 *   (what the API server would default them to).
 * - Namespaced, with a status subresource, unless told otherwise; `specSchema` and
 *   `statusSchema` replace the any-object schema of `spec` or `status` when a test needs the API
 *   server to validate or prune them.
 * - Pure: the same options give an equal object, a new one each call (unit-tested).
 */

/** An OpenAPI v3 schema, as a CRD carries it. */
export type TestCrdSchema = Readonly<Record<string, unknown>>;

export interface TestCrdOptions {
  /** API group, e.g. `test.operless.dev`. */
  readonly group: string;
  /** Kind, e.g. `Widget`. */
  readonly kind: string;
  /** Resource name (default: the lower-cased kind + `s`). */
  readonly plural?: string;
  /** Default `Namespaced`. */
  readonly scope?: 'Namespaced' | 'Cluster';
  /** The one version (default `v1`). */
  readonly version?: string;
  /** Serve `/status` as a subresource (default true). */
  readonly statusSubresource?: boolean;
  /** The schema of `spec` (default: any object, unknown fields kept). */
  readonly specSchema?: TestCrdSchema;
  /** The schema of `status` (default: any object, unknown fields kept). */
  readonly statusSchema?: TestCrdSchema;
}

export interface TestCrdVersion {
  readonly name: string;
  readonly served: true;
  readonly storage: true;
  readonly subresources?: { readonly status: Readonly<Record<string, never>> };
  readonly schema: { readonly openAPIV3Schema: TestCrdSchema };
}

/** The CRD object `testCrd` returns. */
export interface TestCrd {
  readonly apiVersion: 'apiextensions.k8s.io/v1';
  readonly kind: 'CustomResourceDefinition';
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly group: string;
    readonly scope: 'Namespaced' | 'Cluster';
    readonly names: { readonly plural: string; readonly singular: string; readonly kind: string; readonly listKind: string };
    readonly versions: readonly TestCrdVersion[];
  };
}

const ANY_OBJECT: TestCrdSchema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

/** A schemaless test kind's CRD: any spec and status accepted. */
export function testCrd(options: TestCrdOptions): TestCrd {
  const singular = options.kind.toLowerCase();
  const plural = options.plural ?? `${singular}s`;
  const version: TestCrdVersion = {
    name: options.version ?? 'v1',
    served: true,
    storage: true,
    ...(options.statusSubresource === false ? {} : { subresources: { status: {} } }),
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: { spec: { ...(options.specSchema ?? ANY_OBJECT) }, status: { ...(options.statusSchema ?? ANY_OBJECT) } },
      },
    },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${options.group}` },
    spec: {
      group: options.group,
      scope: options.scope ?? 'Namespaced',
      names: { plural, singular, kind: options.kind, listKind: `${options.kind}List` },
      versions: [version],
    },
  };
}
