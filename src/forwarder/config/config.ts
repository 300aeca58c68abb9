/**
 * Forwarder configuration: what to watch, where to send, and the timings of every stage.
 *
 * Sources, later ones winning: a YAML (or JSON) file named by `OPERLESS_FORWARDER_CONFIG`,
 * then environment overrides (`OPERLESS_CLUSTER`, `OPERLESS_QUEUE_URL`, `OPERLESS_BULK_QUEUE_URL`,
 * `OPERLESS_QUEUE_REGION`/`AWS_REGION`, `OPERLESS_LEADER_ELECTION`, `POD_NAME`,
 * `POD_NAMESPACE`, `OPERLESS_FORWARDER_PORT`, `OPERLESS_NAMESPACES`). The SQS endpoint for local brokers comes from
 * the AWS SDK's own `AWS_ENDPOINT_URL_SQS` (or `queue.endpoint` in the file).
 *
 * Queues: every primary watch may name its own `queueUrl`; a primary without one sends to the
 * top-level `queue.url` (the default queue, required only when some primary has no
 * `queueUrl`). Messages for an owned object go to its owner's kind's queue. A primary's resyncs
 * and relists go to its bulk queue when it has one (`bulkQueueUrl`, else `queue.bulkUrl` for the
 * primaries of `queue.url`; never a `.fifo` queue's). `queue.region`
 * and `queue.endpoint` apply to every queue (an AWS queue URL names its own region).
 *
 * Reading a configuration is four steps: the document with the environment applied (a field
 * set to null or "" is absent) → the ONE schema (schema.ts, compiled at build time;
 * it also fills in the defaults) → the rules across fields the schema cannot state
 * (checks.ts) → the typed `ForwarderConfig`.
 *
 * Guarantees: `parseConfig` either returns a complete, defaulted config or throws a
 * `ConfigError` whose message lists EVERY problem, each naming the offending field by its
 * path (`primaries[1].kind`) and saying what is expected. It does no I/O.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { checkAcrossFields, mapping, queueRegion } from './checks.ts';
import { Problems, schemaProblem, type SchemaError } from './problems.ts';
import type { RelatedMapping } from '../../contract/related.ts';
import {
  DEFAULT_OWNED_TRIGGERS,
  DEFAULT_PRIMARY_TRIGGERS,
  DEFAULT_RELATED_TRIGGERS,
  FORWARDER_CONFIG_SCHEMA,
  TRIGGERS,
  type Sink,
  type Trigger,
} from './schema.ts';
import { validate } from './validator.generated.ts';
import { NAMESPACES_ENV, splitNamespaceList } from '../../kube/scope.ts';

/** The compiled schema, as typed as its use needs: fills in defaults, leaves every failure in `errors`. */
const validateDocument = validate as ((document: unknown) => boolean) & { errors?: readonly SchemaError[] | null };

export { DEFAULT_OWNED_TRIGGERS, DEFAULT_PRIMARY_TRIGGERS, DEFAULT_RELATED_TRIGGERS, TRIGGERS, type Trigger };
export { regionOfQueueUrl } from './checks.ts';

export type WatchRole = 'primary' | 'owned' | 'related';

/** A primary kind a related watch maps to, and how a related object names its primaries. */
export interface RelatedTarget {
  readonly apiVersion: string;
  readonly kind: string;
  readonly map: RelatedMapping;
}

export interface WatchConfig {
  readonly role: WatchRole;
  readonly apiVersion: string;
  readonly kind: string;
  /** REST plural (`memcacheds`); when absent it is found by discovery at startup. */
  readonly plural?: string;
  /** Whether the kind is namespaced; when absent it is found by discovery at startup. */
  readonly namespaced?: boolean;
  /** Restrict to these namespaces; empty = the operator's `namespaces` (all namespaces when empty), or a cluster-scoped kind. */
  readonly namespaces: readonly string[];
  readonly labelSelector?: string;
  readonly triggers: readonly Trigger[];
  /** Primaries only: the queue this kind's messages (its own and its owned objects') go to; always set after parsing. */
  readonly queueUrl?: string;
  /** Primaries only: where this kind's messages go (`sqs`: queueUrl; `eventbridge`: the eventBus); always set after parsing. */
  readonly sink?: Sink;
  /** Primaries only: the bulk queue its resyncs and relists go to (sink/queues.ts); absent: they go to queueUrl. */
  readonly bulkQueueUrl?: string;
  /** Related watches only: the primaries a change maps to (at least one). */
  readonly targets?: readonly RelatedTarget[];
}

