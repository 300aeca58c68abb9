/**
 * An in-memory model of Amazon SQS standard queues: the pure core of the embedded queue
 * that the local dev loop uses instead of AWS (no Java, no account).
 *
 * It models the semantics Operless depends on, with SQS's names, limits and error codes:
 * per-message and per-queue delay (0–900 s), visibility timeout (0–43,200 s) and
 * ChangeMessageVisibility, `ApproximateReceiveCount`, `ApproximateFirstReceiveTimestamp`,
 * `SentTimestamp`, redrive to a dead-letter queue once a message would be received more than
 * `maxReceiveCount` times (the move happens at receive time, as in SQS), batch limits
 * (10 entries, distinct ids, 1 MiB total), message size, message attributes with SQS's MD5,
 * retention, and the three approximate counts of GetQueueAttributes. FIFO queues (name ending
 * in `.fifo`, `FifoQueue: true`): `MessageGroupId` required; a group's messages are received
 * in order and none while one of the group is in flight; `MessageDeduplicationId` (or
 * `ContentBasedDeduplication`) with SQS's 5-minute window, kept after deletion, per queue or
 * per group (`DeduplicationScope`); per-message delays refused; `SequenceNumber`.
 *
 * Guarantees:
 * - Deterministic given its clock: time comes only from the injected `Clock`; nothing here
 *   sets timers, so unit tests drive it with a fake clock.
 * - Every rejected request throws a `QueueError` whose `code` is the error name the AWS SDK
 *   surfaces (`QueueDoesNotExist`, `TooManyEntriesInBatchRequest`, `InvalidParameterValue`…),
 *   with a message that says what was wrong.
 * - At-least-once like SQS: a received message is hidden, not removed, until deleted with
 *   its most recent receipt handle; a stale handle is accepted and ignored (as SQS documents).
 *
 * Not modelled: FIFO throughput limits, KMS, tags on messages, long polling (the HTTP adapter
 * waits, using `earliestChangeAt` and the change listener), and SQS's approximateness
 * (counts and receives here are exact; real SQS may return fewer messages than available).
 */
import { createHash, randomUUID } from 'node:crypto';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export const ACCOUNT_ID = '000000000000';
export const MAX_DELAY_SECONDS = 900;
export const MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200;
export const MAX_WAIT_TIME_SECONDS = 20;
export const MAX_BATCH_ENTRIES = 10;
export const MAX_MESSAGE_SIZE_BYTES = 1_048_576;
export const MAX_BATCH_BYTES = 1_048_576;
export const MAX_MESSAGE_ATTRIBUTES = 10;

/** A failed queue operation, named as the AWS SDK names the error. */
export class QueueError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = code;
    this.code = code;
  }
}

export interface MessageAttributeValue {
  readonly DataType: string;
  readonly StringValue?: string;
  readonly BinaryValue?: Uint8Array;
}

export type MessageAttributes = Readonly<Record<string, MessageAttributeValue>>;

export interface RedrivePolicy {
  readonly deadLetterTargetArn: string;
  readonly maxReceiveCount: number;
}

export interface QueueSettings {
  visibilityTimeoutSeconds: number;
  delaySeconds: number;
  receiveMessageWaitTimeSeconds: number;
  maximumMessageSize: number;
  messageRetentionPeriodSeconds: number;
  redrivePolicy?: RedrivePolicy | undefined;
  fifo: boolean;
  contentBasedDeduplication: boolean;
  /** FIFO: deduplication ids are unique per queue or per message group. */
  deduplicationScope: 'queue' | 'messageGroup';
}

/** SQS's FIFO deduplication interval. */
export const DEDUPLICATION_WINDOW_MS = 5 * 60 * 1000;

export interface SendInput {
  readonly body: string;
  readonly delaySeconds?: number | undefined;
  readonly messageAttributes?: MessageAttributes | undefined;
  readonly awsTraceHeader?: string | undefined;
  /** FIFO: `MessageGroupId`. */
  readonly groupId?: string | undefined;
  /** FIFO: `MessageDeduplicationId`. */
  readonly deduplicationId?: string | undefined;
}

export interface SendResult {
  readonly messageId: string;
  /** FIFO: `SequenceNumber`. */
  readonly sequenceNumber?: string | undefined;
  readonly md5OfMessageBody: string;
  readonly md5OfMessageAttributes?: string | undefined;
}

export interface BatchEntryFailure {
  readonly id: string;
  readonly code: string;
  readonly message: string;
  readonly senderFault: boolean;
}

export interface BatchResult<T> {
  readonly successful: T[];
  readonly failed: BatchEntryFailure[];
}

export interface ReceiveInput {
  readonly maxNumberOfMessages?: number | undefined;
  readonly visibilityTimeoutSeconds?: number | undefined;
  /** System attribute names (`All` or names); `AttributeNames` and `MessageSystemAttributeNames` merged. */
  readonly attributeNames?: readonly string[] | undefined;
  /** Message attribute names: `All`, `.*`, a prefix ending in `.*`, or exact names. */
  readonly messageAttributeNames?: readonly string[] | undefined;
}

