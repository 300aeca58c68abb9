/**
 * The forwarder's configuration schema: the ONE JSON Schema (draft-07) of the configuration
 * document (the `OPERLESS_FORWARDER_CONFIG` file with the environment overrides applied, or the
 * object given to `startForwarder`). Every field's type, range, pattern and default is written
 * here and nowhere else:
 *
 * - the forwarder validates with the validator compiled from this schema at build time
 *   (validator.generated.ts, written by `node scripts/config-schema.ts`);
 * - the Helm chart's `values.schema.json` is generated from it (chart-schema.ts), so the
 *   chart refuses at install time what the forwarder would refuse at start-up;
 * - names are checked by the contract's own rules (`NAME_SCHEMAS`, src/contract/names.ts), so a
 *   configured kind is one the message contract accepts.
 *
 * Two annotation keywords carry the wording of problems (problems.ts): `x-expected`
 * says what a value must be ("a Kind in PascalCase, e.g. …"), `x-messages` replaces the
 * message of one keyword's failure. Defaults are the schema's `default`s; the few that depend
 * on other fields or on the environment (`coalesceMaxWindowMs`, `queue.region`, a primary's
 * `queueUrl`, `leaderElection.namespace`/`identity`) are applied by config.ts and documented
 * in their `description`. The schema describes the normalised document: a field set to null
 * or "" is absent (it gets its default).
 */
import { NAME_SCHEMAS } from '../../contract/names.ts';
import { FIELD_PATH_MAX_LENGTH, FIELD_PATH_PATTERN } from '../../contract/related.ts';
import { DEFAULT_SQS_TIMEOUTS } from '../../queue/sender.ts';

const MiB = 1024 * 1024;
/** The webhook endpoint's bounds by default (config `webhooks.limits`; reasons in docs/forwarder.md, "Webhooks"). */
export const DEFAULT_WEBHOOK_LIMITS = {
  /** An object and its old object, each at most etcd's default 1.5 MiB request, and the review's envelope. */
  admissionBodyBytes: 4 * MiB,
  /** Lambda's synchronous invocation payload limit (6 MB). */
  conversionBodyBytes: 6 * MiB,
  maxInFlightRequests: 32,
  maxInFlightBytes: 16 * MiB,
  maxConnections: 256,
} as const;

/** Which changes of an object make the forwarder send a message. */
export const TRIGGERS = ['generation', 'labels', 'annotations', 'finalizers', 'deletion', 'ownerReferences', 'status', 'any'] as const;
export type Trigger = (typeof TRIGGERS)[number];

/**
 * Primaries ignore status-only writes (they would loop back from the reconciler's own status
 * updates) and finalizer-only changes: the runtime adds its finalizer in the reconcile that
 * needs it, so that event would only reconcile again for nothing (docs/benchmarks.md); a
 * finalizer removed by hand is restored by the next event or the periodic Resync. Opt in with
 * `finalizers`.
 */
export const DEFAULT_PRIMARY_TRIGGERS: readonly Trigger[] = ['generation', 'labels', 'annotations', 'deletion'];
/** Owned objects forward status changes too: the owner's status depends on them. */
export const DEFAULT_OWNED_TRIGGERS: readonly Trigger[] = ['any'];
/** Related objects (ConfigMap, Secret): their data and labels (a label mapping reads them); creation and deletion always. */
export const DEFAULT_RELATED_TRIGGERS: readonly Trigger[] = ['generation', 'labels', 'deletion'];

/** Where a primary kind's messages go: its SQS queue, or the EventBridge bus (`eventBus`). */
export const SINKS = ['sqs', 'eventbridge'] as const;
export type Sink = (typeof SINKS)[number];

