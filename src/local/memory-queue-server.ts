/**
 * The embedded queue as a server: a loopback HTTP endpoint speaking the SQS JSON protocol
 * (`application/x-amz-json-1.0`, `X-Amz-Target: AmazonSQS.<Operation>`) over the in-memory
 * model in `memory-queue.ts`, so `@aws-sdk/client-sqs` talks to it through `endpoint` exactly
 * as it talks to AWS — every component keeps the one real SQS client code path.
 *
 * Guarantees:
 * - Operations: CreateQueue, DeleteQueue, GetQueueUrl, GetQueueAttributes, SetQueueAttributes,
 *   ListQueues, PurgeQueue, SendMessage(+Batch), ReceiveMessage (long polling up to 20 s),
 *   DeleteMessage(+Batch), ChangeMessageVisibility(+Batch). Anything else answers
 *   `UnsupportedOperation` naming the operation.
 * - Errors use SQS's JSON error shape (`__type`, `message`) plus the `x-amzn-query-error`
 *   header, so the SDK raises the same named exceptions (`QueueDoesNotExist`, …) as with AWS.
 * - Long polls end as soon as a message is available, at the wait time, or at `stop()`;
 *   a poll whose client went away receives nothing (no message is hidden for a dead client).
 * - Listens on 127.0.0.1 only; no authentication (signatures are not checked). A request whose
 *   `Host` is not a loopback name (127.0.0.1, localhost, [::1]) is refused with `AccessDenied`
 *   (403) before its body is read: a web page in a browser on the same machine cannot reach
 *   the queue through DNS rebinding.
 * - A request body longer than any valid request can be (`MAX_REQUEST_BODY_BYTES`: SQS's
 *   1 MiB batch limit at JSON's worst-case escaping, plus room for ids and attributes) is
 *   refused without being buffered, with `BatchRequestTooLong` for a batch send and
 *   `InvalidParameterValue` otherwise, and the connection is closed. Messages and batches over
 *   SQS's own limits within that are refused by the model (memory-queue.ts) as SQS does.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  ACCOUNT_ID,
  MAX_BATCH_BYTES,
  MAX_WAIT_TIME_SECONDS,
  MemoryBroker,
  QueueError,
  type Clock,
  type MessageAttributes,
  type ReceivedMessage,
  type SendInput,
} from './memory-queue.ts';

/** A queue and its DLQ: what the embedded queue and the test harness's `startBroker` (ElasticMQ) both take. */
export interface QueueSpec {
  readonly name: string;
  readonly visibilityTimeoutSeconds?: number;
  readonly delaySeconds?: number;
  /** Long-poll wait when a receive does not say; 0 by default. */
  readonly receiveMessageWaitSeconds?: number;
  readonly dlq?: { readonly name: string; readonly maxReceiveCount: number };
}

export interface MemoryQueueServerOptions {
  readonly queues?: readonly QueueSpec[];
  /** 0 (default) picks a free port. */
  readonly port?: number;
  readonly region?: string;
  readonly clock?: Clock;
}

export interface MemoryQueueServer {
  /** `http://127.0.0.1:<port>`: give it to SQSClient as `endpoint` (or `AWS_ENDPOINT_URL_SQS`). */
  readonly endpoint: string;
  readonly region: string;
  /** The in-memory model, for inspection in tests. */
  readonly broker: MemoryBroker;
  queueUrl(name: string): string;
  /** An SQS client configured for this server (region, endpoint, dummy credentials). */
  sqs(): SQSClient;
  createQueue(spec: QueueSpec): Promise<string>;
  stop(): Promise<void>;
}

/** SDK error name → [query-compatible error code, HTTP status], from the SQS service model. */
const ERRORS: Readonly<Record<string, readonly [string, number]>> = {
  QueueDoesNotExist: ['AWS.SimpleQueueService.NonExistentQueue', 400],
  QueueNameExists: ['QueueAlreadyExists', 400],
  TooManyEntriesInBatchRequest: ['AWS.SimpleQueueService.TooManyEntriesInBatchRequest', 400],
  EmptyBatchRequest: ['AWS.SimpleQueueService.EmptyBatchRequest', 400],
  BatchEntryIdsNotDistinct: ['AWS.SimpleQueueService.BatchEntryIdsNotDistinct', 400],
  InvalidBatchEntryId: ['AWS.SimpleQueueService.InvalidBatchEntryId', 400],
  BatchRequestTooLong: ['AWS.SimpleQueueService.BatchRequestTooLong', 400],
  ReceiptHandleIsInvalid: ['ReceiptHandleIsInvalid', 404],
  MessageNotInflight: ['AWS.SimpleQueueService.MessageNotInflight', 400],
  UnsupportedOperation: ['AWS.SimpleQueueService.UnsupportedOperation', 400],
  PurgeQueueInProgress: ['AWS.SimpleQueueService.PurgeQueueInProgress', 403],
  InvalidAttributeName: ['InvalidAttributeName', 400],
  InvalidAttributeValue: ['InvalidAttributeValue', 400],
  InvalidMessageContents: ['InvalidMessageContents', 400],
  InvalidParameterValue: ['InvalidParameterValue', 400],
  MissingParameter: ['MissingParameter', 400],
  AccessDenied: ['AccessDenied', 403],
};