export interface ReceivedMessage {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly md5OfBody: string;
  readonly attributes: Record<string, string>;
  readonly messageAttributes: Record<string, MessageAttributeValue>;
  readonly md5OfMessageAttributes?: string | undefined;
}

export interface QueueCounts {
  /** Available for retrieval now (`ApproximateNumberOfMessages`). */
  readonly visible: number;
  /** Received and not yet deleted or visible again (`ApproximateNumberOfMessagesNotVisible`). */
  readonly notVisible: number;
  /** Sent with a delay that has not passed yet (`ApproximateNumberOfMessagesDelayed`). */
  readonly delayed: number;
}

export interface StoredMessage {
  readonly id: string;
  readonly seq: number;
  readonly body: string;
  readonly md5OfBody: string;
  readonly messageAttributes: MessageAttributes;
  readonly md5OfMessageAttributes: string | undefined;
  readonly awsTraceHeader: string | undefined;
  readonly sentAt: number;
  readonly groupId: string | undefined;
  readonly deduplicationId: string | undefined;
  /** Set when SQS moved the message here from a source queue by redrive. */
  deadLetterQueueSourceArn: string | undefined;
  visibleAt: number;
  receiveCount: number;
  firstReceivedAt: number | undefined;
  receiptHandle: string | undefined;
}

const SYSTEM_ATTRIBUTES = [
  'ApproximateReceiveCount',
  'ApproximateFirstReceiveTimestamp',
  'SentTimestamp',
  'SenderId',
  'AWSTraceHeader',
  'DeadLetterQueueSourceArn',
  'MessageGroupId',
  'MessageDeduplicationId',
  'SequenceNumber',
] as const;
const KNOWN_SYSTEM_ATTRIBUTES = new Set<string>([...SYSTEM_ATTRIBUTES, 'All']);

const DEFAULT_SETTINGS: QueueSettings = {
  visibilityTimeoutSeconds: 30,
  delaySeconds: 0,
  receiveMessageWaitTimeSeconds: 0,
  maximumMessageSize: MAX_MESSAGE_SIZE_BYTES,
  messageRetentionPeriodSeconds: 345_600,
  fifo: false,
  contentBasedDeduplication: false,
  deduplicationScope: 'queue',
};

const QUEUE_NAME = /^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$/;
const FIFO_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;
const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;
const ATTRIBUTE_NAME = /^[A-Za-z0-9_.-]{1,256}$/;
const DATA_TYPE = /^(String|Number|Binary)(\.[A-Za-z0-9_.-]+)?$/;
// XML 1.0 characters, the set SQS accepts in bodies and string attribute values.
const INVALID_CHARACTERS = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

export function queueArn(region: string, name: string): string {
  return `arn:aws:sqs:${region}:${ACCOUNT_ID}:${name}`;
}

export function md5Hex(data: string | Uint8Array): string {
  return createHash('md5').update(data).digest('hex');
}

/**
 * SQS's MD5 of message attributes: names sorted; each contributes its name, data type,
 * a transport byte (1 string, 2 binary) and value, each length-prefixed (4 bytes, big endian).
 */
export function md5OfMessageAttributes(attributes: MessageAttributes): string | undefined {
  const names = Object.keys(attributes).sort();
  if (names.length === 0) return undefined;
  const hash = createHash('md5');
  const field = (bytes: Uint8Array) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length).update(bytes);
  };
  for (const name of names) {
    const value = attributes[name]!;
    field(Buffer.from(name, 'utf8'));
    field(Buffer.from(value.DataType, 'utf8'));
    if (value.BinaryValue !== undefined && value.DataType.startsWith('Binary')) {
      hash.update(Buffer.from([2]));
      field(value.BinaryValue);
    } else {
      hash.update(Buffer.from([1]));
      field(Buffer.from(value.StringValue ?? '', 'utf8'));
    }
  }
  return hash.digest('hex');
}

/** The size SQS counts against MaximumMessageSize: body plus attribute names, types and values. */
export function messageSize(body: string, attributes: MessageAttributes = {}): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const [name, value] of Object.entries(attributes)) {
    size += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(value.DataType, 'utf8');
    size += value.BinaryValue?.length ?? Buffer.byteLength(value.StringValue ?? '', 'utf8');
  }
  return size;
}

/** Whether a message attribute name is selected by ReceiveMessage's MessageAttributeNames. */
export function attributeSelected(name: string, selectors: readonly string[]): boolean {
  return selectors.some((selector) => {
    if (selector === 'All' || selector === '.*') return true;
    if (selector.endsWith('.*')) return name.startsWith(selector.slice(0, -1));
    return selector === name;
  });
}

function integerIn(value: number | undefined, min: number, max: number, parameter: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new QueueError('InvalidParameterValue', `Value ${value} for parameter ${parameter} is invalid. Reason: must be an integer from ${min} to ${max}.`);
  }
  return value;
}

function parseIntegerAttribute(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new QueueError(
      'InvalidAttributeValue',
      `Invalid value for the parameter ${name}: ${JSON.stringify(raw)} (must be an integer from ${min} to ${max}).`,
    );
  }
  return value;
}

