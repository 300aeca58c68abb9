/**
 * The reconcile message: the one contract between every producer (forwarder, resync
 * function, CLI, the runtime's own requeues) and every consumer (reconcile functions).
 *
 * A message *names* an object; it never carries the object. Consumers always read the
 * live state from the API server, so duplicated, reordered or stale messages are harmless
 * (level-based, like controller-runtime's `reconcile.Request`).
 *
 * Guarantees of this module:
 * - `encodeMessage` only produces bodies that `decodeMessage` accepts (it validates first,
 *   strictly: it never writes a field this contract version does not define).
 * - `decodeMessage` never throws: every malformed body becomes `{ ok: false, error }` with a
 *   precise, human-readable reason naming the offending field.
 * - Within one contract version a consumer ignores fields it does not know (a producer of a
 *   later release may add an optional field during a rolling upgrade); the decoded message
 *   holds only the known fields. A different `v` is rejected.
 * - `notBefore` is bounded: at most `MAX_WAIT_SECONDS` (plus `NOT_BEFORE_SKEW_MS` of clock
 *   tolerance) after the validating side's clock, so no message can be re-delayed forever.
 * - Bodies are bounded by `MAX_MESSAGE_BYTES`, far below the SQS limit.
 * - One validator per field (`checkMessageField`), built on the name validators of names.ts; the forwarder's router checks its requests
 *   with the same function (`messageProblem`) before anything reaches the send path.
 * - `events/message.schema.json` describes the same shape; a unit test keeps them in step.
 */

import {
  API_VERSION_MAX_LENGTH,
  CLUSTER_ID_MAX_LENGTH,
  DNS_LABEL_MAX_LENGTH,
  DNS_SUBDOMAIN_MAX_LENGTH,
  KIND_MAX_LENGTH,
  isApiVersion,
  isClusterId,
  isDnsLabel,
  isDnsSubdomain,
  isKind,
} from './names.ts';

export const MESSAGE_VERSION = 1 as const;

/** Encoded bodies larger than this are rejected (SQS allows 1 MiB; ours are a few hundred bytes). */
export const MAX_MESSAGE_BYTES = 4096;

/**
 * The longest wait a message may carry: `notBefore` is at most this long after "now".
 * Producers clamp longer waits to it (a `requeueAfter` of more than 7 days waits 7 days;
 * the periodic resync reconciles every object long before that anyway).
 */
export const MAX_WAIT_SECONDS = 7 * 24 * 60 * 60;

/** Clock tolerance between the producer and the consumer of a `notBefore`. */
export const NOT_BEFORE_SKEW_MS = 15 * 60 * 1000;

/** The latest `notBefore` a message validated at `now` (ms) may carry. */
export function latestNotBefore(now: number): number {
  return now + MAX_WAIT_SECONDS * 1000 + NOT_BEFORE_SKEW_MS;
}

export const REASONS = ['Added', 'Modified', 'Deleted', 'Owned', 'Related', 'Resync', 'Requeue', 'Retry'] as const;
export type Reason = (typeof REASONS)[number];

/**
 * Which work goes first, lowest first: 0 — a change of the object itself (created, edited,
 * deleted: what someone asked for); 1 — a change of its children or of an object it refers to,
 * and the runtime's own follow-ups (`Owned`, `Related`, `Requeue`, `Retry`); 2 — the periodic `Resync` safety net. The
 * forwarder never holds a priority-0 change behind a child's coalescing window, and a function
 * reconciles a batch's priority-0 keys first — as controller-runtime's priority queue puts
 * user-triggered events before a resync's.
 */
export function reasonPriority(reason: Reason): 0 | 1 | 2 {
  switch (reason) {
    case 'Added':
    case 'Modified':
    case 'Deleted':
      return 0;
    case 'Owned':
    case 'Related':
    case 'Requeue':
    case 'Retry':
      return 1;
    case 'Resync':
      return 2;
  }
}

/** Identifies one Kubernetes object. `namespace` is absent for cluster-scoped kinds. */
export interface ObjectRef {
  /** Cluster id from configuration: one deployment may serve several clusters. */
  readonly cluster: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
}

