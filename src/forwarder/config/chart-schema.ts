/**
 * The Helm chart's values schema (infra/forwarder/chart/values.schema.json), built from the
 * forwarder's configuration schema (schema.ts): every value the chart passes into the
 * forwarder's configuration file is checked by the configuration schema's own definitions, so
 * `helm install` refuses exactly what the forwarder would refuse at start-up, and the two
 * cannot drift (scripts/config-schema.ts writes the file; a test checks it is fresh).
 *
 * How chart values map onto the configuration (templates/_helpers.tpl, "forwarder.config"):
 * `clusterId`, `namespaces`, `primaries`, `owned`, `related` as they are (`namespaces` also
 * turns the watch RBAC into a Role per namespace); `queue.*` with "" meaning absent;
 * `leaderElection.*` ("auto" and an empty leaseName are the chart's own); `port` is
 * `server.port`; `settings` is every other configuration field, merged over the rest. The
 * chart adds what it needs on top: `plural` and `namespaced` on every watch (RBAC is generated
 * from them) and at least one queue (`queue.url` or a `queueUrl` on every primary). The other
 * values (image, RBAC, probes, pod settings, NetworkPolicy, PrometheusRule, and `webhooks`: the
 * webhook configurations, the serving certificate and the CRDs' conversion stanzas) are the chart's
 * alone. `clusterId` may be "" and `primaries` empty here — the chart's unset defaults, so its
 * own values.yaml passes `helm lint` — and templates/validate.yaml refuses an install without them.
 *
 * Pure: no I/O. The annotation keywords the forwarder uses for its problem wording (`x-…`) are
 * left out; Helm ignores nothing it needs.
 */
import type { JsonSchema } from './schema.ts';

/** Fields of the configuration that the chart sets from its own values, not from `settings`. */
const CHART_SET_FIELDS = ['clusterId', 'namespaces', 'queue', 'primaries', 'owned', 'related'];

function withoutAnnotations<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutAnnotations) as T;
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !key.startsWith('x-'))
      .map(([key, v]) => [key, withoutAnnotations(v)]),
  ) as T;
}

function property(schema: JsonSchema, name: string): JsonSchema {
  const found = schema.properties?.[name];
  if (typeof found !== 'object') throw new Error(`the configuration schema has no property ${name}`);
  return found;
}

/** A string value the chart may leave "" (the template then leaves the field out). */
const orEmpty = (schema: JsonSchema): JsonSchema => ({ anyOf: [{ const: '' }, schema] });

function withoutMinItems(schema: JsonSchema): JsonSchema {
  const { minItems: _minItems, ...rest } = schema as JsonSchema & { minItems?: number };
  return rest;
}

/** A watch as the chart takes it: the configuration's, with the fields RBAC is generated from required. */
const chartWatch = (definition: string): JsonSchema => ({ allOf: [{ $ref: `#/definitions/${definition}` }, { required: ['plural', 'namespaced'] }] });

/** The values that are the chart's alone (the image, RBAC, probes, pod settings). */
const CHART_ONLY_PROPERTIES: Record<string, JsonSchema> = {
  image: {
    type: 'object',
    required: ['repository'],
    properties: {
      repository: { type: 'string', minLength: 1 },
      tag: { type: 'string' },
      // Pins the image by content (repository@sha256:...); takes precedence over the tag.
      digest: { type: 'string', pattern: '^(sha256:[a-f0-9]{64})?$' },
      pullPolicy: { enum: ['Always', 'IfNotPresent', 'Never'] },
    },
  },
  imagePullSecrets: { type: 'array' },
  serviceAccount: {
    type: 'object',
    additionalProperties: false,
    properties: {
      create: { type: 'boolean' },
      name: { type: 'string' },
      annotations: { type: 'object', additionalProperties: { type: 'string' } },
      automountServiceAccountToken: { type: 'boolean' },
    },
  },
  rbac: {
    type: 'object',
    additionalProperties: false,
    properties: { create: { type: 'boolean' }, events: { type: 'boolean' } },
  },
  resources: { type: 'object' },
  terminationGracePeriodSeconds: { type: 'integer', minimum: 1 },
  probes: { type: 'object' },
  podDisruptionBudget: {
    type: 'object',
    properties: { enabled: { type: 'boolean' }, maxUnavailable: { type: ['integer', 'string'] } },
  },
  podSecurityContext: { type: 'object' },
  securityContext: { type: 'object' },
  logLevel: { enum: ['debug', 'info', 'warn', 'error'] },
  extraEnv: { type: 'array' },
  podAnnotations: { type: 'object' },
  podLabels: { type: 'object' },
  nodeSelector: { type: 'object' },
  tolerations: { type: 'array' },
  affinity: { type: 'object' },
  topologySpreadConstraints: { type: 'array' },
  priorityClassName: { type: 'string' },
  kubeVersionCheck: {
    type: 'object',
    additionalProperties: false,
    properties: { enabled: { type: 'boolean' }, constraint: { type: 'string', minLength: 1 }, helmOfflineDefault: { type: 'string' } },
  },
  networkPolicy: {
    type: 'object',
    additionalProperties: false,
    properties: {
      enabled: { type: 'boolean' },
      metricsFrom: { type: 'array', items: { type: 'object' } },
      dns: { type: 'object', additionalProperties: false, properties: { enabled: { type: 'boolean' }, to: { type: 'array', items: { type: 'object' } } } },
      apiServer: { $ref: '#/definitions/chartEgressPeer' },
      sqs: { $ref: '#/definitions/chartEgressPeer' },
      webhooksFrom: { type: 'array', items: { type: 'object' } },
      webhookIngress: {
        type: 'object',
        additionalProperties: false,
        properties: { enabled: { type: 'boolean' } },
        description: 'with settings.webhooks.enabled and networkPolicy.enabled off: an ingress-only policy (webhook and probe ports only)',
      },
      lambda: { $ref: '#/definitions/chartEgressPeer' },
      extraEgress: { type: 'array', items: { type: 'object' } },
    },
  },
  prometheusRule: {
    type: 'object',
    additionalProperties: false,
    properties: {
      enabled: { type: 'boolean' },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
      selector: { type: 'string' },
      for: {
        type: 'object',
        additionalProperties: false,
        properties: Object.fromEntries(
          ['noLeader', 'notReady', 'sendsFailing', 'kindNotServed'].map((k) => [k, { type: 'string', pattern: '^([0-9]+(ms|s|m|h|d|w|y))+$' }]),
        ),
      },
      severity: {
        type: 'object',
        additionalProperties: false,
        properties: { critical: { type: 'string', minLength: 1 }, warning: { type: 'string', minLength: 1 } },
      },
    },
  },
};

