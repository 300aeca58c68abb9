/**
 * The `Memcached` custom resource (`cache.example.com/v1alpha1`), defined once: the CRD in
 * `infra/crds/memcacheds.cache.example.com.yaml` is generated from `MemcachedResource`, and the
 * `Memcached` type below is inferred from the same schema, so they cannot drift apart.
 *
 * What the API server guarantees for every stored Memcached (so the controller need not check):
 * `spec.size` is an integer 0–100; `spec.image`, `spec.port` and `spec.memoryLimitMB` are
 * present (defaulted) and in range; the image is not `:latest`; `spec.configMapRef` names a
 * ConfigMap in the object's own namespace (a `namespace` in it is refused). Cross-field rules the schema
 * cannot express well (memory versus the container limit) are checked by the controller
 * (`validate.ts`).
 */
import {
  array,
  conditions,
  defineResource,
  integer,
  object,
  required,
  resourceRequirements,
  string,
  type Infer,
  type ResourceDefinition,
  type ResourceOf,
  type Schema,
} from '../crd/index.ts';

/** The memcached image used when `spec.image` is omitted (pinned: never `latest`). */
export const DEFAULT_IMAGE = 'memcached:1.6.38-alpine';
export const DEFAULT_PORT = 11211;
/** memcached's own default for `-m`. */
export const DEFAULT_MEMORY_LIMIT_MB = 64;
export const MAX_SIZE = 100;

/** The fields of the spec (v1beta1 reuses them, with `replicas` for `size`: see v1beta1.ts). */
export const memcachedSpecFields = {
  size: required(
    integer({
      minimum: 0,
      maximum: MAX_SIZE,
      description: 'Number of memcached nodes (Deployment replicas), 0–100.',
    }),
  ),
  image: string({
    default: DEFAULT_IMAGE,
    minLength: 1,
    maxLength: 512,
    pattern: '^[^\\s]+$',
    description: `Container image of memcached (default ${DEFAULT_IMAGE}). Pin a version or digest.`,
    validations: [
      {
        rule: "!self.endsWith(':latest')",
        message: 'spec.image must be pinned to a version or digest, not ":latest" (e.g. memcached:1.6.38-alpine)',
      },
    ],
  }),
  port: integer({
    minimum: 1,
    maximum: 65535,
    default: DEFAULT_PORT,
    description: `TCP port memcached listens on and the Service exposes (default ${DEFAULT_PORT}).`,
  }),
  memoryLimitMB: integer({
    minimum: 16,
    maximum: 65536,
    default: DEFAULT_MEMORY_LIMIT_MB,
    description: 'Item memory in megabytes (memcached -m). Must fit in resources.limits.memory when that is set.',
  }),
  resources: resourceRequirements({
    description: 'Compute resources of the memcached container (requests and limits).',
  }),
  configMapRef: object(
    {
      name: required(
        string({
          minLength: 1,
          maxLength: 253,
          pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
          description: "Name of the ConfigMap, in the Memcached's own namespace.",
        }),
      ),
      namespace: string({ description: "Not allowed: the ConfigMap must be in the Memcached's own namespace." }),
    },
    {
      description:
        'Optional ConfigMap (same namespace) with extra memcached settings: memoryLimitMB (16–65536, overrides spec.memoryLimitMB) ' +
        'and maxConnections (1–65536, memcached -c). A change of it rolls the pods; a missing or invalid one sets Degraded=True.',
      validations: [
        {
          rule: '!has(self.__namespace__)',
          message: "spec.configMapRef must name a ConfigMap in the Memcached's own namespace: a reference across namespaces is not allowed (remove namespace)",
        },
      ],
    },
  ),
};

export const memcachedSpec = required(object(memcachedSpecFields, { description: 'Desired state of the memcached cluster.' }));

export const memcachedStatus = object(
  {
    nodes: array(string(), { description: 'Names of the memcached pods (sorted).', maxItems: 200 }),
    readyReplicas: integer({ minimum: 0, description: 'Number of memcached pods that are Ready.' }),
    observedGeneration: integer({ format: 'int64', minimum: 0, description: 'The .metadata.generation this status was computed from.' }),
    conditions: conditions({ description: 'Available, Progressing and Degraded, as metav1.Condition.' }),
    deploymentResourceVersion: string({
      maxLength: 128,
      description: 'The resourceVersion of the Deployment that nodes and readyReplicas were computed from (the pods are listed again only when it changes).',
    }),
  },
  { description: 'Observed state of the memcached cluster.' },
);

export type MemcachedSpec = Infer<typeof memcachedSpec>;
export type MemcachedStatus = Infer<typeof memcachedStatus>;

/**
 * One served version of Memcached: every version shares its names, scope, description, status
 * and printer columns; a version differs only in its spec and the path of its size
 * (`.spec.size` in v1alpha1, `.spec.replicas` in v1beta1.ts).
 */
export function defineMemcachedVersion<Spec extends Schema<object, boolean>>(
  version: string,
  spec: Spec,
  size: { readonly column: string; readonly path: string },
): ResourceDefinition<Infer<Spec>, MemcachedStatus> {
  return defineResource({
    group: 'cache.example.com',
    version,
    kind: 'Memcached',
    plural: 'memcacheds',
    singular: 'memcached',
    shortNames: ['mc'],
    categories: ['operless'],
    scope: 'Namespaced',
    description: 'Memcached is a memcached cluster managed by the Operless reference operator.',
    spec,
    status: memcachedStatus,
    scale: { specReplicasPath: size.path, statusReplicasPath: '.status.readyReplicas' },
    printerColumns: [
      { name: size.column, type: 'integer', jsonPath: size.path, description: 'Requested number of nodes' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Ready nodes' },
      { name: 'Available', type: 'string', jsonPath: '.status.conditions[?(@.type=="Available")].status' },
      { name: 'Image', type: 'string', jsonPath: '.spec.image', priority: 1 },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

export const MemcachedResource = defineMemcachedVersion('v1alpha1', memcachedSpec, { column: 'Size', path: '.spec.size' });

export type Memcached = ResourceOf<typeof MemcachedResource>;

/** How controllers and clients address Memcached objects. */
export const MEMCACHED = MemcachedResource.kindRef;