/** The EventBridge bus of the `eventbridge` sink. */
export interface EventBusConfig {
  /** Name or ARN; always set when some primary sends to eventbridge. */
  readonly name?: string;
  readonly source: string;
  /** Endpoint override (local emulators); the SDK's AWS_ENDPOINT_URL_EVENTBRIDGE works too. */
  readonly endpoint?: string;
}

export interface LeaderElectionConfig {
  readonly enabled: boolean;
  readonly leaseName: string;
  /** Namespace of the Lease; defaults to POD_NAMESPACE, else "default". */
  readonly namespace: string;
  /** This replica's identity; defaults to POD_NAME, else hostname + random suffix. */
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineSeconds: number;
  readonly retryPeriodSeconds: number;
  /** Followers keep their watches and stores; a takeover forwards only what the old leader may not have (docs/forwarder.md, "Warm standby"). */
  readonly warmStandby: boolean;
}

export interface ForwarderConfig {
  readonly clusterId: string;
  /**
   * The namespaces the operator runs for (kube/scope.ts); empty = cluster-wide. A namespaced
   * watch without namespaces of its own lists and watches in each of them (source/watches.ts).
   */
  readonly namespaces: readonly string[];
  readonly queue: {
    /** The default queue: `queue.url`, or the first primary's `queueUrl` when every primary names its own. */
    readonly url: string;
    readonly region: string;
    /** Endpoint override (local brokers); the SDK's AWS_ENDPOINT_URL_SQS works too. */
    readonly endpoint?: string;
    /** The bulk queue of the primaries that send to `url` (`queue.bulkUrl`). */
    readonly bulkUrl?: string;
  };
  readonly watches: readonly WatchConfig[];
  /** The default sink of the primaries. */
  readonly sink: Sink;
  readonly eventBus: EventBusConfig;
  /** Every distinct queue URL the primaries send to, in order of first use (one sender each). */
  readonly queues: readonly string[];
  /** Forward every object on start/leadership gain (reason Resync): heals changes missed while no leader ran. */
  readonly resyncOnStart: boolean;
  readonly coalesceWindowMs: number;
  /**
   * The longest a key's window grows to while its queue is backlogged (backlog.ts); equal to
   * `coalesceWindowMs` turns the widening (and its GetQueueAttributes sampling) off.
   */
  readonly coalesceMaxWindowMs: number;
  readonly buffer: { readonly maxMessages: number };
  readonly send: {
    readonly maxBatchBytes: number;
    /** Per-entry failures flagged SenderFault are retried at most this many times, then dropped (logged). */
    readonly maxSenderFaultRetries: number;
    readonly backoffInitialMs: number;
    readonly backoffMaxMs: number;
    readonly probeIntervalSeconds: number;
    /** An SQS connection must be up within this many ms (queue/sqs.ts). */
    readonly connectTimeoutMs: number;
    /**
     * An SQS request (SendMessageBatch, the probe, the depth sample) must get its response
     * headers within this many ms and may not stall longer mid-response; past it the call
     * fails, the batch goes back to the buffer and the lane reports its queue unreachable.
     */
    readonly requestTimeoutMs: number;
  };
  readonly watch: {
    /**
     * A watch that delivered nothing (not even a bookmark) for this long is restarted as a dead
     * connection. Every watch asks the server to close it a fifth of this earlier (see
     * `serverTimeoutSeconds`), so a healthy idle watch never reaches it.
     */
    readonly silenceTimeoutSeconds: number;
    /**
     * Server-side watch timeout requested (`timeoutSeconds`), at most `silenceTimeoutSeconds`
     * minus a fifth of it; the watch then resumes from its last resourceVersion.
     */
    readonly serverTimeoutSeconds: number;
    readonly backoffInitialMs: number;
    readonly backoffMaxMs: number;
    /** Page size of LIST requests. */
    readonly listPageSize: number;
  };
  readonly leaderElection: LeaderElectionConfig;
  readonly server: { readonly port: number; readonly host: string };
  /** The webhook endpoint (schema.ts `webhooks`). */
  readonly webhooks: WebhooksConfig;
  /** Milliseconds allowed to flush the buffer on SIGTERM (keep below terminationGracePeriodSeconds). */
  readonly shutdownGraceMs: number;
}

