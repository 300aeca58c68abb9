/**
 * Forwarder configuration: what to watch, where to send, and the timings of every stage.
 *
 * Sources, later ones winning: a YAML (or JSON) file named by `OPERLESS_FORWARDER_CONFIG`,
 * then environment overrides (`OPERLESS_CLUSTER`, `OPERLESS_QUEUE_URL`,
 * `OPERLESS_QUEUE_REGION`/`AWS_REGION`, `OPERLESS_LEADER_ELECTION`, `POD_NAME`,
 * `POD_NAMESPACE`, `OPERLESS_FORWARDER_PORT`). The SQS endpoint for local brokers comes from
 * the AWS SDK's own `AWS_ENDPOINT_URL_SQS` (or `queue.endpoint` in the file).
 *
 * Queues: every primary watch may name its own `queueUrl`; a primary without one sends to the
 * top-level `queue.url` (the default queue, required only when some primary has no
 * `queueUrl`). Messages for an owned object go to its owner's kind's queue. `queue.region`
 * and `queue.endpoint` apply to every queue (an AWS queue URL names its own region).
 *
 * Guarantees: `parseConfig` either returns a complete, defaulted, frozen-shape config or
 * throws a `ConfigError` whose message lists EVERY problem, each naming the offending field
 * by its path (`watches[1].kind`) and saying what is expected. It does no I/O.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_SQS_TIMEOUTS } from '../queue/sender.ts';
import { labelSelectorProblem } from './label-selector.ts';

/** An IPv4/IPv6 address or a host name (what `server.listen` takes), no spaces or ports. */
const LISTEN_HOST = /^(\[?[0-9A-Fa-f:.]+\]?|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)$/;

/** Which changes of an object make the forwarder send a message. */
export const TRIGGERS = ['generation', 'labels', 'annotations', 'finalizers', 'deletion', 'ownerReferences', 'status', 'any'] as const;
export type Trigger = (typeof TRIGGERS)[number];

/**
 * Primaries ignore status-only writes (they would loop back from the reconciler's own status
 * updates) and finalizer-only changes: the runtime adds its finalizer in the reconcile that
 * needs it, so that event would only reconcile again for nothing (988 wasted reconciles of
 * 6,900 when 1,000 objects were created at once: docs/benchmarks.md); a finalizer removed by
 * hand is restored by the next event or the periodic Resync. Opt in with `finalizers`.
 */
export const DEFAULT_PRIMARY_TRIGGERS: readonly Trigger[] = ['generation', 'labels', 'annotations', 'deletion'];
/** Owned objects forward status changes too: the owner's status depends on them. */
export const DEFAULT_OWNED_TRIGGERS: readonly Trigger[] = ['any'];

export type WatchRole = 'primary' | 'owned';

export interface WatchConfig {
  readonly role: WatchRole;
  readonly apiVersion: string;
  readonly kind: string;
  /** REST plural (`memcacheds`); when absent it is found by discovery at startup. */
  readonly plural?: string;
  /** Whether the kind is namespaced; when absent it is found by discovery at startup. */
  readonly namespaced?: boolean;
  /** Restrict to these namespaces; empty = all namespaces (or cluster-scoped). */
  readonly namespaces: readonly string[];
  readonly labelSelector?: string;
  readonly triggers: readonly Trigger[];
  /** Primaries only: the queue this kind's messages (its own and its owned objects') go to; always set after parsing. */
  readonly queueUrl?: string;
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
}

export interface ForwarderConfig {
  readonly clusterId: string;
  readonly queue: {
    /** The default queue: `queue.url`, or the first primary's `queueUrl` when every primary names its own. */
    readonly url: string;
    readonly region: string;
    /** Endpoint override (local brokers); the SDK's AWS_ENDPOINT_URL_SQS works too. */
    readonly endpoint?: string;
  };
  readonly watches: readonly WatchConfig[];
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
    /** An SQS connection must be up within this many ms (queue-client.ts). */
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
  /** Milliseconds allowed to flush the buffer on SIGTERM (keep below terminationGracePeriodSeconds). */
  readonly shutdownGraceMs: number;
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
}