/** The longest request body any valid request can have: a full batch with every byte escaped as `\u00XX`, plus framing. */
export const MAX_REQUEST_BODY_BYTES = 6 * MAX_BATCH_BYTES + 256 * 1024;

/** Whether a `Host` header names this machine's loopback interface. Pure. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
  return ['127.0.0.1', 'localhost', '[::1]'].includes(name.toLowerCase());
}

/** The body was longer than `MAX_REQUEST_BODY_BYTES` (reading stopped there). */
class BodyTooLarge extends Error {}

type Json = Record<string, unknown>;

export async function startMemoryQueueServer(options: MemoryQueueServerOptions = {}): Promise<MemoryQueueServer> {
  const region = options.region ?? 'us-east-1';
  const broker = new MemoryBroker({ region, ...(options.clock ? { clock: options.clock } : {}) });
  const state: ServerState = {
    broker,
    waiters: new Set(),
    stopping: false,
    endpoint: '',
    queueUrl: (name) => `${state.endpoint}/${ACCOUNT_ID}/${name}`,
  };
  broker.onChange(() => wakeAll(state));
  const operations: Readonly<Record<string, Operation>> = { ...queueOperations(state), ...messageOperations(state) };
  const active = new Set<Promise<void>>();
  const server: Server = createServer((req, res) => {
    const request = handleRequest(state, operations, req, res).finally(() => active.delete(request));
    active.add(request);
  });
  await listen(server, options.port);
  state.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const spec of options.queues ?? []) createQueueFrom(state, spec);

  return {
    endpoint: state.endpoint,
    region,
    broker,
    queueUrl: state.queueUrl,
    sqs: () => new SQSClient({ region, endpoint: state.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
    createQueue: async (spec) => createQueueFrom(state, spec),
    stop: async () => {
      state.stopping = true;
      wakeAll(state);
      // Long polls answer (empty) at once, with `Connection: close` so clients hang up cleanly.
      await Promise.allSettled([...active]);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 1000).unref();
      });
    },
  };
}

/** What the server's parts share: the model, the long polls waiting on it, whether it stops. */
interface ServerState {
  readonly broker: MemoryBroker;
  /** Long polls waiting for a change. */
  readonly waiters: Set<() => void>;
  stopping: boolean;
  endpoint: string;
  queueUrl(name: string): string;
}

type Operation = (input: Json, closed: () => boolean) => Json | Promise<Json>;

function wakeAll(state: ServerState): void {
  for (const wake of [...state.waiters]) wake();
}

function listen(server: Server, port: number | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`The embedded queue cannot listen on 127.0.0.1:${port}: the port is in use. Pick another port, or 0 for a free one.`)
          : err,
      );
    });
    server.listen(port ?? 0, '127.0.0.1', () => resolve());
  });
}

/** Accepts a queue URL (any host; the last path segment names the queue) or a bare name. */
function queueNameOf(url: unknown): string {
  if (typeof url !== 'string' || url === '') throw new QueueError('MissingParameter', 'The request must contain the parameter QueueUrl.');
  return url.replace(/\/+$/, '').split('/').pop() ?? '';
}