export interface WebhooksConfig {
  readonly enabled: boolean;
  readonly port: number;
  readonly host: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** Path alias → Lambda function name or ARN. */
  readonly functions: Readonly<Record<string, string>>;
  readonly lambdaEndpoint?: string;
  /** What the endpoint holds at most (webhook/server.ts). */
  readonly limits: WebhookLimits;
  /** Seconds the endpoint keeps answering after SIGTERM (within the shutdown grace), not ready meanwhile. */
  readonly drainSeconds: number;
  /** Caller authentication of the admission routes: on when caFile is set. */
  readonly clientAuth: { readonly caFile?: string; readonly names: readonly string[] };
}

export { DEFAULT_WEBHOOK_LIMITS } from './schema.ts';

/** What the webhook endpoint holds at most (config `webhooks.limits`; defaults DEFAULT_WEBHOOK_LIMITS). */
export interface WebhookLimits {
  /** Body limit of an AdmissionReview (routes default, validate). */
  readonly admissionBodyBytes: number;
  /** Body limit of a ConversionReview (route convert). */
  readonly conversionBodyBytes: number;
  /** Requests read or invoked at once. */
  readonly maxInFlightRequests: number;
  /** Bytes of the bodies of those requests together. */
  readonly maxInFlightBytes: number;
  /** Open connections (TLS included); more are closed on accept. */
  readonly maxConnections: number;
}

/** One watch as written in the file or passed in-process (see WatchConfig for meanings). */
export interface WatchInput {
  apiVersion: string;
  kind: string;
  plural?: string;
  namespaced?: boolean;
  namespaces?: string[];
  labelSelector?: string;
  triggers?: Trigger[];
  /** Primaries only: this kind's queue (default: queue.url). */
  queueUrl?: string;
  /** Primaries only: this kind's sink (default: the top-level sink). */
  sink?: Sink;
  /** Primaries only: this kind's bulk queue (default: queue.bulkUrl when it sends to queue.url). */
  bulkQueueUrl?: string;
  /** Related watches only: the primaries a change maps to, each with one of field, label, namespace. */
  for?: RelatedTargetInput[];
}

/** One entry of a related watch's `for`: a primary kind and exactly one way to find its objects. */
export interface RelatedTargetInput {
  apiVersion: string;
  kind: string;
  field?: string;
  label?: string;
  namespace?: boolean;
}

/**
 * The configuration document (YAML file, or an object passed to `startForwarder`): only
 * clusterId, queue and primaries are required; everything else has a default.
 */
export interface ForwarderConfigInput {
  clusterId?: string;
  namespaces?: string[];
  queue?: { url?: string; region?: string; endpoint?: string };
  sink?: Sink;
  eventBus?: { name?: string; source?: string; endpoint?: string };
  primaries?: WatchInput[];
  owned?: WatchInput[];
  related?: WatchInput[];
  resyncOnStart?: boolean;
  coalesceWindowMs?: number;
  coalesceMaxWindowMs?: number;
  buffer?: { maxMessages?: number };
  send?: Partial<{
    maxBatchBytes: number;
    maxSenderFaultRetries: number;
    backoffInitialMs: number;
    backoffMaxMs: number;
    probeIntervalSeconds: number;
    connectTimeoutMs: number;
    requestTimeoutMs: number;
  }>;
  watch?: Partial<{ silenceTimeoutSeconds: number; serverTimeoutSeconds: number; backoffInitialMs: number; backoffMaxMs: number; listPageSize: number }>;
  leaderElection?: Partial<LeaderElectionConfig>;
  server?: { port?: number; host?: string };
  webhooks?: Partial<Omit<WebhooksConfig, 'limits' | 'clientAuth'>> & {
    limits?: Partial<WebhookLimits>;
    clientAuth?: { caFile?: string; names?: readonly string[] };
  };
  shutdownGraceMs?: number;
}

const validated = new WeakSet<object>();

/** True for a config produced by parseConfig/loadConfig (so it is not validated twice). */
export function isValidatedConfig(value: unknown): value is ForwarderConfig {
  return typeof value === 'object' && value !== null && validated.has(value);
}

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[], source: string) {
    super(
      `invalid forwarder configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}\n` +
        'Fix these fields (see docs/forwarder.md for every field) and start again.',
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** The environment variables the forwarder reads (a subset of process.env). */
export type ForwarderEnv = Readonly<Record<string, string | undefined>>;

type Raw = Record<string, unknown>;

/** A copy of the document without its absent fields: a mapping's entries set to null or "" (list items are kept, and checked). */
function withoutEmptyFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEmptyFields);
  const fields = mapping(value);
  if (!fields) return value;
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([, v]) => v !== null && v !== '' && v !== undefined)
      .map(([k, v]) => [k, withoutEmptyFields(v)]),
  );
}