/** One admission webhook of a resource (a MutatingWebhookConfiguration or a ValidatingWebhookConfiguration). */
const CHART_ADMISSION_WEBHOOK: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // Defaults (templates/webhook-configurations.yaml, the same as src/crd/webhooks.ts): Fail, 10.
    failurePolicy: { enum: ['Fail', 'Ignore'] },
    timeoutSeconds: { type: 'integer', minimum: 1, maximum: 30 },
  },
};

/** The API server's side of the webhook endpoint (settings.webhooks): what it calls and how it trusts it. */
const CHART_WEBHOOKS: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    caBundle: { type: 'string', pattern: '^[A-Za-z0-9+/=]*$', description: 'base64 PEM of the CA that signed the serving certificate' },
    certManager: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        issuerRef: {
          type: 'object',
          additionalProperties: false,
          properties: { name: { type: 'string' }, kind: { type: 'string', minLength: 1 }, group: { type: 'string', minLength: 1 } },
        },
      },
    },
    clientAuth: {
      type: 'object',
      additionalProperties: false,
      properties: {
        caConfigMap: {
          type: 'string',
          pattern: '^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$',
          description:
            "a ConfigMap (key ca.crt) with the CA of the API server's client certificate: mounted, and settings.webhooks.clientAuth.caFile set to it",
        },
      },
    },
    resources: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['alias', 'apiVersion', 'plural', 'namespaced'],
        properties: {
          alias: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$', description: 'a key of settings.webhooks.functions' },
          apiVersion: {
            type: 'string',
            pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/v[0-9]+((alpha|beta)[0-9]+)?$',
            description: 'the storage (hub) version of a custom resource',
          },
          plural: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' },
          namespaced: { type: 'boolean' },
          default: CHART_ADMISSION_WEBHOOK,
          validate: CHART_ADMISSION_WEBHOOK,
          conversion: {
            type: 'object',
            additionalProperties: false,
            required: ['crd'],
            properties: {
              crd: { type: 'string', minLength: 1, description: 'the CRD (YAML) listing every version: --set-file' },
              preferredSpoke: {
                type: 'boolean',
                description:
                  'serve a CRD whose non-storage version outranks the storage version (it becomes the preferred version, read through the conversion webhook)',
              },
            },
          },
        },
      },
    },
  },
};

/** Egress to one kind of peer: IPv4/IPv6 CIDRs and TCP ports. */
const CHART_EGRESS_PEER: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    cidrs: { type: 'array', items: { type: 'string', pattern: '^[0-9a-fA-F.:]+/[0-9]{1,3}$' } },
    ports: { type: 'array', minItems: 1, items: { type: 'integer', minimum: 1, maximum: 65535 } },
  },
};

/** A `.fifo` queue URL: a per-key kind's queue. */
const FIFO_URL: JsonSchema = { type: 'string', pattern: '\\.fifo$' };