function createQueueFrom(state: ServerState, spec: QueueSpec): string {
  const attributes: Record<string, string> = {};
  if (spec.visibilityTimeoutSeconds !== undefined) attributes.VisibilityTimeout = String(spec.visibilityTimeoutSeconds);
  if (spec.delaySeconds !== undefined) attributes.DelaySeconds = String(spec.delaySeconds);
  if (spec.receiveMessageWaitSeconds !== undefined) attributes.ReceiveMessageWaitTimeSeconds = String(spec.receiveMessageWaitSeconds);
  // A name ending in .fifo is a FIFO queue (as in the broker's config, testing/config.ts).
  const fifo = (name: string): Record<string, string> => (name.endsWith('.fifo') ? { FifoQueue: 'true' } : {});
  Object.assign(attributes, fifo(spec.name));
  if (spec.dlq) {
    const dlq = state.broker.createQueue(spec.dlq.name, fifo(spec.dlq.name));
    attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: spec.dlq.maxReceiveCount });
  }
  state.broker.createQueue(spec.name, attributes);
  return state.queueUrl(spec.name);
}

/** Waits until `attempt` yields messages, the deadline passes, the server stops or the client leaves. */
async function longPoll(
  state: ServerState,
  name: string,
  waitSeconds: number,
  closed: () => boolean,
  attempt: () => ReceivedMessage[],
): Promise<ReceivedMessage[]> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    if (closed() || state.stopping) return [];
    const messages = attempt();
    const remaining = deadline - Date.now();
    if (messages.length > 0 || remaining <= 0) return messages;
    const next = state.broker.earliestChangeAt(name);
    const sleep = Math.max(1, Math.min(remaining, next === undefined ? remaining : next - state.broker.now()));
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        state.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, sleep);
      state.waiters.add(wake);
    });
  }
}

/** The operations on queues. */
function queueOperations(state: ServerState): Record<string, Operation> {
  return {
    CreateQueue: (input) => {
      state.broker.createQueue(str(input.QueueName, 'QueueName'), stringMap(input.Attributes));
      return { QueueUrl: state.queueUrl(str(input.QueueName, 'QueueName')) };
    },
    DeleteQueue: (input) => {
      state.broker.deleteQueue(queueNameOf(input.QueueUrl));
      return {};
    },
    GetQueueUrl: (input) => {
      const name = str(input.QueueName, 'QueueName');
      state.broker.queue(name);
      return { QueueUrl: state.queueUrl(name) };
    },
    ListQueues: (input) => {
      const names = state.broker.listQueues(typeof input.QueueNamePrefix === 'string' ? input.QueueNamePrefix : '');
      const max = typeof input.MaxResults === 'number' ? input.MaxResults : 1000;
      return names.length ? { QueueUrls: names.slice(0, max).map((n) => state.queueUrl(n)) } : {};
    },
    GetQueueAttributes: (input) => ({
      Attributes: state.broker.getQueueAttributes(queueNameOf(input.QueueUrl), stringList(input.AttributeNames) ?? ['All']),
    }),
    SetQueueAttributes: (input) => {
      state.broker.setQueueAttributes(queueNameOf(input.QueueUrl), stringMap(input.Attributes));
      return {};
    },
    PurgeQueue: (input) => {
      state.broker.purgeQueue(queueNameOf(input.QueueUrl));
      return {};
    },
  };
}