/** An environment value for a boolean field: "true"/"false" as booleans, anything else as written (for the schema to refuse). */
const envBoolean = (text: string): unknown => (text === 'true' ? true : text === 'false' ? false : text);
/** An environment value for a number field: a numeral as a number, anything else as written. */
const envNumber = (text: string): unknown => (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text);

/**
 * The document with the environment applied: OPERLESS_CLUSTER, OPERLESS_NAMESPACES (a
 * comma-separated list), OPERLESS_QUEUE_URL, OPERLESS_BULK_QUEUE_URL, OPERLESS_QUEUE_REGION, OPERLESS_LEADER_ELECTION
 * and OPERLESS_FORWARDER_PORT override the
 * file; AWS_REGION/AWS_DEFAULT_REGION, POD_NAMESPACE and POD_NAME fill in what it leaves out.
 * A section that is not a mapping is left as it is, for the schema to report.
 */
function withEnvironment(document: Raw, env: ForwarderEnv): Raw {
  const section = (name: string): Raw | undefined => {
    const value = document[name];
    return value === undefined ? {} : mapping(value) ? { ...(value as Raw) } : undefined;
  };
  const merged: Raw = { ...document, clusterId: env.OPERLESS_CLUSTER || document.clusterId };
  const scope = env[NAMESPACES_ENV];
  if (scope !== undefined && scope.trim() !== '') merged.namespaces = splitNamespaceList(scope);
  const queue = section('queue');
  if (queue)
    merged.queue = {
      ...queue,
      url: env.OPERLESS_QUEUE_URL || queue.url,
      bulkUrl: env.OPERLESS_BULK_QUEUE_URL || queue.bulkUrl,
      region: env.OPERLESS_QUEUE_REGION || queue.region || env.AWS_REGION || env.AWS_DEFAULT_REGION,
    };
  const leaderElection = section('leaderElection');
  if (leaderElection) {
    merged.leaderElection = {
      ...leaderElection,
      enabled: env.OPERLESS_LEADER_ELECTION === undefined ? leaderElection.enabled : envBoolean(env.OPERLESS_LEADER_ELECTION),
      namespace: leaderElection.namespace ?? env.POD_NAMESPACE,
      identity: leaderElection.identity ?? env.POD_NAME,
    };
  }
  const server = section('server');
  if (server && env.OPERLESS_FORWARDER_PORT !== undefined) merged.server = { ...server, port: envNumber(env.OPERLESS_FORWARDER_PORT) };
  return merged;
}

/** The document as the schema validated and defaulted it (what `configOf` may rely on). */
interface ValidDocument {
  clusterId: string;
  namespaces: string[];
  queue: { url?: string; bulkUrl?: string; region?: string; endpoint?: string };
  sink: Sink;
  eventBus: { name?: string; source: string; endpoint?: string };
  primaries: WatchInput[];
  owned: WatchInput[];
  related: WatchInput[];
  resyncOnStart: boolean;
  coalesceWindowMs: number;
  coalesceMaxWindowMs?: number;
  buffer: ForwarderConfig['buffer'];
  send: ForwarderConfig['send'];
  watch: ForwarderConfig['watch'];
  leaderElection: Omit<LeaderElectionConfig, 'namespace' | 'identity'> & { namespace?: string; identity?: string };
  server: ForwarderConfig['server'];
  webhooks: WebhooksConfig;
  shutdownGraceMs: number;
}

function watchOf(input: WatchInput, role: WatchRole, defaultQueueUrl: string, defaultSink: Sink, defaultBulkUrl?: string): WatchConfig {
  const sink = role === 'primary' ? (input.sink ?? defaultSink) : undefined;
  const queueUrl = sink === 'sqs' ? (input.queueUrl ?? defaultQueueUrl) : undefined;
  const bulkQueueUrl = queueUrl === undefined ? undefined : (input.bulkQueueUrl ?? (queueUrl === defaultQueueUrl ? defaultBulkUrl : undefined));
  return {
    role,
    apiVersion: input.apiVersion,
    kind: input.kind,
    ...(input.plural ? { plural: input.plural } : {}),
    ...(input.namespaced !== undefined ? { namespaced: input.namespaced } : {}),
    namespaces: input.namespaces ?? [],
    ...(input.labelSelector ? { labelSelector: input.labelSelector } : {}),
    triggers: input.triggers ?? { primary: DEFAULT_PRIMARY_TRIGGERS, owned: DEFAULT_OWNED_TRIGGERS, related: DEFAULT_RELATED_TRIGGERS }[role],
    ...(queueUrl ? { queueUrl } : {}),
    ...(bulkQueueUrl ? { bulkQueueUrl } : {}),
    ...(sink ? { sink } : {}),
    ...(role === 'related' ? { targets: (input.for ?? []).map(targetOf) } : {}),
  };
}

