/**
 * The reconcile message: the one contract between every producer (forwarder, resync
 * function, CLI, the runtime's own requeues) and every consumer (reconcile functions).
 *
 * A message *names* an object; it never carries the object. Consumers always read the
 * live state from the API server, so duplicated, reordered or stale messages are harmless
 * (level-based, like controller-runtime's `reconcile.Request`).
 *
 * Guarantees of this module:
 * - `encodeMessage` only produces bodies that `decodeMessage` accepts (it validates first).
 * - `decodeMessage` never throws: every malformed body becomes `{ ok: false, error }` with a
 *   precise, human-readable reason naming the offending field.
 * - Bodies are bounded by `MAX_MESSAGE_BYTES`, far below the SQS limit.
 * - `events/message.schema.json` describes the same shape; a unit test keeps them in step.
 */

export const MESSAGE_VERSION = 1 as const;

/** Encoded bodies larger than this are rejected (SQS allows 1 MiB; ours are ~300 bytes). */
export const MAX_MESSAGE_BYTES = 4096;

export const REASONS = ['Added', 'Modified', 'Deleted', 'Owned', 'Resync', 'Requeue', 'Retry'] as const;
export type Reason = (typeof REASONS)[number];

/**
 * Which work goes first, lowest first: 0 — a change of the object itself (created, edited,
 * deleted: what someone asked for); 1 — a change of its children and the runtime's own
 * follow-ups (`Owned`, `Requeue`, `Retry`); 2 — the periodic `Resync` safety net. The
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
  /** When the producer saw the change, ms since the epoch: end-to-end lag starts here. */
  readonly observedAt: number;
  /** Retries so far; 0 for fresh events. */
  readonly attempt: number;
  /** For waits longer than the queue's maximum delay: re-delay until this time (ms). */
  readonly notBefore?: number;
}

export type DecodeResult =
  | { readonly ok: true; readonly message: ReconcileMessage }
  | { readonly ok: false; readonly error: string };

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const CLUSTER = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const FIELDS = new Set([
  'v', 'cluster', 'apiVersion', 'kind', 'namespace', 'name', 'uid', 'reason',
  'resourceVersion', 'observedAt', 'attempt', 'notBefore',
]);

type Check = (value: unknown) => string | undefined;

const str = (max: number, pattern?: RegExp, what?: string): Check => (value) => {
  if (typeof value !== 'string') return `must be a string, got ${typeName(value)}`;
  if (value.length === 0) return 'must not be empty';
  if (value.length > max) return `must be at most ${max} characters, got ${value.length}`;
  if (pattern && !pattern.test(value)) return `must be ${what}, got ${JSON.stringify(value)}`;
  return undefined;
};

const int = (min: number, max = Number.MAX_SAFE_INTEGER): Check => (value) => {
  if (typeof value !== 'number' || !Number.isInteger(value)) return `must be an integer, got ${typeName(value)}`;
  if (value < min || value > max) return `must be between ${min} and ${max}, got ${value}`;
  return undefined;
};

const REQUIRED: Record<string, Check> = {
  cluster: str(63, CLUSTER, 'a cluster id (letters, digits, - _ .)'),
  apiVersion: str(317, API_VERSION, 'an apiVersion like "v1" or "cache.example.com/v1alpha1"'),
  kind: str(63, KIND, 'a Kind in PascalCase'),
  name: str(253, DNS_SUBDOMAIN, 'a DNS-1123 subdomain'),
  reason: (value) =>
    typeof value === 'string' && (REASONS as readonly string[]).includes(value)
      ? undefined
      : `must be one of ${REASONS.join(', ')}, got ${JSON.stringify(value)}`,
  observedAt: int(0),
  attempt: int(0, 10_000),
};

const OPTIONAL: Record<string, Check> = {
  namespace: str(63, DNS_SUBDOMAIN, 'a DNS-1123 label'),
  uid: str(128),
  resourceVersion: str(128),
  notBefore: int(0),
};

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Parses and validates a queue message body. Never throws. */
export function decodeMessage(body: string): DecodeResult {
  if (typeof body !== 'string') return { ok: false, error: `body must be a string, got ${typeName(body)}` };
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > MAX_MESSAGE_BYTES) {
    return { ok: false, error: `body is ${bytes} bytes, larger than the ${MAX_MESSAGE_BYTES}-byte limit of a reconcile message` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (err) {
    return { ok: false, error: `body is not JSON (${(err as Error).message}): ${preview(body)}` };
  }
  return validateMessage(parsed);
}

/** Validates an already-parsed value against the contract. Never throws. */
export function validateMessage(value: unknown): DecodeResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: `message must be a JSON object, got ${typeName(value)}` };
  }
  const record = value as Record<string, unknown>;
  if (record.v !== MESSAGE_VERSION) {
    return {
      ok: false,
      error: record.v === undefined
        ? 'missing field "v" (contract version); this is not an Operless reconcile message'
        : `unsupported contract version v=${JSON.stringify(record.v)}; this consumer understands v=${MESSAGE_VERSION}`,
    };
  }
  for (const [field, check] of Object.entries(REQUIRED)) {
    if (!(field in record) || record[field] === undefined) return { ok: false, error: `missing field "${field}"` };
    const problem = check(record[field]);
    if (problem) return { ok: false, error: `field "${field}" ${problem}` };
  }
  for (const [field, check] of Object.entries(OPTIONAL)) {
    if (record[field] === undefined) continue;
    const problem = check(record[field]);
    if (problem) return { ok: false, error: `field "${field}" ${problem}` };
  }
  for (const field of Object.keys(record)) {
    if (!FIELDS.has(field)) return { ok: false, error: `unknown field "${field}"` };
  }
  return { ok: true, message: record as unknown as ReconcileMessage };
}

/** Serialises a message after validating it; throws a clear error on a bug in the producer. */
export function encodeMessage(message: ReconcileMessage): string {
  const checked = validateMessage(message);
  if (!checked.ok) throw new Error(`refusing to send an invalid reconcile message: ${checked.error}`);
  const body = JSON.stringify(message);
  if (Buffer.byteLength(body, 'utf8') > MAX_MESSAGE_BYTES) {
    throw new Error(`refusing to send a reconcile message larger than ${MAX_MESSAGE_BYTES} bytes`);
  }
  return body;
}

/** Builds a fresh message for an object (attempt 0). */
export function newMessage(
  ref: ObjectRef & { uid?: string; resourceVersion?: string },
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
    observedAt: now,
    attempt: 0,
  });
}

/** The follow-up of a message: same object, new reason/attempt/notBefore; keeps observedAt. */
export function followUp(
  message: ReconcileMessage,
  change: { reason: Reason; attempt: number; notBefore?: number | undefined },
): ReconcileMessage {
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