export interface ReconcileMessage extends ObjectRef {
  readonly v: typeof MESSAGE_VERSION;
  /** The uid seen by the producer; a recreated object with the same name is a new object. */
  readonly uid?: string;
  readonly reason: Reason;
  /**
   * The resourceVersion of the one event that caused the message: the primary's for
   * `Added`/`Modified`/`Deleted`, the changed child's for `Owned`. Absent when the message
   * stands for several events (merged or grouped: see `mergedResourceVersion`), so a reconcile
   * may rely on it naming exactly one event.
   */
  readonly resourceVersion?: string;
  /**
   * For `Owned`: the kinds of the children whose events the message stands for (e.g.
   * `["Deployment"]`), so a reconcile can skip checking children that did not change. Absent
   * when not known — a merge with a message that has none, a producer that does not set it —
   * and then any child may have changed (see `mergedOwnedKinds`).
   */
  readonly ownedKinds?: readonly string[];
  /** When the producer saw the change, ms since the epoch: end-to-end lag starts here. */
  readonly observedAt: number;
  /** Retries so far; 0 for fresh events. */
  readonly attempt: number;
  /** For waits longer than the queue's maximum delay: re-delay until this time (ms). */
  readonly notBefore?: number;
  /**
   * A tick of the controller's per-object timer of this name (core/controller/timer.ts), sent as a
   * `Requeue` due at the tick's time (`notBefore`): it runs that timer, not the reconcile. A
   * DNS-1123 label. A function of an older release ignores the field and reconciles instead;
   * the chain it ends is started again by the object's next reconcile.
   */
  readonly timer?: string;
}

export type DecodeResult =
  | { readonly ok: true; readonly message: ReconcileMessage; readonly traceparent?: string }
  | { readonly ok: false; readonly error: string };

/**
 * A transport field beside the contract: the EventBridge sink writes the W3C trace context of
 * the forwarder's span into the event's `detail` under this name (an event has no message
 * attributes, and AWS drops its X-Ray header on archives and replays), so a function continues
 * the trace from the detail or the whole envelope alike. It is not a message field: consumers
 * drop it with any other unknown field, and it never counts toward the message's size.
 */
export const TRACEPARENT_FIELD = 'traceparent';

/** Every field contract v1 defines. */
export const MESSAGE_FIELDS: readonly (keyof ReconcileMessage)[] = [
  'v',
  'cluster',
  'apiVersion',
  'kind',
  'namespace',
  'name',
  'uid',
  'reason',
  'resourceVersion',
  'ownedKinds',
  'observedAt',
  'attempt',
  'notBefore',
  'timer',
];
const FIELDS = new Set<string>(MESSAGE_FIELDS);

type Check = (value: unknown) => string | undefined;

const str =
  (max: number, valid?: (value: string) => boolean, what?: string): Check =>
  (value) => {
    if (typeof value !== 'string') return `must be a string, got ${typeName(value)}`;
    if (value.length === 0) return 'must not be empty';
    if (value.length > max) return `must be at most ${max} characters, got ${value.length}`;
    if (valid && !valid(value)) return `must be ${what}, got ${JSON.stringify(value)}`;
    return undefined;
  };

const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Check =>
  (value) => {
    if (typeof value !== 'number' || !Number.isInteger(value)) return `must be an integer, got ${typeName(value)}`;
    if (value < min || value > max) return `must be between ${min} and ${max}, got ${value}`;
    return undefined;
  };

/** The longest value of each string field, in UTF-16 code units. */
export const MAX_FIELD_LENGTH = {
  cluster: CLUSTER_ID_MAX_LENGTH,
  apiVersion: API_VERSION_MAX_LENGTH,
  kind: KIND_MAX_LENGTH,
  name: DNS_SUBDOMAIN_MAX_LENGTH,
  namespace: DNS_LABEL_MAX_LENGTH,
  uid: 128,
  resourceVersion: 128,
} as const satisfies Partial<Record<keyof ReconcileMessage, number>>;