/** The subset of JSON Schema (draft-07) the configuration schema and the chart's schema use. */
export interface JsonSchema {
  $schema?: string;
  $comment?: string;
  $ref?: string;
  title?: string;
  description?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | readonly ('integer' | 'string')[];
  properties?: Record<string, JsonSchema | boolean>;
  required?: readonly string[];
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  minItems?: number;
  enum?: readonly string[];
  const?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  default?: unknown;
  not?: JsonSchema;
  allOf?: readonly JsonSchema[];
  anyOf?: readonly JsonSchema[];
  oneOf?: readonly JsonSchema[];
  /** Draft-07 conditionals (the chart's schema only: chart-schema.ts). */
  if?: JsonSchema;
  then?: JsonSchema;
  definitions?: Record<string, JsonSchema>;
  /** What a valid value is, for problems: "must be <x-expected>, got …". */
  'x-expected'?: string;
  /** The whole message of a failure of one keyword (`not`, `minItems`, `required`), replacing the generic one. */
  'x-messages'?: Readonly<Partial<Record<'not' | 'minItems' | 'required', string>>>;
}

const ref = (definition: string, extra: JsonSchema = {}): JsonSchema => ({ $ref: `#/definitions/${definition}`, ...extra });
const integer = (minimum: number, maximum: number, defaultValue: number | undefined, description: string): JsonSchema => ({
  type: 'integer',
  minimum,
  maximum,
  ...(defaultValue === undefined ? {} : { default: defaultValue }),
  description,
});
const seconds = (minimum: number, maximum: number, defaultValue: number, description: string): JsonSchema => ({
  type: 'number',
  minimum,
  maximum,
  default: defaultValue,
  description,
});
const section = (description: string, properties: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  default: {},
  description,
  properties,
});

const DEFAULT_TRIGGERS = { primary: DEFAULT_PRIMARY_TRIGGERS, owned: DEFAULT_OWNED_TRIGGERS, related: DEFAULT_RELATED_TRIGGERS } as const;

/** One primary a related kind maps to, and how (exactly one of field, label, namespace: checks.ts). */
const RELATED_TARGET: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind'],
  'x-expected': 'a mapping with apiVersion and kind of a primary, and one of field, label, namespace',
  properties: {
    apiVersion: ref('apiVersion'),
    kind: ref('kind'),
    field: {
      type: 'string',
      pattern: FIELD_PATH_PATTERN,
      maxLength: FIELD_PATH_MAX_LENGTH,
      'x-expected': 'a path into the primary\'s spec, e.g. "spec.configMapRef.name"',
      description:
        "the primaries (same namespace) whose string field at this path names the related object; the forwarder keeps that field's value per primary",
    },
    label: {
      type: 'string',
      minLength: 1,
      maxLength: 317,
      'x-expected': 'a label key, e.g. "cache.example.com/memcached"',
      description: 'the primary (same namespace) named by the value of this label on the related object',
    },
    namespace: { type: 'boolean', description: "true: every primary in the related object's namespace" },
  },
};