/** The mapping of a `for` entry the checks accepted (exactly one of field, label, namespace). */
function targetOf(input: RelatedTargetInput): RelatedTarget {
  const map: RelatedMapping = input.field !== undefined ? { field: input.field } : input.label !== undefined ? { label: input.label } : { namespace: true };
  return { apiVersion: input.apiVersion, kind: input.kind, map };
}

/** The typed configuration of a document that passed the schema and the checks. */
function configOf(document: ValidDocument, region: string, env: ForwarderEnv): ForwarderConfig {
  const defaultQueueUrl = document.queue.url ?? document.primaries.find((w) => w.queueUrl)?.queueUrl ?? '';
  const watches = [
    ...document.primaries.map((w) => watchOf(w, 'primary', defaultQueueUrl, document.sink, document.queue.bulkUrl)),
    ...document.owned.map((w) => watchOf(w, 'owned', defaultQueueUrl, document.sink)),
    ...document.related.map((w) => watchOf(w, 'related', defaultQueueUrl, document.sink)),
  ];
  const { name: bus, source, endpoint } = document.eventBus;
  const { namespace, identity, ...leaderElection } = document.leaderElection;
  return {
    clusterId: document.clusterId,
    namespaces: [...new Set(document.namespaces)].sort(),
    queue: {
      url: defaultQueueUrl,
      region,
      ...(document.queue.endpoint ? { endpoint: document.queue.endpoint } : {}),
      ...(document.queue.bulkUrl ? { bulkUrl: document.queue.bulkUrl } : {}),
    },
    watches,
    sink: document.sink,
    eventBus: { ...(bus ? { name: bus } : {}), source, ...(endpoint ? { endpoint } : {}) },
    queues: [...new Set(watches.flatMap((w) => (w.queueUrl ? [w.queueUrl] : [])))],
    resyncOnStart: document.resyncOnStart,
    coalesceWindowMs: document.coalesceWindowMs,
    coalesceMaxWindowMs: document.coalesceMaxWindowMs ?? Math.max(30_000, document.coalesceWindowMs),
    buffer: document.buffer,
    send: document.send,
    watch: document.watch,
    leaderElection: {
      ...leaderElection,
      namespace: namespace ?? 'default',
      identity: identity ?? `${env.HOSTNAME || 'forwarder'}-${Math.random().toString(36).slice(2, 8)}`,
    },
    server: document.server,
    webhooks: document.webhooks,
    shutdownGraceMs: document.shutdownGraceMs,
  };
}

/**
 * Validates a raw config document merged with environment overrides. Throws ConfigError
 * listing every problem.
 */
export function parseConfig(document: unknown, env: ForwarderEnv = {}, source = 'configuration'): ForwarderConfig {
  const root = document === undefined || document === null ? {} : mapping(document);
  const candidate = withoutEmptyFields(root ? withEnvironment(root, env) : document);
  const problems = new Problems();
  if (!validateDocument(candidate)) {
    for (const error of validateDocument.errors ?? []) problems.add(...schemaProblem(error, candidate, FORWARDER_CONFIG_SCHEMA));
  }
  checkAcrossFields(candidate, problems);
  if (problems.size > 0) throw new ConfigError(problems.lines(), source);
  const config = configOf(candidate as ValidDocument, queueRegion(candidate as Raw, problems) ?? '', env);
  validated.add(config);
  return config;
}

/**
 * Reads the config file named by `OPERLESS_FORWARDER_CONFIG` (if set) and applies env
 * overrides. Throws ConfigError for unreadable or invalid files, naming the path.
 */
export function loadConfig(env: ForwarderEnv = process.env): ForwarderConfig {
  const path = env.OPERLESS_FORWARDER_CONFIG;
  if (!path) return parseConfig({}, env, 'environment only; set OPERLESS_FORWARDER_CONFIG to a YAML file to configure watches');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`OPERLESS_FORWARDER_CONFIG: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`], path);
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (err) {
    throw new ConfigError([`${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`], path);
  }
  return parseConfig(document ?? {}, env, path);
}