const REQUIRED: Record<string, Check> = {
  cluster: str(MAX_FIELD_LENGTH.cluster, isClusterId, 'a cluster id (letters, digits, - _ .)'),
  apiVersion: str(MAX_FIELD_LENGTH.apiVersion, isApiVersion, 'an apiVersion like "v1" or "cache.example.com/v1alpha1"'),
  kind: str(MAX_FIELD_LENGTH.kind, isKind, 'a Kind in PascalCase'),
  name: str(MAX_FIELD_LENGTH.name, isDnsSubdomain, 'a DNS-1123 subdomain'),
  reason: (value) =>
    typeof value === 'string' && (REASONS as readonly string[]).includes(value)
      ? undefined
      : `must be one of ${REASONS.join(', ')}, got ${JSON.stringify(value)}`,
  observedAt: int(0),
  attempt: int(0, 10_000),
};

/** The most kinds one message names: a primary owns few kinds of children. */
export const MAX_OWNED_KINDS = 16;

const kinds: Check = (value) => {
  if (!Array.isArray(value)) return `must be an array of kinds, got ${typeName(value)}`;
  if (value.length === 0) return 'must not be empty (leave the field out when the kinds are not known)';
  if (value.length > MAX_OWNED_KINDS) return `must name at most ${MAX_OWNED_KINDS} kinds, got ${value.length}`;
  const kind = str(MAX_FIELD_LENGTH.kind, isKind, 'a Kind in PascalCase');
  for (const [i, item] of value.entries()) {
    const problem = kind(item);
    if (problem) return `item ${i} ${problem}`;
  }
  return new Set(value).size === value.length ? undefined : 'must not name a kind twice';
};

const OPTIONAL: Record<string, Check> = {
  namespace: str(MAX_FIELD_LENGTH.namespace, isDnsLabel, 'a DNS-1123 label'),
  uid: str(MAX_FIELD_LENGTH.uid),
  resourceVersion: str(MAX_FIELD_LENGTH.resourceVersion),
  ownedKinds: kinds,
  notBefore: int(0),
  timer: str(DNS_LABEL_MAX_LENGTH, isDnsLabel, 'a timer name (a DNS-1123 label)'),
};

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** How the validating side treats what it checks: its clock (for `notBefore`), unknown fields. */
export interface ValidateOptions {
  /** The validating side's clock, ms since the epoch (default `Date.now()`). */
  readonly now?: number;
  /**
   * `ignore` (consumers, the default): fields this version does not define are dropped from
   * the decoded message; `reject` (producers: the encoder): they are an error.
   */
  readonly unknownFields?: 'ignore' | 'reject';
}

/** What is wrong with a message: the field at fault (when one is) and a sentence saying why. */
export interface MessageProblem {
  readonly field?: string;
  readonly error: string;
}

/**
 * The one validator of each field of the contract: undefined when `value` is a valid value of
 * `field`, else why not (e.g. `must be a DNS-1123 subdomain, got "Bad_Name"`). `notBefore` is
 * checked against `now` (see `latestNotBefore`). Never throws.
 */
export function checkMessageField(field: keyof ReconcileMessage, value: unknown, now: number = Date.now()): string | undefined {
  if (field === 'v') return value === MESSAGE_VERSION ? undefined : `must be ${MESSAGE_VERSION}, got ${JSON.stringify(value)}`;
  const check = REQUIRED[field] ?? OPTIONAL[field];
  const problem = check?.(value);
  if (problem || field !== 'notBefore') return problem;
  const latest = latestNotBefore(now);
  return (value as number) > latest
    ? `must be at most ${MAX_WAIT_SECONDS} s (+${NOT_BEFORE_SKEW_MS / 1000} s of clock skew) from now, got ${value} (now ${now})`
    : undefined;
}

/**
 * What an EventBridge event envelope may add around a reconcile message (id, time, region,
 * account, resources, a source of up to 256 and a detail-type of up to 128 characters).
 */
export const MAX_EVENT_ENVELOPE_BYTES = 2048;

/**
 * The detail of an Amazon EventBridge event (`source`, `detail-type` and an object `detail`,
 * no contract version of its own), or undefined when `value` is not one. Pure, never throws.
 */
export function eventDetail(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const event = value as Record<string, unknown>;
  if ('v' in event || typeof event.source !== 'string' || typeof event['detail-type'] !== 'string') return undefined;
  const detail = event.detail;
  return typeof detail === 'object' && detail !== null && !Array.isArray(detail) ? detail : undefined;
}

/**
 * Parses and validates a queue message body: the reconcile message itself, or an EventBridge
 * event that carries it as its `detail` (a rule target without InputPath; docs/semantics.md).
 * Never throws.
 */