/**
 * The configuration document (YAML file, or an object passed to `startForwarder`): only
 * clusterId, queue and primaries are required; everything else has a default.
 */
export interface ForwarderConfigInput {
  clusterId?: string;
  queue?: { url?: string; region?: string; endpoint?: string };
  primaries?: WatchInput[];
  owned?: WatchInput[];
  resyncOnStart?: boolean;
  coalesceWindowMs?: number;
  coalesceMaxWindowMs?: number;
  buffer?: { maxMessages?: number };
  send?: Partial<{ maxBatchBytes: number; maxSenderFaultRetries: number; backoffInitialMs: number; backoffMaxMs: number; probeIntervalSeconds: number; connectTimeoutMs: number; requestTimeoutMs: number }>;
  watch?: Partial<{ silenceTimeoutSeconds: number; serverTimeoutSeconds: number; backoffInitialMs: number; backoffMaxMs: number; listPageSize: number }>;
  leaderElection?: Partial<LeaderElectionConfig>;
  server?: { port?: number; host?: string };
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

const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const PLURAL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CLUSTER = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

type Raw = Record<string, unknown>;

/** Collects problems with field paths while reading an untyped document. */
class Reader {
  readonly problems: string[] = [];

  problem(path: string, message: string): void {
    this.problems.push(`${path}: ${message}`);
  }

  object(value: unknown, path: string): Raw | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) {
      this.problem(path, `must be a mapping, got ${describe(value)}`);
      return undefined;
    }
    return value as Raw;
  }

  known(obj: Raw | undefined, path: string, fields: readonly string[]): void {
    if (!obj) return;
    for (const key of Object.keys(obj)) {
      if (!fields.includes(key)) this.problem(join(path, key), `unknown field (expected one of: ${fields.join(', ')})`);
    }
  }

  string(obj: Raw | undefined, key: string, path: string, opts: { required?: boolean; pattern?: RegExp; what?: string; fallback?: string } = {}): string | undefined {
    const value = obj?.[key];
    const at = join(path, key);
    if (value === undefined || value === null || value === '') {
      if (opts.fallback !== undefined) return opts.fallback;
      if (opts.required) this.problem(at, `is required${opts.what ? `: ${opts.what}` : ''}`);
      return undefined;
    }
    if (typeof value !== 'string') {
      this.problem(at, `must be a string, got ${describe(value)}`);
      return undefined;
    }
    if (opts.pattern && !opts.pattern.test(value)) {
      this.problem(at, `must be ${opts.what ?? `a string matching ${opts.pattern}`}, got ${JSON.stringify(value)}`);
      return undefined;
    }
    return value;
  }

  number(obj: Raw | undefined, key: string, path: string, fallback: number, min: number, max: number): number {
    const value = obj?.[key];
    const at = join(path, key);
    if (value === undefined || value === null) return fallback;
    const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n)) {
      this.problem(at, `must be a number, got ${describe(value)}`);
      return fallback;
    }
    if (n < min || n > max) {
      this.problem(at, `must be between ${min} and ${max}, got ${n}`);
      return fallback;
    }
    return n;
  }

  /** A whole number in [min, max] (counts, sizes, ports, milliseconds, query parameters). */
  integer(obj: Raw | undefined, key: string, path: string, fallback: number, min: number, max: number): number {
    const n = this.number(obj, key, path, fallback, min, max);
    if (!Number.isInteger(n)) {
      this.problem(join(path, key), `must be a whole number, got ${n}`);
      return fallback;
    }
    return n;
  }

  boolean(obj: Raw | undefined, key: string, path: string, fallback: boolean): boolean {
    const value = obj?.[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value === 'boolean') return value;
    if (value === 'true') return true;
    if (value === 'false') return false;
    this.problem(join(path, key), `must be true or false, got ${describe(value)}`);
    return fallback;
  }
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}