type IntegerSetting = 'visibilityTimeoutSeconds' | 'delaySeconds' | 'receiveMessageWaitTimeSeconds' | 'maximumMessageSize' | 'messageRetentionPeriodSeconds';

/** Integer queue attributes: SQS name → [setting, minimum, maximum]. */
const INTEGER_ATTRIBUTES: Readonly<Record<string, readonly [IntegerSetting, number, number]>> = {
  VisibilityTimeout: ['visibilityTimeoutSeconds', 0, MAX_VISIBILITY_TIMEOUT_SECONDS],
  DelaySeconds: ['delaySeconds', 0, MAX_DELAY_SECONDS],
  ReceiveMessageWaitTimeSeconds: ['receiveMessageWaitTimeSeconds', 0, MAX_WAIT_TIME_SECONDS],
  MaximumMessageSize: ['maximumMessageSize', 1024, MAX_MESSAGE_SIZE_BYTES],
  MessageRetentionPeriod: ['messageRetentionPeriodSeconds', 60, 1_209_600],
};

/** Parses SQS's string-valued queue attributes (CreateQueue/SetQueueAttributes) onto settings. */
export function applyQueueAttributes(base: QueueSettings, attributes: Readonly<Record<string, string>>): QueueSettings {
  const settings: QueueSettings = { ...base };
  for (const [name, raw] of Object.entries(attributes)) {
    const integer = INTEGER_ATTRIBUTES[name];
    if (integer) {
      const [field, min, max] = integer;
      settings[field] = parseIntegerAttribute(name, raw, min, max);
      continue;
    }
    switch (name) {
      case 'RedrivePolicy':
        settings.redrivePolicy = raw === '' ? undefined : parseRedrivePolicy(raw);
        break;
      case 'Policy':
      case 'KmsMasterKeyId':
      case 'KmsDataKeyReusePeriodSeconds':
      case 'SqsManagedSseEnabled':
      case 'RedriveAllowPolicy':
        break; // accepted and ignored: no access control or encryption locally
      case 'FifoQueue':
        settings.fifo = parseBooleanAttribute(name, raw);
        break;
      case 'ContentBasedDeduplication':
        settings.contentBasedDeduplication = parseBooleanAttribute(name, raw);
        break;
      case 'DeduplicationScope':
        if (raw !== 'queue' && raw !== 'messageGroup')
          throw new QueueError('InvalidAttributeValue', `Invalid value for the parameter DeduplicationScope: ${JSON.stringify(raw)} (queue or messageGroup).`);
        settings.deduplicationScope = raw;
        break;
      case 'FifoThroughputLimit':
        if (raw !== 'perQueue' && raw !== 'perMessageGroupId')
          throw new QueueError(
            'InvalidAttributeValue',
            `Invalid value for the parameter FifoThroughputLimit: ${JSON.stringify(raw)} (perQueue or perMessageGroupId).`,
          );
        break; // a throughput quota: nothing to model locally
      default:
        throw new QueueError('InvalidAttributeName', `Unknown Attribute ${name}.`);
    }
  }
  return settings;
}

function parseBooleanAttribute(name: string, raw: string): boolean {
  if (raw !== 'true' && raw !== 'false')
    throw new QueueError('InvalidAttributeValue', `Invalid value for the parameter ${name}: ${JSON.stringify(raw)} (true or false).`);
  return raw === 'true';
}

function parseRedrivePolicy(raw: string): RedrivePolicy {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new QueueError('InvalidAttributeValue', `Invalid value for the parameter RedrivePolicy: not JSON: ${raw}`);
  }
  const policy = parsed as { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
  const max = typeof policy.maxReceiveCount === 'string' ? Number(policy.maxReceiveCount) : policy.maxReceiveCount;
  if (typeof policy.deadLetterTargetArn !== 'string' || typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 1000) {
    throw new QueueError(
      'InvalidAttributeValue',
      'Invalid value for the parameter RedrivePolicy: needs deadLetterTargetArn (a queue ARN) and maxReceiveCount (1 to 1000).',
    );
  }
  return { deadLetterTargetArn: policy.deadLetterTargetArn, maxReceiveCount: max };
}

function validateBody(body: string | undefined): string {
  if (typeof body !== 'string' || body.length === 0) {
    throw new QueueError('MissingParameter', 'The request must contain the parameter MessageBody.');
  }
  if (INVALID_CHARACTERS.test(body)) {
    throw new QueueError(
      'InvalidMessageContents',
      'Invalid characters found in the message body. Allowed: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.',
    );
  }
  return body;
}