/** The fields of every kind of watch; a primary adds its queueUrl, a related watch its primaries (`for`), an owned watch refuses both. */
function watchDefinition(role: 'primary' | 'owned' | 'related'): JsonSchema {
  const primary = role === 'primary';
  return {
    type: 'object',
    additionalProperties: false,
    required: ['apiVersion', 'kind'],
    'x-expected': 'a mapping with apiVersion and kind',
    properties: {
      apiVersion: ref('apiVersion'),
      kind: ref('kind'),
      plural: ref('plural', { description: 'REST resource name; found by discovery when absent (the Helm chart requires it: RBAC is generated from it)' }),
      namespaced: { type: 'boolean', description: 'whether the kind is namespaced; found by discovery when absent (required by the Helm chart)' },
      namespaces: {
        type: 'array',
        items: ref('namespace'),
        default: [],
        'x-expected': 'a list of namespace names',
        description:
          'restrict the watch to these namespaces; empty = the top-level namespaces (all namespaces when that is empty). Within the top-level namespaces when set; must be empty for a cluster-scoped kind',
      },
      labelSelector: { type: 'string', description: "a label selector in the API server's grammar (a=b, a!=b, a in (x,y), !a, …), checked at start-up" },
      triggers: {
        type: 'array',
        minItems: 1,
        items: ref('trigger'),
        default: [...DEFAULT_TRIGGERS[role]],
        'x-expected': `a non-empty list of ${TRIGGERS.join(', ')}`,
        description: 'which changes of an object send a message',
      },
      queueUrl: primary
        ? ref('queueUrl', { description: "this kind's SQS queue (and its owned objects'); default queue.url" })
        : {
            not: {},
            'x-messages': {
              not: `is not a field of ${role === 'owned' ? "an owned watch: an owned object's message goes to its owner's queue" : "a related watch: a related object's messages go to the queues of the primaries it maps to"} (set queueUrl on the primary)`,
            },
          },
      bulkQueueUrl: primary
        ? ref('queueUrl', {
            description:
              'this kind\'s bulk queue: its resyncs and relists go there, consumed at a lower concurrency, so a live change never waits behind them (docs/forwarder.md, "Live changes before the backlog"); default queue.bulkUrl when the kind sends to queue.url; not for a .fifo queue',
          })
        : { not: {}, 'x-messages': { not: `is not a field of ${role === 'owned' ? 'an owned watch' : 'a related watch'} (set bulkQueueUrl on the primary)` } },
      sink: primary
        ? ref('sink', { description: "where this kind's messages (and its owned objects') go; default the top-level sink" })
        : {
            not: {},
            'x-messages': {
              not: `is not a field of ${role === 'owned' ? "an owned watch: an owned object's message goes where its owner's go (set sink on the owner's primary)" : "a related watch: a related object's messages go where the primaries it maps to send theirs"}`,
            },
          },
      ...(role === 'related'
        ? {
            for: {
              type: 'array',
              minItems: 1,
              items: RELATED_TARGET,
              'x-expected': 'a non-empty list of primaries with their mapping',
              description: 'the primaries a change of this kind reconciles, and how an object names them',
            },
          }
        : {}),
    },
    ...(role === 'related' ? { required: ['apiVersion', 'kind', 'for'] } : {}),
  };
}