function parseWatch(r: Reader, raw: unknown, path: string, role: WatchRole): WatchConfig | undefined {
  const obj = r.object(raw, path);
  if (!obj) {
    if (raw === undefined || raw === null) r.problem(path, 'must be a mapping with apiVersion and kind');
    return undefined;
  }
  const fields = ['apiVersion', 'kind', 'plural', 'namespaced', 'namespaces', 'labelSelector', 'triggers'];
  if (role === 'owned' && obj.queueUrl !== undefined) {
    r.problem(join(path, 'queueUrl'), "is not a field of an owned watch: an owned object's message goes to its owner's queue (set queueUrl on the owner's primary)");
  }
  r.known(obj, path, [...fields, 'queueUrl']); // an owned queueUrl was reported above
  const queueUrl = role === 'primary' ? queueUrlField(r, obj, 'queueUrl', path, 'this kind\'s SQS queue URL') : undefined;
  const apiVersion = r.string(obj, 'apiVersion', path, { required: true, pattern: API_VERSION, what: 'an apiVersion like "v1", "apps/v1" or "cache.example.com/v1alpha1"' });
  const kind = r.string(obj, 'kind', path, { required: true, pattern: KIND, what: 'a Kind in PascalCase, e.g. "Memcached"' });
  const plural = r.string(obj, 'plural', path, { pattern: PLURAL, what: 'the lower-case REST plural, e.g. "memcacheds"' });
  let namespaced: boolean | undefined;
  if (obj.namespaced !== undefined && obj.namespaced !== null) namespaced = r.boolean(obj, 'namespaced', path, true);
  const namespaces: string[] = [];
  if (obj.namespaces !== undefined && obj.namespaces !== null) {
    if (!Array.isArray(obj.namespaces)) r.problem(join(path, 'namespaces'), `must be a list of namespace names, got ${describe(obj.namespaces)}`);
    else {
      obj.namespaces.forEach((ns, i) => {
        if (typeof ns !== 'string' || !DNS_LABEL.test(ns)) r.problem(`${path}.namespaces[${i}]`, `must be a namespace name (DNS-1123 label), got ${describe(ns)}`);
        else namespaces.push(ns);
      });
    }
  }
  if (namespaced === false && namespaces.length > 0) r.problem(join(path, 'namespaces'), 'must be empty for a cluster-scoped kind (namespaced: false)');
  const labelSelector = r.string(obj, 'labelSelector', path);
  const selectorProblem = labelSelector === undefined ? undefined : labelSelectorProblem(labelSelector);
  if (selectorProblem) r.problem(join(path, 'labelSelector'), `is not a valid label selector: ${selectorProblem}`);
  let triggers: readonly Trigger[] = role === 'primary' ? DEFAULT_PRIMARY_TRIGGERS : DEFAULT_OWNED_TRIGGERS;
  if (obj.triggers !== undefined && obj.triggers !== null) {
    if (!Array.isArray(obj.triggers) || obj.triggers.length === 0) {
      r.problem(join(path, 'triggers'), `must be a non-empty list of ${TRIGGERS.join(', ')}`);
    } else {
      const list: Trigger[] = [];
      obj.triggers.forEach((t, i) => {
        if (typeof t === 'string' && (TRIGGERS as readonly string[]).includes(t)) list.push(t as Trigger);
        else r.problem(`${path}.triggers[${i}]`, `must be one of ${TRIGGERS.join(', ')}, got ${describe(t)}`);
      });
      triggers = list;
    }
  }
  if (!apiVersion || !kind) return undefined;
  return {
    role,
    apiVersion,
    kind,
    ...(plural ? { plural } : {}),
    ...(namespaced !== undefined ? { namespaced } : {}),
    namespaces,
    ...(labelSelector ? { labelSelector } : {}),
    triggers,
    ...(queueUrl ? { queueUrl } : {}),
  };
}

const QUEUE_URL = /^https?:\/\/[^/\s]+\/\S+$/;

/** Reads an optional queue URL field; a present but malformed one is a problem naming the field. */
function queueUrlField(r: Reader, obj: Raw | undefined, key: string, path: string, what: string): string | undefined {
  const url = r.string(obj, key, path, { what });
  if (url !== undefined && !QUEUE_URL.test(url)) {
    r.problem(join(path, key), `must be an http(s) queue URL (${what}, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/operless-work), got ${JSON.stringify(url)}`);
    return undefined;
  }
  return url;
}