function validateMessageAttributes(attributes: MessageAttributes): void {
  const names = Object.keys(attributes);
  if (names.length > MAX_MESSAGE_ATTRIBUTES) {
    throw new QueueError('InvalidParameterValue', `Number of message attributes [${names.length}] exceeds the allowed maximum [${MAX_MESSAGE_ATTRIBUTES}].`);
  }
  for (const name of names) {
    const value = attributes[name]!;
    if (!ATTRIBUTE_NAME.test(name) || name.includes('..') || name.startsWith('.') || name.endsWith('.') || /^(aws\.|amazon\.)/i.test(name)) {
      throw new QueueError(
        'InvalidParameterValue',
        `Message attribute name '${name}' is invalid: use letters, digits, _ - . (no leading, trailing or doubled dots, no AWS./Amazon. prefix).`,
      );
    }
    if (!DATA_TYPE.test(value.DataType ?? '')) {
      throw new QueueError(
        'InvalidParameterValue',
        `The type of message attribute '${name}' is invalid: must be String, Number or Binary (optionally with a .custom suffix).`,
      );
    }
    if (value.DataType.startsWith('Binary')) {
      if (value.BinaryValue === undefined)
        throw new QueueError(
          'InvalidParameterValue',
          `Message attribute '${name}' must contain a non-empty message attribute value for message attribute type '${value.DataType}'.`,
        );
    } else {
      if (value.StringValue === undefined || value.StringValue === '')
        throw new QueueError(
          'InvalidParameterValue',
          `Message attribute '${name}' must contain a non-empty message attribute value for message attribute type '${value.DataType}'.`,
        );
      if (INVALID_CHARACTERS.test(value.StringValue)) throw new QueueError('InvalidParameterValue', `Message attribute '${name}' contains invalid characters.`);
      if (value.DataType.startsWith('Number') && !Number.isFinite(Number(value.StringValue))) {
        throw new QueueError('InvalidParameterValue', `Value ${value.StringValue} for message attribute '${name}' of type Number is not a number.`);
      }
    }
  }
}