export function decodeMessage(body: string, options: ValidateOptions = {}): DecodeResult {
  if (typeof body !== 'string') return { ok: false, error: `body must be a string, got ${typeName(body)}` };
  const bytes = Buffer.byteLength(body, 'utf8');
  const tooLarge = { ok: false, error: `body is ${bytes} bytes, larger than the ${MAX_MESSAGE_BYTES}-byte limit of a reconcile message` } as const;
  if (bytes > MAX_MESSAGE_BYTES + MAX_EVENT_ENVELOPE_BYTES) return tooLarge;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (err) {
    return bytes > MAX_MESSAGE_BYTES ? tooLarge : { ok: false, error: `body is not JSON (${(err as Error).message}): ${preview(body)}` };
  }
  const detail = eventDetail(parsed);
  const inner = detail ?? parsed;
  const traceparent = transportTraceparent(inner);
  const measured = traceparent === undefined ? detail : withoutField(inner as Record<string, unknown>, TRACEPARENT_FIELD);
  if (bytes > MAX_MESSAGE_BYTES && (measured === undefined || Buffer.byteLength(JSON.stringify(measured), 'utf8') > MAX_MESSAGE_BYTES)) return tooLarge;
  const result = validateMessage(inner, options);
  return result.ok && traceparent !== undefined ? { ...result, traceparent } : result;
}

/** The `traceparent` transport field of a decoded body (a short string; checked by whoever uses it), or undefined. */
function transportTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const field = (value as Record<string, unknown>)[TRACEPARENT_FIELD];
  return typeof field === 'string' && field.length <= 64 ? field : undefined;
}

function withoutField(record: Record<string, unknown>, name: string): Record<string, unknown> {
  const { [name]: _dropped, ...rest } = record;
  return rest;
}

/** Validates an already-parsed value against the contract. Never throws. */
export function validateMessage(value: unknown, options: ValidateOptions = {}): DecodeResult {
  const found = problemOf(value, options);
  if (found) return { ok: false, error: found.problem.error };
  return { ok: true, message: knownFields(value as Record<string, unknown>) };
}

function problemOf(value: unknown, options: ValidateOptions): { problem: MessageProblem } | undefined {
  const fail = (error: string, field?: string) => ({ problem: field === undefined ? { error } : { field, error } });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(`message must be a JSON object, got ${typeName(value)}`);
  }
  const record = value as Record<string, unknown>;
  if (record.v !== MESSAGE_VERSION) {
    return fail(
      record.v === undefined
        ? 'missing field "v" (contract version); this is not an Operless reconcile message'
        : `unsupported contract version v=${JSON.stringify(record.v)}; this consumer understands v=${MESSAGE_VERSION}`,
      'v',
    );
  }
  const now = options.now ?? Date.now();
  for (const field of Object.keys(REQUIRED) as (keyof ReconcileMessage)[]) {
    if (!(field in record) || record[field] === undefined) return fail(`missing field "${field}"`, field);
    const problem = checkMessageField(field, record[field], now);
    if (problem) return fail(`field "${field}" ${problem}`, field);
  }
  for (const field of Object.keys(OPTIONAL) as (keyof ReconcileMessage)[]) {
    if (record[field] === undefined) continue;
    const problem = checkMessageField(field, record[field], now);
    if (problem) return fail(`field "${field}" ${problem}`, field);
  }
  if (options.unknownFields === 'reject') {
    for (const field of Object.keys(record)) {
      if (!FIELDS.has(field)) return fail(`unknown field "${field}" (contract v${MESSAGE_VERSION} does not define it)`, field);
    }
  }
  return undefined;
}

/** The message with only the fields this contract version defines (a later release's extras dropped). */
function knownFields(record: Record<string, unknown>): ReconcileMessage {
  const out: Record<string, unknown> = {};
  for (const field of Object.keys(record)) if (FIELDS.has(field) && record[field] !== undefined) out[field] = record[field];
  return out as unknown as ReconcileMessage;
}

/**
 * Why the encoder would refuse `message`, or undefined when it would send it: the strict
 * validation (no unknown field) and the size bound. Never throws; what the forwarder's router
 * checks each request with, so nothing the encoder refuses reaches the send path.
 */