/** The AWS region named by an SQS queue URL (`https://sqs.<region>.amazonaws.com/...`), if any. */
export function regionOfQueueUrl(url: string): string | undefined {
  return url.match(/sqs\.([a-z0-9-]+)\.amazonaws\.com/)?.[1];
}

/** The environment variables the forwarder reads (a subset of process.env). */
export type ForwarderEnv = Readonly<Record<string, string | undefined>>;

/**
 * Validates a raw config document merged with environment overrides. Throws ConfigError
 * listing every problem.
 */
export function parseConfig(document: unknown, env: ForwarderEnv = {}, source = 'configuration'): ForwarderConfig {
  const r = new Reader();
  const root = r.object(document, '(root)') ?? {};
  r.known(root, '', ['clusterId', 'queue', 'watches', 'primaries', 'owned', 'resyncOnStart', 'coalesceWindowMs', 'coalesceMaxWindowMs', 'buffer', 'send', 'watch', 'leaderElection', 'server', 'shutdownGraceMs']);

  const clusterId = r.string({ clusterId: env.OPERLESS_CLUSTER || root.clusterId }, 'clusterId', '', {
    required: true, pattern: CLUSTER, what: 'a cluster id: letters, digits, "-", "_" or "." (env OPERLESS_CLUSTER)',
  });

  const queueRaw = r.object(root.queue, 'queue') ?? {};
  r.known(queueRaw, 'queue', ['url', 'region', 'endpoint']);
  const defaultQueueUrl = r.string({ url: env.OPERLESS_QUEUE_URL || queueRaw.url }, 'url', 'queue');
  if (defaultQueueUrl && !/^https?:\/\/[^/]+\/.+/.test(defaultQueueUrl)) r.problem('queue.url', `must be an http(s) queue URL, got ${JSON.stringify(defaultQueueUrl)}`);
  const endpoint = r.string(queueRaw, 'endpoint', 'queue', { pattern: /^https?:\/\/\S+$/, what: 'an http(s) URL' });

  const parsedWatches: WatchConfig[] = [];
  const lists: [string, WatchRole][] = [['primaries', 'primary'], ['owned', 'owned']];
  for (const [field, role] of lists) {
    const list = root[field];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      r.problem(field, `must be a list of watches, got ${describe(list)}`);
      continue;
    }
    list.forEach((w, i) => {
      const parsed = parseWatch(r, w, `${field}[${i}]`, role);
      if (parsed) parsedWatches.push(parsed);
    });
  }
  // Every primary gets a queue: its own queueUrl, else the default queue.url.
  const primariesWithoutQueue = Array.isArray(root.primaries)
    ? root.primaries.flatMap((p, i) => (p && typeof p === 'object' && !(p as Raw).queueUrl ? [i] : []))
    : [];
  const queueUrl = defaultQueueUrl ?? parsedWatches.find((w) => w.role === 'primary' && w.queueUrl)?.queueUrl;
  if (!defaultQueueUrl && (primariesWithoutQueue.length > 0 || !queueUrl) && !r.problems.some((p) => p.startsWith('queue.url'))) {
    const which = primariesWithoutQueue.length > 0 ? ` (${primariesWithoutQueue.map((i) => `primaries[${i}]`).join(', ')} name${primariesWithoutQueue.length === 1 ? 's' : ''} no queueUrl)` : '';
    r.problem('queue.url', `is required${which}: the SQS queue URL, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/operless-work (env OPERLESS_QUEUE_URL), or set queueUrl on every primary`);
  }
  const watches: WatchConfig[] = parsedWatches.map((w) => (w.role === 'primary' && !w.queueUrl && queueUrl ? { ...w, queueUrl } : w));
  const queues = [...new Set(watches.flatMap((w) => (w.role === 'primary' && w.queueUrl ? [w.queueUrl] : [])))];
  const regionFromUrl = [...(queueUrl ? [queueUrl] : []), ...queues].map(regionOfQueueUrl).find((r) => r !== undefined);
  const region = r.string({ region: env.OPERLESS_QUEUE_REGION || queueRaw.region || env.AWS_REGION || env.AWS_DEFAULT_REGION || regionFromUrl }, 'region', 'queue', {
    required: true, pattern: REGION, what: 'an AWS region like "eu-west-1" (env OPERLESS_QUEUE_REGION or AWS_REGION)',
  });
  if (root.watches !== undefined) r.problem('watches', 'is not a field; list primary kinds under "primaries" and owned kinds under "owned"');
  if (!watches.some((w) => w.role === 'primary') && !r.problems.some((p) => p.startsWith('primaries'))) {
    r.problem('primaries', 'must list at least one primary kind to watch, e.g. [{ apiVersion: cache.example.com/v1alpha1, kind: Memcached, plural: memcacheds, namespaced: true }]');
  }
  const seen = new Set<string>();
  for (const w of watches) {
    const id = `${w.apiVersion} ${w.kind}`;
    if (seen.has(id)) r.problem(w.role === 'primary' ? 'primaries' : 'owned', `${w.kind} (${w.apiVersion}) is listed twice; list each kind once`);
    seen.add(id);
  }

  const bufferRaw = r.object(root.buffer, 'buffer');
  r.known(bufferRaw, 'buffer', ['maxMessages']);
  const sendRaw = r.object(root.send, 'send');
  r.known(sendRaw, 'send', ['maxBatchBytes', 'maxSenderFaultRetries', 'backoffInitialMs', 'backoffMaxMs', 'probeIntervalSeconds', 'connectTimeoutMs', 'requestTimeoutMs']);
  const watchRaw = r.object(root.watch, 'watch');
  r.known(watchRaw, 'watch', ['silenceTimeoutSeconds', 'serverTimeoutSeconds', 'backoffInitialMs', 'backoffMaxMs', 'listPageSize']);
  const leRaw = r.object(root.leaderElection, 'leaderElection');
  r.known(leRaw, 'leaderElection', ['enabled', 'leaseName', 'namespace', 'identity', 'leaseDurationSeconds', 'renewDeadlineSeconds', 'retryPeriodSeconds']);
  const serverRaw = r.object(root.server, 'server');
  r.known(serverRaw, 'server', ['port', 'host']);

  const leaderEnabled = r.boolean({ enabled: env.OPERLESS_LEADER_ELECTION ?? leRaw?.enabled }, 'enabled', 'leaderElection', false);
  const leaseDuration = r.number(leRaw, 'leaseDurationSeconds', 'leaderElection', 15, 1, 3600);
  const renewDeadline = r.number(leRaw, 'renewDeadlineSeconds', 'leaderElection', 10, 0.5, 3600);
  const retryPeriod = r.number(leRaw, 'retryPeriodSeconds', 'leaderElection', 2, 0.1, 600);
  if (renewDeadline >= leaseDuration) r.problem('leaderElection.renewDeadlineSeconds', `must be less than leaseDurationSeconds (${leaseDuration}), got ${renewDeadline}`);
  if (retryPeriod >= renewDeadline) r.problem('leaderElection.retryPeriodSeconds', `must be less than renewDeadlineSeconds (${renewDeadline}), got ${retryPeriod}`);
  const leaseNamespace = r.string({ namespace: leRaw?.namespace ?? env.POD_NAMESPACE }, 'namespace', 'leaderElection', { pattern: DNS_LABEL, what: 'a namespace name', fallback: 'default' }) ?? 'default';
  const identity = r.string({ identity: leRaw?.identity ?? env.POD_NAME }, 'identity', 'leaderElection', { fallback: `${env.HOSTNAME || 'forwarder'}-${Math.random().toString(36).slice(2, 8)}` }) ?? 'forwarder';
  const leaseName = r.string(leRaw, 'leaseName', 'leaderElection', { pattern: DNS_SUBDOMAIN, what: 'a Lease name (DNS-1123 subdomain)', fallback: 'operless-forwarder' }) ?? 'operless-forwarder';

  const coalesceWindowMs = r.integer(root, 'coalesceWindowMs', '', 500, 0, 60_000);
  const config: ForwarderConfig = {
    clusterId: clusterId ?? '',
    queue: { url: queueUrl ?? '', region: region ?? '', ...(endpoint ? { endpoint } : {}) },
    watches,
    queues,
    resyncOnStart: r.boolean(root, 'resyncOnStart', '', true),
    coalesceWindowMs,
    coalesceMaxWindowMs: r.integer(root, 'coalesceMaxWindowMs', '', Math.max(30_000, coalesceWindowMs), 0, 600_000),
    buffer: { maxMessages: r.integer(bufferRaw, 'maxMessages', 'buffer', 10_000, 10, 10_000_000) },
    send: {
      maxBatchBytes: r.integer(sendRaw, 'maxBatchBytes', 'send', 256 * 1024, 4096, 1024 * 1024),
      maxSenderFaultRetries: r.integer(sendRaw, 'maxSenderFaultRetries', 'send', 5, 0, 1000),
      backoffInitialMs: r.integer(sendRaw, 'backoffInitialMs', 'send', 200, 1, 60_000),
      backoffMaxMs: r.integer(sendRaw, 'backoffMaxMs', 'send', 30_000, 1, 600_000),
      probeIntervalSeconds: r.integer(sendRaw, 'probeIntervalSeconds', 'send', 60, 1, 3600),
      connectTimeoutMs: r.integer(sendRaw, 'connectTimeoutMs', 'send', DEFAULT_SQS_TIMEOUTS.connectTimeoutMs, 100, 600_000),
      requestTimeoutMs: r.integer(sendRaw, 'requestTimeoutMs', 'send', DEFAULT_SQS_TIMEOUTS.requestTimeoutMs, 100, 600_000),
    },
    watch: {
      // The API server sends bookmarks about once a minute, and none at all on a watch of a kind
      // it saw no event of: a 60 s server timeout inside a 75 s silence timeout closes every
      // healthy watch before the silence timer fires (watcher.ts, watchTimeoutSeconds).
      silenceTimeoutSeconds: r.integer(watchRaw, 'silenceTimeoutSeconds', 'watch', 75, 2, 3600),
      serverTimeoutSeconds: r.integer(watchRaw, 'serverTimeoutSeconds', 'watch', 60, 1, 3600),
      backoffInitialMs: r.integer(watchRaw, 'backoffInitialMs', 'watch', 800, 1, 60_000),
      backoffMaxMs: r.integer(watchRaw, 'backoffMaxMs', 'watch', 30_000, 1, 600_000),
      listPageSize: r.integer(watchRaw, 'listPageSize', 'watch', 500, 1, 10_000),
    },
    leaderElection: {
      enabled: leaderEnabled,
      leaseName,
      namespace: leaseNamespace,
      identity,
      leaseDurationSeconds: leaseDuration,
      renewDeadlineSeconds: renewDeadline,
      retryPeriodSeconds: retryPeriod,
    },
    server: {
      port: r.integer({ port: env.OPERLESS_FORWARDER_PORT ?? serverRaw?.port }, 'port', 'server', 8080, 0, 65535),
      host: r.string(serverRaw, 'host', 'server', { fallback: '0.0.0.0', pattern: LISTEN_HOST, what: 'an address or host name to listen on, e.g. 0.0.0.0, :: or 127.0.0.1' }) ?? '0.0.0.0',
    },
    shutdownGraceMs: r.integer(root, 'shutdownGraceMs', '', 20_000, 0, 600_000),
  };
  if (config.send.connectTimeoutMs > config.send.requestTimeoutMs) r.problem('send.connectTimeoutMs', `must be at most send.requestTimeoutMs (${config.send.requestTimeoutMs}): the request timeout already covers the connection, got ${config.send.connectTimeoutMs}`);
  if (config.send.backoffMaxMs < config.send.backoffInitialMs) r.problem('send.backoffMaxMs', `must be at least send.backoffInitialMs (${config.send.backoffInitialMs})`);
  if (config.coalesceMaxWindowMs < config.coalesceWindowMs) r.problem('coalesceMaxWindowMs', `must be at least coalesceWindowMs (${config.coalesceWindowMs}); equal turns the widening under a backlog off`);
  if (config.watch.backoffMaxMs < config.watch.backoffInitialMs) r.problem('watch.backoffMaxMs', `must be at least watch.backoffInitialMs (${config.watch.backoffInitialMs})`);
  if (r.problems.length > 0) throw new ConfigError(r.problems, source);
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