/** The operations on messages. */
function messageOperations(state: ServerState): Record<string, Operation> {
  return {
    SendMessage: (input) => {
      const result = state.broker.sendMessage(queueNameOf(input.QueueUrl), sendInput(input));
      return compact({
        MessageId: result.messageId,
        MD5OfMessageBody: result.md5OfMessageBody,
        MD5OfMessageAttributes: result.md5OfMessageAttributes,
        SequenceNumber: result.sequenceNumber,
      });
    },
    SendMessageBatch: (input) => {
      const entries = entryList(input.Entries).map((entry) => ({ id: entry.Id as string, ...sendInput(entry) }));
      const result = state.broker.sendMessageBatch(queueNameOf(input.QueueUrl), entries);
      return {
        Successful: result.successful.map((s) =>
          compact({
            Id: s.id,
            MessageId: s.messageId,
            MD5OfMessageBody: s.md5OfMessageBody,
            MD5OfMessageAttributes: s.md5OfMessageAttributes,
            SequenceNumber: s.sequenceNumber,
          }),
        ),
        Failed: result.failed.map(failure),
      };
    },
    ReceiveMessage: async (input, closed) => {
      const name = queueNameOf(input.QueueUrl);
      const queue = state.broker.queue(name);
      const wait = typeof input.WaitTimeSeconds === 'number' ? input.WaitTimeSeconds : queue.settings.receiveMessageWaitTimeSeconds;
      if (!Number.isInteger(wait) || wait < 0 || wait > MAX_WAIT_TIME_SECONDS) {
        throw new QueueError('InvalidParameterValue', `Value ${wait} for parameter WaitTimeSeconds is invalid. Reason: must be from 0 to 20.`);
      }
      const receive = () =>
        state.broker.receiveMessage(name, {
          maxNumberOfMessages: optionalNumber(input.MaxNumberOfMessages),
          visibilityTimeoutSeconds: optionalNumber(input.VisibilityTimeout),
          attributeNames: [...(stringList(input.AttributeNames) ?? []), ...(stringList(input.MessageSystemAttributeNames) ?? [])],
          messageAttributeNames: stringList(input.MessageAttributeNames) ?? [],
        });
      const messages = await longPoll(state, name, wait, closed, receive);
      return messages.length === 0 ? {} : { Messages: messages.map(toWireMessage) };
    },
    DeleteMessage: (input) => {
      state.broker.deleteMessage(queueNameOf(input.QueueUrl), str(input.ReceiptHandle, 'ReceiptHandle'));
      return {};
    },
    DeleteMessageBatch: (input) => {
      const entries = entryList(input.Entries).map((e) => ({ id: e.Id as string, receiptHandle: e.ReceiptHandle as string }));
      const result = state.broker.deleteMessageBatch(queueNameOf(input.QueueUrl), entries);
      return { Successful: result.successful.map((s) => ({ Id: s.id })), Failed: result.failed.map(failure) };
    },
    ChangeMessageVisibility: (input) => {
      state.broker.changeMessageVisibility(
        queueNameOf(input.QueueUrl),
        str(input.ReceiptHandle, 'ReceiptHandle'),
        requiredNumber(input.VisibilityTimeout, 'VisibilityTimeout'),
      );
      return {};
    },
    ChangeMessageVisibilityBatch: (input) => {
      const entries = entryList(input.Entries).map((e) => ({
        id: e.Id as string,
        receiptHandle: e.ReceiptHandle as string,
        visibilityTimeoutSeconds: requiredNumber(e.VisibilityTimeout, 'VisibilityTimeout'),
      }));
      const result = state.broker.changeMessageVisibilityBatch(queueNameOf(input.QueueUrl), entries);
      return { Successful: result.successful.map((s) => ({ Id: s.id })), Failed: result.failed.map(failure) };
    },
  };
}

/** One request: the operation its `X-Amz-Target` names, answered in SQS's JSON shapes (errors too). */
async function handleRequest(state: ServerState, operations: Readonly<Record<string, Operation>>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = randomUUID();
  let clientGone = false;
  res.on('close', () => {
    clientGone = !res.writableFinished;
  });
  try {
    const target = String(req.headers['x-amz-target'] ?? '');
    if (!isLoopbackHost(req.headers.host)) {
      throw new QueueError(
        'AccessDenied',
        `The embedded queue answers loopback requests only (Host 127.0.0.1, localhost or [::1]); this request names Host ${JSON.stringify(String(req.headers.host ?? '').slice(0, 100))}.`,
      );
    }
    let raw: string;
    try {
      raw = await readBody(req, MAX_REQUEST_BODY_BYTES);
    } catch (err) {
      if (!(err instanceof BodyTooLarge)) throw err;
      res.once('finish', () => req.destroy());
      const code = target === 'AmazonSQS.SendMessageBatch' ? 'BatchRequestTooLong' : 'InvalidParameterValue';
      throw new QueueError(
        code,
        `The request body is longer than ${MAX_REQUEST_BODY_BYTES} bytes, more than any valid request (SQS allows ${MAX_BATCH_BYTES} bytes of messages per request).`,
      );
    }
    if (req.method !== 'POST' || !target.startsWith('AmazonSQS.')) {
      throw new QueueError(
        'UnsupportedOperation',
        `The embedded queue speaks the SQS JSON protocol only (POST with X-Amz-Target: AmazonSQS.<Operation>); got ${req.method} ${req.url} target ${JSON.stringify(target)}. Use @aws-sdk/client-sqs v3.447 or newer.`,
      );
    }
    const operation = operations[target.slice('AmazonSQS.'.length)];
    if (!operation) throw new QueueError('UnsupportedOperation', `The embedded queue does not implement ${target}.`);
    let input: Json;
    try {
      input = raw.length ? (JSON.parse(raw) as Json) : {};
    } catch {
      throw new QueueError('InvalidParameterValue', 'The request body is not valid JSON.');
    }
    const output = await operation(input, () => clientGone);
    send(res, 200, requestId, output, state.stopping ? { connection: 'close' } : {});
  } catch (err) {
    const error = err instanceof QueueError ? err : new QueueError('InternalError', err instanceof Error ? err.message : String(err));
    const [queryCode, status] = ERRORS[error.code] ?? [error.code, error.code === 'InternalError' ? 500 : 400];
    send(
      res,
      status,
      requestId,
      { __type: `com.amazonaws.sqs#${error.code}`, message: error.message },
      {
        'x-amzn-query-error': `${queryCode};${status >= 500 ? 'Receiver' : 'Sender'}`,
        // A refused request's body may be unread: the connection cannot be reused.
        ...(state.stopping || !req.readableEnded ? { connection: 'close' } : {}),
      },
    );
  }
}