/** Checks the rules common to every batch request: 1–10 entries with distinct, well-formed ids. */
export function validateBatchEntryIds(ids: readonly string[]): void {
  if (ids.length === 0) throw new QueueError('EmptyBatchRequest', 'There should be at least one entry in the request.');
  if (ids.length > MAX_BATCH_ENTRIES) {
    throw new QueueError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ${ids.length}.`);
  }
  const seen = new Set<string>();
  for (const id of ids) {
    if (typeof id !== 'string' || !BATCH_ENTRY_ID.test(id)) {
      throw new QueueError(
        'InvalidBatchEntryId',
        `A batch entry id can only contain alphanumeric characters, hyphens and underscores and be at most 80 characters long: ${JSON.stringify(id)}.`,
      );
    }
    if (seen.has(id)) throw new QueueError('BatchEntryIdsNotDistinct', `Id ${id} repeated.`);
    seen.add(id);
  }
}

function encodeReceiptHandle(queue: string, messageId: string): string {
  return Buffer.from(`${queue}\n${messageId}\n${randomUUID()}`, 'utf8').toString('base64url');
}

function decodeReceiptHandle(handle: string): { queue: string; messageId: string } {
  const parts = typeof handle === 'string' ? Buffer.from(handle, 'base64url').toString('utf8').split('\n') : [];
  if (parts.length !== 3 || !parts[0] || !parts[1]) {
    throw new QueueError('ReceiptHandleIsInvalid', `The input receipt handle "${handle}" is not a valid receipt handle.`);
  }
  return { queue: parts[0], messageId: parts[1] };
}

/** One standard queue: its settings and its messages. */
export class MemoryQueue {
  readonly name: string;
  readonly arn: string;
  readonly createdAt: number;
  settings: QueueSettings;
  lastModifiedAt: number;
  readonly messages = new Map<string, StoredMessage>();
  /** FIFO: deduplication key → the message it stands for and when it was sent. */
  readonly deduplicated = new Map<string, { result: SendResult; sentAt: number }>();

  constructor(name: string, arn: string, settings: QueueSettings, now: number) {
    this.name = name;
    this.arn = arn;
    this.settings = settings;
    this.createdAt = now;
    this.lastModifiedAt = now;
  }

  counts(now: number): QueueCounts {
    let visible = 0;
    let notVisible = 0;
    let delayed = 0;
    for (const message of this.messages.values()) {
      if (message.visibleAt <= now) visible++;
      else if (message.receiveCount === 0) delayed++;
      else notVisible++;
    }
    return { visible, notVisible, delayed };
  }

  /**
   * Seconds since the oldest message that is not delayed (visible or in flight) was sent; 0 when
   * there is none. SQS publishes this only as the CloudWatch metric of the same name; the
   * embedded queue answers it as a queue attribute so `operless status` can show it locally.
   */
  oldestMessageAgeSeconds(now: number): number {
    let oldest = now;
    for (const message of this.messages.values()) {
      if (message.receiveCount === 0 && message.visibleAt > now) continue; // still delayed
      if (message.sentAt < oldest) oldest = message.sentAt;
    }
    return Math.max(0, Math.floor((now - oldest) / 1000));
  }

  /** SQS's string attributes of this queue, as GetQueueAttributes returns them. */
  attributes(now: number): Record<string, string> {
    const counts = this.counts(now);
    const attributes: Record<string, string> = {
      QueueArn: this.arn,
      ApproximateNumberOfMessages: String(counts.visible),
      ApproximateNumberOfMessagesNotVisible: String(counts.notVisible),
      ApproximateNumberOfMessagesDelayed: String(counts.delayed),
      // Not an SQS queue attribute (on AWS: the CloudWatch metric); see oldestMessageAgeSeconds.
      ApproximateAgeOfOldestMessage: String(this.oldestMessageAgeSeconds(now)),
      CreatedTimestamp: String(Math.floor(this.createdAt / 1000)),
      LastModifiedTimestamp: String(Math.floor(this.lastModifiedAt / 1000)),
      VisibilityTimeout: String(this.settings.visibilityTimeoutSeconds),
      MaximumMessageSize: String(this.settings.maximumMessageSize),
      MessageRetentionPeriod: String(this.settings.messageRetentionPeriodSeconds),
      DelaySeconds: String(this.settings.delaySeconds),
      ReceiveMessageWaitTimeSeconds: String(this.settings.receiveMessageWaitTimeSeconds),
      SqsManagedSseEnabled: 'false',
    };
    if (this.settings.redrivePolicy) attributes.RedrivePolicy = JSON.stringify(this.settings.redrivePolicy);
    if (this.settings.fifo) {
      attributes.FifoQueue = 'true';
      attributes.ContentBasedDeduplication = String(this.settings.contentBasedDeduplication);
      attributes.DeduplicationScope = this.settings.deduplicationScope;
    }
    return attributes;
  }
}

export interface MemoryBrokerOptions {
  readonly clock?: Clock;
  readonly region?: string;
}

/**
 * A set of named queues with SQS operations. Queue arguments are queue *names*; the HTTP
 * adapter maps queue URLs to names.
 */
export class MemoryBroker {
  readonly region: string;
  private readonly clock: Clock;
  private readonly queues = new Map<string, MemoryQueue>();
  private readonly listeners = new Set<(queue: string) => void>();
  private seq = 0;

  constructor(options: MemoryBrokerOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.region = options.region ?? 'us-east-1';
  }

  /** Called with a queue name whenever messages may have become available there. */
  onChange(listener: (queue: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(queue: string): void {
    for (const listener of this.listeners) listener(queue);
  }

  now(): number {
    return this.clock.now();
  }

  /** Creates a queue, or returns the existing one when the attributes given agree with it. */
  createQueue(name: string, attributes: Readonly<Record<string, string>> = {}): MemoryQueue {
    if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
      throw new QueueError(
        'InvalidParameterValue',
        `Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length, a FIFO queue's ending in .fifo (queue name ${JSON.stringify(name)}).`,
      );
    }
    const settings = applyQueueAttributes(DEFAULT_SETTINGS, attributes);
    if (settings.fifo !== name.endsWith('.fifo')) {
      throw new QueueError(
        'InvalidParameterValue',
        settings.fifo
          ? 'The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix.'
          : `Queue ${name} ends in .fifo: set the attribute FifoQueue to true.`,
      );
    }
    const existing = this.queues.get(name);
    if (existing) {
      const current = existing.attributes(this.now());
      const requested = new MemoryQueue(name, existing.arn, settings, 0).attributes(0);
      for (const key of Object.keys(attributes)) {
        if (key in requested && current[key] !== requested[key]) {
          throw new QueueError('QueueNameExists', `A queue already exists with the same name and a different value for attribute ${key}.`);
        }
      }
      return existing;
    }
    if (settings.redrivePolicy) this.requireDeadLetterQueue(settings.redrivePolicy, settings.fifo);
    const queue = new MemoryQueue(name, queueArn(this.region, name), settings, this.now());
    this.queues.set(name, queue);
    return queue;
  }

  private requireDeadLetterQueue(policy: RedrivePolicy, fifo: boolean): MemoryQueue {
    const target = [...this.queues.values()].find((queue) => queue.arn === policy.deadLetterTargetArn);
    if (!target) {
      throw new QueueError(
        'InvalidParameterValue',
        `Value ${JSON.stringify(policy)} for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist (create the DLQ first).`,
      );
    }
    if (target.settings.fifo !== fifo) {
      throw new QueueError(
        'InvalidParameterValue',
        `Value ${JSON.stringify(policy)} for parameter RedrivePolicy is invalid. Reason: Dead-letter target owner queue and its DLQ must be both FIFO or both standard.`,
      );
    }
    return target;
  }

  deleteQueue(name: string): void {
    this.queue(name);
    this.queues.delete(name);
  }

  queue(name: string): MemoryQueue {
    const queue = this.queues.get(name);
    if (!queue) throw new QueueError('QueueDoesNotExist', `The specified queue ${name} does not exist.`);
    return queue;
  }

  listQueues(prefix = ''): string[] {
    return [...this.queues.keys()].filter((name) => name.startsWith(prefix)).sort();
  }

  setQueueAttributes(name: string, attributes: Readonly<Record<string, string>>): void {
    const queue = this.queue(name);
    const settings = applyQueueAttributes(queue.settings, attributes);
    if (settings.redrivePolicy) this.requireDeadLetterQueue(settings.redrivePolicy, settings.fifo);
    queue.settings = settings;
    queue.lastModifiedAt = this.now();
    this.changed(name);
  }

  getQueueAttributes(name: string, names: readonly string[] = ['All']): Record<string, string> {
    const queue = this.queue(name);
    this.expire(queue);
    const all = queue.attributes(this.now());
    if (names.includes('All')) return all;
    const selected: Record<string, string> = {};
    for (const attribute of names) {
      if (attribute in all) selected[attribute] = all[attribute]!;
      else if (
        ![
          'Policy',
          'RedrivePolicy',
          'RedriveAllowPolicy',
          'KmsMasterKeyId',
          'KmsDataKeyReusePeriodSeconds',
          'FifoQueue',
          'ContentBasedDeduplication',
          'DeduplicationScope',
          'FifoThroughputLimit',
        ].includes(attribute)
      ) {
        throw new QueueError('InvalidAttributeName', `Unknown Attribute ${attribute}.`);
      }
    }
    return selected;
  }

  counts(name: string): QueueCounts {
    const queue = this.queue(name);
    this.expire(queue);
    return queue.counts(this.now());
  }

  purgeQueue(name: string): void {
    this.queue(name).messages.clear();
  }

  sendMessage(name: string, input: SendInput): SendResult {
    const queue = this.queue(name);
    const result = this.store(queue, input);
    this.changed(name);
    return result;
  }

  sendMessageBatch(name: string, entries: readonly (SendInput & { id: string })[]): BatchResult<SendResult & { id: string }> {
    const queue = this.queue(name);
    validateBatchEntryIds(entries.map((entry) => entry.id));
    const total = entries.reduce((sum, entry) => sum + messageSize(entry.body ?? '', entry.messageAttributes), 0);
    if (total > MAX_BATCH_BYTES) {
      throw new QueueError('BatchRequestTooLong', `Batch requests cannot be longer than ${MAX_BATCH_BYTES} bytes. You have sent ${total} bytes.`);
    }
    const result: BatchResult<SendResult & { id: string }> = { successful: [], failed: [] };
    for (const entry of entries) {
      try {
        result.successful.push({ id: entry.id, ...this.store(queue, entry) });
      } catch (err) {
        result.failed.push(entryFailure(entry.id, err));
      }
    }
    if (result.successful.length > 0) this.changed(name);
    return result;
  }

  private store(queue: MemoryQueue, input: SendInput): SendResult {
    const body = validateBody(input.body);
    const fifo = fifoSend(queue.settings, input, body);
    const delay = integerIn(input.delaySeconds, 0, MAX_DELAY_SECONDS, 'DelaySeconds') ?? queue.settings.delaySeconds;
    const messageAttributes = input.messageAttributes ?? {};
    validateMessageAttributes(messageAttributes);
    const size = messageSize(body, messageAttributes);
    if (size > queue.settings.maximumMessageSize) {
      throw new QueueError(
        'InvalidParameterValue',
        `One or more parameters are invalid. Reason: Message must be shorter than ${queue.settings.maximumMessageSize} bytes (it is ${size}).`,
      );
    }
    const now = this.now();
    if (fifo) {
      for (const [key, entry] of queue.deduplicated) if (now - entry.sentAt >= DEDUPLICATION_WINDOW_MS) queue.deduplicated.delete(key);
      const earlier = queue.deduplicated.get(fifo.deduplicationKey);
      // Accepted, not stored: SQS answers as if sent (the MD5s are of what this request sent).
      if (earlier) return { ...earlier.result, md5OfMessageBody: md5Hex(body), md5OfMessageAttributes: md5OfMessageAttributes(messageAttributes) };
    }
    const message: StoredMessage = {
      id: randomUUID(),
      seq: this.seq++,
      body,
      md5OfBody: md5Hex(body),
      messageAttributes,
      md5OfMessageAttributes: md5OfMessageAttributes(messageAttributes),
      awsTraceHeader: input.awsTraceHeader,
      sentAt: now,
      groupId: fifo?.groupId,
      deduplicationId: fifo?.deduplicationId,
      deadLetterQueueSourceArn: undefined,
      visibleAt: now + delay * 1000,
      receiveCount: 0,
      firstReceivedAt: undefined,
      receiptHandle: undefined,
    };
    queue.messages.set(message.id, message);
    const result: SendResult = {
      messageId: message.id,
      md5OfMessageBody: message.md5OfBody,
      md5OfMessageAttributes: message.md5OfMessageAttributes,
      ...(fifo ? { sequenceNumber: sequenceNumber(message.seq) } : {}),
    };
    if (fifo) queue.deduplicated.set(fifo.deduplicationKey, { result, sentAt: now });
    return result;
  }

  /**
   * Receives up to `maxNumberOfMessages` visible messages (oldest first), hiding each for the
   * visibility timeout. A message that was already received `maxReceiveCount` times is moved
   * to the dead-letter queue instead of being returned.
   */
  receiveMessage(name: string, input: ReceiveInput = {}): ReceivedMessage[] {
    const queue = this.queue(name);
    const max = integerIn(input.maxNumberOfMessages, 1, 10, 'MaxNumberOfMessages') ?? 1;
    const visibility =
      integerIn(input.visibilityTimeoutSeconds, 0, MAX_VISIBILITY_TIMEOUT_SECONDS, 'VisibilityTimeout') ?? queue.settings.visibilityTimeoutSeconds;
    const attributeNames = input.attributeNames ?? [];
    for (const attribute of attributeNames) {
      if (!KNOWN_SYSTEM_ATTRIBUTES.has(attribute)) throw new QueueError('InvalidAttributeName', `Unknown Attribute ${attribute}.`);
    }
    this.expire(queue);
    const now = this.now();
    const ready = [...queue.messages.values()].filter((m) => m.visibleAt <= now).sort((a, b) => a.seq - b.seq);
    // FIFO: a group with a message in flight gives nothing until it is deleted or visible again.
    const busyGroups = new Set(
      queue.settings.fifo ? [...queue.messages.values()].filter((m) => m.receiveCount > 0 && m.visibleAt > now).map((m) => m.groupId) : [],
    );
    const received: ReceivedMessage[] = [];
    const policy = queue.settings.redrivePolicy;
    for (const message of ready) {
      if (received.length >= max) break;
      if (busyGroups.has(message.groupId)) continue;
      if (policy && message.receiveCount >= policy.maxReceiveCount) {
        this.moveToDeadLetterQueue(queue, message, policy);
        continue;
      }
      message.receiveCount++;
      message.firstReceivedAt ??= now;
      message.visibleAt = now + visibility * 1000;
      message.receiptHandle = encodeReceiptHandle(queue.name, message.id);
      received.push(this.view(message, attributeNames, input.messageAttributeNames ?? []));
    }
    return received;
  }

  private moveToDeadLetterQueue(queue: MemoryQueue, message: StoredMessage, policy: RedrivePolicy): void {
    queue.messages.delete(message.id);
    const target = [...this.queues.values()].find((q) => q.arn === policy.deadLetterTargetArn);
    if (!target) return; // the DLQ was deleted: SQS drops such messages as well
    // SQS keeps the message id, body, attributes and original SentTimestamp; the receive count
    // starts again in the DLQ.
    target.messages.set(message.id, {
      ...message,
      seq: this.seq++,
      deadLetterQueueSourceArn: queue.arn,
      visibleAt: this.now(),
      receiveCount: 0,
      firstReceivedAt: undefined,
      receiptHandle: undefined,
    });
    this.changed(target.name);
  }

  private view(message: StoredMessage, attributeNames: readonly string[], selectors: readonly string[]): ReceivedMessage {
    const all = attributeNames.includes('All');
    const attributes: Record<string, string> = {};
    const system: Record<string, string | undefined> = {
      ApproximateReceiveCount: String(message.receiveCount),
      ApproximateFirstReceiveTimestamp: String(message.firstReceivedAt),
      SentTimestamp: String(message.sentAt),
      SenderId: ACCOUNT_ID,
      AWSTraceHeader: message.awsTraceHeader,
      DeadLetterQueueSourceArn: message.deadLetterQueueSourceArn,
      MessageGroupId: message.groupId,
      MessageDeduplicationId: message.deduplicationId,
      SequenceNumber: message.groupId === undefined ? undefined : sequenceNumber(message.seq),
    };
    for (const name of SYSTEM_ATTRIBUTES) {
      const value = system[name];
      if (value !== undefined && (all || attributeNames.includes(name))) attributes[name] = value;
    }
    const messageAttributes: Record<string, MessageAttributeValue> = {};
    for (const [name, value] of Object.entries(message.messageAttributes)) {
      if (attributeSelected(name, selectors)) messageAttributes[name] = value;
    }
    return {
      messageId: message.id,
      receiptHandle: message.receiptHandle!,
      body: message.body,
      md5OfBody: message.md5OfBody,
      attributes,
      messageAttributes,
      md5OfMessageAttributes: Object.keys(messageAttributes).length > 0 ? message.md5OfMessageAttributes : undefined,
    };
  }

  /** Deletes a received message. A stale handle (the message was received again since) is ignored, as in SQS. */
  deleteMessage(name: string, receiptHandle: string): void {
    const queue = this.queue(name);
    const { messageId } = this.handleFor(queue, receiptHandle);
    const message = queue.messages.get(messageId);
    if (message && message.receiptHandle === receiptHandle) queue.messages.delete(messageId);
  }

  deleteMessageBatch(name: string, entries: readonly { id: string; receiptHandle: string }[]): BatchResult<{ id: string }> {
    this.queue(name);
    validateBatchEntryIds(entries.map((entry) => entry.id));
    return this.eachEntry(entries, (entry) => this.deleteMessage(name, entry.receiptHandle));
  }

  /** Changes when a received (in-flight) message becomes visible again, counted from now. */
  changeMessageVisibility(name: string, receiptHandle: string, visibilityTimeoutSeconds: number): void {
    const queue = this.queue(name);
    const seconds = integerIn(visibilityTimeoutSeconds, 0, MAX_VISIBILITY_TIMEOUT_SECONDS, 'VisibilityTimeout')!;
    const { messageId } = this.handleFor(queue, receiptHandle);
    const message = queue.messages.get(messageId);
    if (!message || message.receiptHandle !== receiptHandle) {
      throw new QueueError(
        'InvalidParameterValue',
        `Value ${receiptHandle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
      );
    }
    const now = this.now();
    if (message.visibleAt <= now) {
      throw new QueueError('MessageNotInflight', 'The message referred to is not in flight (its visibility timeout has already expired).');
    }
    message.visibleAt = now + seconds * 1000;
    if (seconds === 0) this.changed(name);
  }

  changeMessageVisibilityBatch(
    name: string,
    entries: readonly { id: string; receiptHandle: string; visibilityTimeoutSeconds: number }[],
  ): BatchResult<{ id: string }> {
    this.queue(name);
    validateBatchEntryIds(entries.map((entry) => entry.id));
    return this.eachEntry(entries, (entry) => this.changeMessageVisibility(name, entry.receiptHandle, entry.visibilityTimeoutSeconds));
  }

  private eachEntry<E extends { id: string }>(entries: readonly E[], apply: (entry: E) => void): BatchResult<{ id: string }> {
    const result: BatchResult<{ id: string }> = { successful: [], failed: [] };
    for (const entry of entries) {
      try {
        apply(entry);
        result.successful.push({ id: entry.id });
      } catch (err) {
        result.failed.push(entryFailure(entry.id, err));
      }
    }
    return result;
  }

  private handleFor(queue: MemoryQueue, receiptHandle: string): { messageId: string } {
    const decoded = decodeReceiptHandle(receiptHandle);
    if (decoded.queue !== queue.name) {
      throw new QueueError('ReceiptHandleIsInvalid', `The receipt handle belongs to queue ${decoded.queue}, not ${queue.name}.`);
    }
    return decoded;
  }

  /**
   * The earliest time (ms) at which a currently hidden message of this queue becomes visible,
   * or undefined when none is hidden. Long polling sleeps until then at most.
   */
  earliestChangeAt(name: string): number | undefined {
    const now = this.now();
    let earliest: number | undefined;
    for (const message of this.queue(name).messages.values()) {
      if (message.visibleAt > now && (earliest === undefined || message.visibleAt < earliest)) earliest = message.visibleAt;
    }
    return earliest;
  }

  private expire(queue: MemoryQueue): void {
    const cutoff = this.now() - queue.settings.messageRetentionPeriodSeconds * 1000;
    for (const [id, message] of queue.messages) {
      if (message.sentAt < cutoff) queue.messages.delete(id);
    }
  }
}

/** SQS's FIFO sequence numbers: a large, increasing decimal string. */
function sequenceNumber(seq: number): string {
  return String(seq).padStart(20, '1');
}

/**
 * A send's FIFO fields checked against its queue: for a FIFO queue its group, deduplication id
 * (given, or the body's SHA-256 with content-based deduplication) and the key under which
 * duplicates are found; undefined for a standard queue.
 */
function fifoSend(settings: QueueSettings, input: SendInput, body: string): { groupId: string; deduplicationId: string; deduplicationKey: string } | undefined {
  const notForThisQueue = (parameter: string) =>
    new QueueError('InvalidParameterValue', `The request include parameter ${parameter} that is not valid for this queue type.`);
  if (!settings.fifo) {
    if (input.deduplicationId !== undefined) throw notForThisQueue('MessageDeduplicationId');
    return undefined;
  }
  if (input.delaySeconds !== undefined && input.delaySeconds !== 0) {
    throw new QueueError(
      'InvalidParameterValue',
      `Value ${input.delaySeconds} for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.`,
    );
  }
  if (input.groupId === undefined) throw new QueueError('MissingParameter', 'The request must contain the parameter MessageGroupId.');
  if (!FIFO_ID.test(input.groupId))
    throw new QueueError('InvalidParameterValue', `Value ${input.groupId} for parameter MessageGroupId is invalid: 1 to 128 letters, digits or punctuation.`);
  if (input.deduplicationId !== undefined && !FIFO_ID.test(input.deduplicationId)) {
    throw new QueueError(
      'InvalidParameterValue',
      `Value ${input.deduplicationId} for parameter MessageDeduplicationId is invalid: 1 to 128 letters, digits or punctuation.`,
    );
  }
  const deduplicationId = input.deduplicationId ?? (settings.contentBasedDeduplication ? createHash('sha256').update(body).digest('hex') : undefined);
  if (deduplicationId === undefined) {
    throw new QueueError(
      'InvalidParameterValue',
      'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly',
    );
  }
  const deduplicationKey = settings.deduplicationScope === 'messageGroup' ? `${input.groupId}\n${deduplicationId}` : deduplicationId;
  return { groupId: input.groupId, deduplicationId, deduplicationKey };
}

function entryFailure(id: string, err: unknown): BatchEntryFailure {
  if (err instanceof QueueError) return { id, code: err.code, message: err.message, senderFault: true };
  return { id, code: 'InternalError', message: err instanceof Error ? err.message : String(err), senderFault: false };
}