export const FORWARDER_CONFIG_SCHEMA: JsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Operless forwarder configuration',
  description: 'See docs/forwarder.md, "Configuration". A field set to null or "" is absent and gets its default.',
  type: 'object',
  additionalProperties: false,
  required: ['clusterId', 'primaries'],
  definitions: {
    apiVersion: { type: 'string', ...NAME_SCHEMAS.apiVersion, 'x-expected': 'an apiVersion like "v1", "apps/v1" or "cache.example.com/v1alpha1"' },
    kind: { type: 'string', ...NAME_SCHEMAS.kind, 'x-expected': 'a Kind in PascalCase, e.g. "Memcached"' },
    plural: { type: 'string', ...NAME_SCHEMAS.dnsLabel, 'x-expected': 'the lower-case REST plural, e.g. "memcacheds"' },
    namespace: { type: 'string', ...NAME_SCHEMAS.dnsLabel, 'x-expected': 'a namespace name (DNS-1123 label)' },
    leaseName: { type: 'string', ...NAME_SCHEMAS.dnsSubdomain, 'x-expected': 'a Lease name (DNS-1123 subdomain)' },
    clusterId: { type: 'string', ...NAME_SCHEMAS.clusterId, 'x-expected': 'a cluster id: letters, digits, "-", "_" or "." (env OPERLESS_CLUSTER)' },
    queueUrl: {
      type: 'string',
      pattern: '^https?://[^/\\s]+/\\S+$',
      'x-expected': 'an http(s) queue URL, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/operless-work',
    },
    region: { type: 'string', pattern: '^[a-z]{2}(-[a-z]+)+-\\d+$', 'x-expected': 'an AWS region like "eu-west-1" (env OPERLESS_QUEUE_REGION or AWS_REGION)' },
    endpoint: { type: 'string', pattern: '^https?://\\S+$', 'x-expected': 'an http(s) URL' },
    sink: { enum: SINKS, 'x-expected': `one of ${SINKS.join(', ')}` },
    trigger: { enum: TRIGGERS, 'x-expected': `one of ${TRIGGERS.join(', ')}` },
    primary: watchDefinition('primary'),
    owned: watchDefinition('owned'),
    related: watchDefinition('related'),
  },
  properties: {
    clusterId: ref('clusterId', { description: 'cluster id written into every message; env OPERLESS_CLUSTER' }),
    namespaces: {
      type: 'array',
      items: ref('namespace'),
      default: [],
      'x-expected': 'a list of namespace names (env OPERLESS_NAMESPACES: comma-separated)',
      description:
        'the namespaces the operator runs for (namespace-scoped mode): every namespaced watch lists and watches in each of them only, and the chart grants a Role per namespace instead of a ClusterRole; empty = all namespaces. Env OPERLESS_NAMESPACES (comma-separated) overrides it. See docs/security.md, "Namespace-scoped operation"',
    },
    queue: section('the default queue and what applies to every queue', {
      url: ref('queueUrl', { description: 'the default SQS queue URL (env OPERLESS_QUEUE_URL): required unless every primary sets queueUrl' }),
      bulkUrl: ref('queueUrl', {
        description:
          'the bulk queue of the primaries that send to url (env OPERLESS_BULK_QUEUE_URL): their resyncs and relists go there instead, so a live change never waits behind them; absent: everything goes to url. Not for a .fifo url',
      }),
      region: ref('region', {
        description: 'env OPERLESS_QUEUE_REGION, else this, else AWS_REGION / AWS_DEFAULT_REGION, else the region an AWS queue URL names',
      }),
      endpoint: ref('endpoint', { description: "endpoint override for SQS-compatible local brokers (the SDK's AWS_ENDPOINT_URL_SQS works too)" }),
    }),
    sink: ref('sink', { default: 'sqs', description: 'where messages go unless a primary says otherwise: sqs (its queue) or eventbridge (the eventBus)' }),
    eventBus: section('the EventBridge bus of the eventbridge sink (docs/forwarder.md, "EventBridge sink")', {
      name: {
        type: 'string',
        pattern: '^([A-Za-z0-9._/-]{1,256}|arn:aws[a-z-]*:events:[a-z0-9-]+:\\d{12}:event-bus/[A-Za-z0-9._/-]{1,256})$',
        'x-expected': 'an event bus name (letters, digits, ".", "_", "-", "/") or its ARN, e.g. operless',
        description: 'the bus PutEvents sends to: required when some primary sends to eventbridge',
      },
      source: {
        // No lookahead: the chart's schema is also read by helm (Go's RE2).
        type: 'string',
        pattern: '^[A-Za-z0-9._-]{1,256}$',
        not: { pattern: '^aws\\.' },
        default: 'operless',
        'x-expected': 'an event source: letters, digits, ".", "_" or "-", not starting with "aws."',
        'x-messages': { not: 'must not start with "aws." (reserved for AWS services)' },
        description: "the events' source (rules match on it)",
      },
      endpoint: ref('endpoint', { description: "endpoint override for a local emulator (the SDK's AWS_ENDPOINT_URL_EVENTBRIDGE works too)" }),
    }),
    primaries: {
      type: 'array',
      minItems: 1,
      items: ref('primary'),
      'x-expected': 'a list of watches',
      description: 'the primary kinds: a message per change of the object itself',
      'x-messages': {
        required:
          'must list at least one primary kind to watch, e.g. [{ apiVersion: cache.example.com/v1alpha1, kind: Memcached, plural: memcacheds, namespaced: true }]',
        minItems:
          'must list at least one primary kind to watch, e.g. [{ apiVersion: cache.example.com/v1alpha1, kind: Memcached, plural: memcacheds, namespaced: true }]',
      },
    },
    owned: {
      type: 'array',
      items: ref('owned'),
      default: [],
      'x-expected': 'a list of watches',
      description: "owned kinds: a change maps through the controller owner reference to the owner's message",
    },
    related: {
      type: 'array',
      items: ref('related'),
      default: [],
      'x-expected': 'a list of watches',
      description: 'related kinds (ConfigMap, Secret, …): a change maps to the primaries that refer to the object (field, label or namespace), reason Related',
    },
    watches: {
      not: {},
      'x-messages': { not: 'is not a field; list primary kinds under "primaries", owned kinds under "owned" and related kinds under "related"' },
    },
    resyncOnStart: { type: 'boolean', default: true, description: 'forward every object on start and on gaining leadership (reason Resync)' },
    coalesceWindowMs: integer(0, 60_000, 500, 'changes of one object within this window become one message; 0 = send at once'),
    coalesceMaxWindowMs: integer(
      0,
      600_000,
      undefined,
      'the window under a backlog grows up to this (default: the larger of 30000 and coalesceWindowMs); equal to coalesceWindowMs turns the widening off',
    ),
    buffer: section('the bounded buffer of messages waiting to be sent', {
      maxMessages: integer(10, 10_000_000, 10_000, 'messages held at most; beyond, the oldest are dropped (logged, counted)'),
    }),
    send: section('SendMessageBatch settings', {
      maxBatchBytes: integer(4096, 1024 * 1024, 256 * 1024, 'bytes per SendMessageBatch call (SQS allows up to 1 MiB)'),
      maxSenderFaultRetries: integer(0, 1000, 5, 'per-entry SenderFault failures are retried at most this many times, then dropped (logged)'),
      backoffInitialMs: integer(1, 60_000, 200, 'first retry delay after a failed send'),
      backoffMaxMs: integer(1, 600_000, 30_000, 'longest retry delay; at least backoffInitialMs'),
      probeIntervalSeconds: integer(1, 3600, 60, 'GetQueueAttributes while idle (readiness)'),
      connectTimeoutMs: integer(
        100,
        600_000,
        DEFAULT_SQS_TIMEOUTS.connectTimeoutMs,
        'an SQS connection must be up within this many ms; at most requestTimeoutMs',
      ),
      requestTimeoutMs: integer(
        100,
        600_000,
        DEFAULT_SQS_TIMEOUTS.requestTimeoutMs,
        'an SQS request must answer within this many ms and not stall longer; past it the batch goes back to the buffer and /readyz names the queue',
      ),
    }),
    watch: section('watch and LIST settings', {
      silenceTimeoutSeconds: integer(2, 3600, 75, 'a watch that delivered nothing (not even a bookmark) for this long is restarted as a dead connection'),
      serverTimeoutSeconds: integer(1, 3600, 60, 'watch timeout asked of the server; capped at silenceTimeoutSeconds minus a fifth'),
      backoffInitialMs: integer(1, 60_000, 800, 'first delay before re-watching after a failure'),
      backoffMaxMs: integer(1, 600_000, 30_000, 'longest delay before re-watching; at least backoffInitialMs'),
      listPageSize: integer(1, 10_000, 500, 'page size of LIST requests'),
    }),
    leaderElection: section('one replica sends at a time, holding a Lease', {
      enabled: { type: 'boolean', default: false, description: 'env OPERLESS_LEADER_ELECTION' },
      leaseName: ref('leaseName', { default: 'operless-forwarder' }),
      namespace: ref('namespace', { description: 'namespace of the Lease; default env POD_NAMESPACE, else "default"' }),
      identity: { type: 'string', description: "this replica's identity; default env POD_NAME, else the host name and a random suffix" },
      leaseDurationSeconds: seconds(1, 3600, 15, 'how long a Lease is held without renewal'),
      renewDeadlineSeconds: seconds(0.5, 3600, 10, 'the leader stops sending unless it renewed within this; below leaseDurationSeconds'),
      retryPeriodSeconds: seconds(0.1, 600, 2, 'how often the Lease is tried; below renewDeadlineSeconds'),
      warmStandby: {
        type: 'boolean',
        default: true,
        description:
          'followers keep their watches and stores, so a takeover neither relists nor resends what the old leader forwarded (docs/forwarder.md, "Warm standby")',
      },
    }),
    server: section('the probe and metrics server', {
      port: integer(0, 65535, 8080, 'env OPERLESS_FORWARDER_PORT; 0 = any free port'),
      host: { type: 'string', default: '0.0.0.0', description: 'an address or host name to listen on, e.g. 0.0.0.0, :: or 127.0.0.1' },
    }),
    webhooks: section(
      'the HTTPS endpoint of admission and conversion webhooks, served by every replica (docs/architecture.md, "Webhooks are functions behind the forwarder")',
      {
        enabled: { type: 'boolean', default: false, description: 'serve POST /<function>/<default|validate|convert> and invoke the function synchronously' },
        port: integer(0, 65535, 9443, '0 = any free port'),
        host: { type: 'string', default: '0.0.0.0', description: 'an address or host name to listen on' },
        certFile: {
          type: 'string',
          minLength: 1,
          default: '/etc/operless-webhook-tls/tls.crt',
          description: 'PEM serving certificate (chain), e.g. from the Secret cert-manager or the chart writes',
        },
        keyFile: { type: 'string', minLength: 1, default: '/etc/operless-webhook-tls/tls.key', description: 'PEM private key of certFile' },
        functions: {
          type: 'object',
          default: {},
          'x-expected': 'a mapping of path alias (DNS label) to Lambda function name or ARN',
          additionalProperties: { type: 'string', pattern: '^[A-Za-z0-9:_.-]{1,170}$', 'x-expected': 'a Lambda function name or ARN' },
          description: 'the functions the endpoint may invoke, by the alias in its path; nothing else is invoked',
        },
        lambdaEndpoint: ref('endpoint', {
          description: "endpoint override for the Lambda API (the local runner's Invoke API); the SDK's AWS_ENDPOINT_URL_LAMBDA works too",
        }),
        drainSeconds: seconds(
          0,
          60,
          5,
          'on SIGTERM the endpoint goes on answering this long (within shutdownGraceMs) while /readyz/webhooks says not ready, so the Service takes the pod out before it closes',
        ),
        clientAuth: section(
          'authentication of the caller of the admission routes by the API server\'s client certificate (docs/forwarder.md, "Webhooks": callers); needs the API server\'s AdmissionConfiguration, so off unless caFile is set',
          {
            caFile: {
              type: 'string',
              minLength: 1,
              description:
                "PEM CA(s) the API server's client certificate chains to; set: default and validate answer 401 to any other caller (convert stays open: the API server presents no client certificate to conversion webhooks)",
            },
            names: {
              type: 'array',
              items: { type: 'string', minLength: 1, maxLength: 253 },
              default: [],
              description: 'subject common names accepted (empty: any certificate caFile signed)',
            },
          },
        ),
        limits: section('what the endpoint holds at most, whatever callers send (docs/forwarder.md, "Webhooks": bounds)', {
          admissionBodyBytes: integer(
            1024,
            6 * 1024 * 1024,
            DEFAULT_WEBHOOK_LIMITS.admissionBodyBytes,
            "body limit of an AdmissionReview (default, validate): an object and its old object, each at most etcd's 1.5 MiB, and the envelope",
          ),
          conversionBodyBytes: integer(1024, 64 * 1024 * 1024, DEFAULT_WEBHOOK_LIMITS.conversionBodyBytes, 'body limit of a ConversionReview (convert)'),
          maxInFlightRequests: integer(1, 10_000, DEFAULT_WEBHOOK_LIMITS.maxInFlightRequests, 'requests read or invoked at once; past it 429 with Retry-After'),
          maxInFlightBytes: integer(
            64 * 1024,
            1024 * 1024 * 1024,
            DEFAULT_WEBHOOK_LIMITS.maxInFlightBytes,
            'bytes of the bodies in flight together; past it 429 with Retry-After (memory ≈ 5× this at most)',
          ),
          maxConnections: integer(1, 100_000, DEFAULT_WEBHOOK_LIMITS.maxConnections, 'open connections; more are closed on accept'),
        }),
      },
    ),
    shutdownGraceMs: integer(0, 600_000, 20_000, 'milliseconds allowed to flush the buffer on SIGTERM (keep below terminationGracePeriodSeconds)'),
  },
};