function send(res: ServerResponse, status: number, requestId: string, body: Json, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': Buffer.byteLength(payload),
    'x-amzn-requestid': requestId,
    ...headers,
  });
  res.end(payload);
}

/** The request body, or `BodyTooLarge` as soon as it (or its announced length) passes `limit`. */
async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  if (Number(req.headers['content-length'] ?? 0) > limit) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req) {
    length += (chunk as Buffer).length;
    if (length > limit) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function toWireMessage(message: ReceivedMessage): Json {
  const attributes: Json = {};
  for (const [name, value] of Object.entries(message.messageAttributes)) {
    attributes[name] = compact({
      DataType: value.DataType,
      StringValue: value.StringValue,
      BinaryValue: value.BinaryValue ? Buffer.from(value.BinaryValue).toString('base64') : undefined,
    });
  }
  return compact({
    MessageId: message.messageId,
    ReceiptHandle: message.receiptHandle,
    MD5OfBody: message.md5OfBody,
    Body: message.body,
    Attributes: Object.keys(message.attributes).length ? message.attributes : undefined,
    MD5OfMessageAttributes: message.md5OfMessageAttributes,
    MessageAttributes: Object.keys(attributes).length ? attributes : undefined,
  });
}

function sendInput(input: Json): SendInput & { body: string } {
  const attributes: Record<string, { DataType: string; StringValue?: string; BinaryValue?: Uint8Array }> = {};
  const wire = (input.MessageAttributes ?? {}) as Record<string, Json>;
  for (const [name, value] of Object.entries(wire)) {
    attributes[name] = compact({
      DataType: String(value.DataType ?? ''),
      StringValue: typeof value.StringValue === 'string' ? value.StringValue : undefined,
      BinaryValue: typeof value.BinaryValue === 'string' ? new Uint8Array(Buffer.from(value.BinaryValue, 'base64')) : undefined,
    });
  }
  const system = (input.MessageSystemAttributes ?? {}) as Record<string, Json>;
  const trace = system.AWSTraceHeader?.StringValue;
  return {
    body: input.MessageBody as string,
    delaySeconds: optionalNumber(input.DelaySeconds),
    messageAttributes: attributes,
    awsTraceHeader: typeof trace === 'string' ? trace : undefined,
    groupId: typeof input.MessageGroupId === 'string' ? input.MessageGroupId : undefined,
    deduplicationId: typeof input.MessageDeduplicationId === 'string' ? input.MessageDeduplicationId : undefined,
  };
}

function failure(entry: { id: string; code: string; message: string; senderFault: boolean }): Json {
  return { Id: entry.id, Code: entry.code, Message: entry.message, SenderFault: entry.senderFault };
}

function str(value: unknown, parameter: string): string {
  if (typeof value !== 'string' || value === '') throw new QueueError('MissingParameter', `The request must contain the parameter ${parameter}.`);
  return value;
}

function optionalNumber(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') throw new QueueError('InvalidParameterValue', `Expected a number, got ${JSON.stringify(value)}.`);
  return value;
}

function requiredNumber(value: unknown, parameter: string): number {
  const number = optionalNumber(value);
  if (number === undefined) throw new QueueError('MissingParameter', `The request must contain the parameter ${parameter}.`);
  return number;
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.map(String) : undefined;
}

function stringMap(value: unknown): Record<string, string> {
  if (!value || typeof value !== 'object') return {};
  return Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, String(v)]));
}

function entryList(value: unknown): Json[] {
  if (!Array.isArray(value)) throw new QueueError('EmptyBatchRequest', 'There should be at least one entry in the request.');
  return value as Json[];
}

function compact<T extends Record<string, unknown>>(value: T): T {
  for (const key of Object.keys(value)) if (value[key] === undefined) delete value[key];
  return value;
}