export function messageProblem(message: ReconcileMessage, now: number = Date.now()): MessageProblem | undefined {
  const found = problemOf(message, { now, unknownFields: 'reject' });
  if (found) return found.problem;
  const bytes = Buffer.byteLength(JSON.stringify(message), 'utf8');
  return bytes > MAX_MESSAGE_BYTES ? { error: `the encoded message is ${bytes} bytes, larger than the ${MAX_MESSAGE_BYTES}-byte limit` } : undefined;
}

/** Serialises a message after validating it; throws a clear error on a bug in the producer. */
export function encodeMessage(message: ReconcileMessage): string {
  const problem = messageProblem(message);
  if (problem) throw new Error(`refusing to send an invalid reconcile message: ${problem.error}`);
  return JSON.stringify(message);
}

/** Builds a fresh message for an object (attempt 0). */
export function newMessage(
  ref: ObjectRef & { uid?: string; resourceVersion?: string; ownedKinds?: readonly string[] },
  reason: Reason,
  now: number = Date.now(),
): ReconcileMessage {
  return compact({
    v: MESSAGE_VERSION,
    cluster: ref.cluster,
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    namespace: ref.namespace || undefined,
    name: ref.name,
    uid: ref.uid,
    reason,
    resourceVersion: ref.resourceVersion,
    ownedKinds: ref.ownedKinds,
    observedAt: now,
    attempt: 0,
  });
}

/** The follow-up of a message: same object, new reason/attempt/notBefore; keeps observedAt. */
export function followUp(message: ReconcileMessage, change: { reason: Reason; attempt: number; notBefore?: number | undefined }): ReconcileMessage {
  return compact({ ...message, reason: change.reason, attempt: change.attempt, notBefore: change.notBefore });
}

/**
 * The identity used for de-duplication and per-key decisions: one string per object
 * (uid is deliberately not part of it: the live object decides which uid is current).
 */
export function objectKey(ref: ObjectRef): string {
  const group = ref.apiVersion.includes('/') ? ref.apiVersion.slice(0, ref.apiVersion.indexOf('/')) : '';
  return `${ref.cluster}/${group}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
}

/** Short form for humans and logs: `Kind/namespace/name` or `Kind/name`. */
export function displayKey(ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>): string {
  return ref.namespace ? `${ref.kind}/${ref.namespace}/${ref.name}` : `${ref.kind}/${ref.name}`;
}

function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

function preview(body: string): string {
  const cut = body.length > 80 ? `${body.slice(0, 80)}…` : body;
  return JSON.stringify(cut);
}

/**
 * The resourceVersion of a message that stands for `messages` (all for one object key): theirs
 * when they all name the same one, otherwise none — several events (perhaps of different
 * children) cannot be named by one version. Pure.
 */
export function mergedResourceVersion(messages: readonly Pick<ReconcileMessage, 'resourceVersion'>[]): string | undefined {
  const first = messages[0]?.resourceVersion;
  return messages.every((m) => m.resourceVersion === first) ? first : undefined;
}

/**
 * The owned kinds of a message that stands for `messages` (all for one object key): the union
 * of theirs when every one names its kinds, otherwise none — a part that does not say which
 * child changed (a merge with a `Requeue`, an older producer) may stand for any child. Sorted. Pure.
 */
export function mergedOwnedKinds(messages: readonly Pick<ReconcileMessage, 'ownedKinds'>[]): readonly string[] | undefined {
  if (messages.length === 0 || messages.some((m) => m.ownedKinds === undefined)) return undefined;
  return [...new Set(messages.flatMap((m) => m.ownedKinds ?? []))].sort();
}

/**
 * The uid of a message that stands for `messages` (all for one object key): theirs when they
 * all name the same one, otherwise none — a key is a name, and messages of a deleted object and
 * of its same-name successor may be pending together. Without a uid the reconcile reads whatever
 * object lives under the name, so the merge is skipped (row 11 of docs/semantics.md) only when
 * every message would have been. Pure.
 */
export function mergedUid(messages: readonly Pick<ReconcileMessage, 'uid'>[]): string | undefined {
  const first = messages[0]?.uid;
  return first !== undefined && messages.every((m) => m.uid === first) ? first : undefined;
}