/**
 * The bulk queue against the ordering, as the forwarder refuses it at start (checks.ts
 * `checkBulkQueues`), so `helm install` refuses it too, naming the value: per-key order cannot
 * span two queues, so a bulk queue is never a `.fifo` one (`queue.bulkUrl`, a primary's
 * `bulkQueueUrl`) and never beside one — not `queue.bulkUrl` with a `.fifo` `queue.url`, nor a
 * primary's `bulkQueueUrl` with a `.fifo` queue of its own or, without one, a `.fifo` `queue.url`.
 */
// biome-ignore-start lint/suspicious/noThenProperty: `then` is JSON Schema's conditional keyword here, not a thenable
const BULK_QUEUE_RULES: JsonSchema[] = [
  { properties: { queue: { properties: { bulkUrl: { not: FIFO_URL } } }, primaries: { items: { properties: { bulkQueueUrl: { not: FIFO_URL } } } } } },
  {
    properties: { primaries: { items: { if: { required: ['queueUrl'], properties: { queueUrl: FIFO_URL } }, then: { properties: { bulkQueueUrl: false } } } } },
  },
  {
    if: { required: ['queue'], properties: { queue: { required: ['url'], properties: { url: FIFO_URL } } } },
    then: {
      properties: {
        queue: { properties: { bulkUrl: { const: '' } } },
        primaries: { items: { if: { not: { required: ['queueUrl'] } }, then: { properties: { bulkQueueUrl: false } } } },
      },
    },
  },
];
// biome-ignore-end lint/suspicious/noThenProperty: see above

export function chartValuesSchema(configSchema: JsonSchema): JsonSchema {
  const config = withoutAnnotations(configSchema);
  const queue = property(config, 'queue');
  const leaderElection = property(config, 'leaderElection');
  const server = property(config, 'server');
  const settings = Object.fromEntries(
    Object.entries(config.properties ?? {}).filter(
      ([name, schema]) => !CHART_SET_FIELDS.includes(name) && typeof schema === 'object' && schema.not === undefined,
    ),
  );
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $comment: 'GENERATED by `node scripts/config-schema.ts` from src/forwarder/config/schema.ts and src/forwarder/config/chart-schema.ts: do not edit.',
    title: 'Operless forwarder chart values',
    type: 'object',
    required: ['clusterId', 'queue', 'primaries', 'image', 'replicaCount'],
    definitions: {
      ...config.definitions,
      chartPrimary: chartWatch('primary'),
      chartOwned: chartWatch('owned'),
      chartRelated: chartWatch('related'),
      chartEgressPeer: CHART_EGRESS_PEER,
    },
    anyOf: [
      { properties: { queue: { required: ['url'], properties: { url: { minLength: 1 } } } } },
      { properties: { primaries: { items: { anyOf: [{ required: ['queueUrl'] }, { required: ['sink'], properties: { sink: { const: 'eventbridge' } } }] } } } },
      { properties: { settings: { required: ['sink'], properties: { sink: { const: 'eventbridge' } } } } },
    ],
    allOf: BULK_QUEUE_RULES,
    properties: {
      // "" and [] are the chart's unset defaults (values.yaml valid for `helm lint`); an install
      // without them stops in templates/validate.yaml, naming the value.
      clusterId: orEmpty(property(config, 'clusterId')),
      queue: {
        type: 'object',
        additionalProperties: false,
        description: queue.description,
        properties: Object.fromEntries(Object.entries(queue.properties ?? {}).map(([name, schema]) => [name, orEmpty(schema as JsonSchema)])),
      },
      namespaces: property(config, 'namespaces'),
      primaries: { ...withoutMinItems(property(config, 'primaries')), items: { $ref: '#/definitions/chartPrimary' } },
      owned: { ...property(config, 'owned'), items: { $ref: '#/definitions/chartOwned' } },
      related: { ...property(config, 'related'), items: { $ref: '#/definitions/chartRelated' } },
      settings: {
        type: 'object',
        additionalProperties: false,
        description: "every other forwarder configuration field (docs/forwarder.md), merged into the configuration file; checked by the forwarder's own schema",
        properties: settings,
      },
      replicaCount: { type: 'integer', minimum: 1 },
      leaderElection: {
        type: 'object',
        additionalProperties: false,
        properties: {
          enabled: { anyOf: [property(leaderElection, 'enabled'), { const: 'auto', description: 'on when replicaCount > 1' }] },
          leaseName: orEmpty(property(leaderElection, 'leaseName')),
          leaseDurationSeconds: property(leaderElection, 'leaseDurationSeconds'),
          renewDeadlineSeconds: property(leaderElection, 'renewDeadlineSeconds'),
          retryPeriodSeconds: property(leaderElection, 'retryPeriodSeconds'),
          warmStandby: property(leaderElection, 'warmStandby'),
        },
      },
      port: { allOf: [property(server, 'port'), { minimum: 1, description: "the container port (the configuration's server.port)" }] },
      ...CHART_ONLY_PROPERTIES,
      webhooks: CHART_WEBHOOKS,
    },
  };
}
