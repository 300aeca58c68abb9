/**
 * The local Lambda runner: consumes an SQS queue the way Lambda's SQS event source mapping
 * does, and invokes a handler with the exact Lambda `SQSEvent` and a Lambda `Context`.
 *
 * What it reproduces (AWS Lambda "Using Lambda with Amazon SQS"):
 * - Long polling (20 s), `batchSize` (records per invocation, may exceed 10 by polling
 *   repeatedly), `maximumBatchingWindowInSeconds` (keep gathering after the first record
 *   until the batch is full or the window has passed), and `maximumConcurrency` (at most that
 *   many invocations at once: one poller per concurrent invocation).
 * - Records as Lambda builds them: messageId, receiptHandle, body, attributes
 *   (ApproximateReceiveCount, SentTimestamp, SenderId, ApproximateFirstReceiveTimestamp…),
 *   messageAttributes in Lambda's camelCase shape, md5OfBody, eventSource `aws:sqs`,
 *   eventSourceARN, awsRegion; a Context with awsRequestId and getRemainingTimeInMillis().
 * - Partial batch responses (`ReportBatchItemFailures`, on by default): records listed in
 *   `batchItemFailures` stay in the queue and the others are deleted. A null/empty response or
 *   list is full success; an invalid response (an item without a valid `itemIdentifier`, an
 *   identifier not in the batch, a non-object) fails the whole batch, as AWS documents.
 * - A thrown error or a timeout deletes nothing: every record reappears after the visibility
 *   timeout with a higher receive count, and the queue's redrive policy applies.
 * - FIFO queues (URL ending in `.fifo`): the queue gives a group's messages in order and none
 *   while one is in flight; batches hold at most 10 records; a record reported failed stops
 *   the rest of its group in that batch — they stay in the queue even when the handler did not
 *   report them (logged as a handler that breaks Lambda's FIFO rule), so a group is never
 *   consumed out of order.
 *
 * - Its own connections: the pollers talk to the queue through a client of their own (same
 *   region, credentials and endpoint as `sqs`) with one socket per poller. Long polls hold a
 *   socket for up to 20 s; on the caller's client they would take the SDK's 50 sockets as soon
 *   as `maxConcurrency` reaches 50, and every other call on that client (the forwarder's sends,
 *   a test's sends) would wait behind them — Lambda's pollers are AWS's, not the function's.
 *
 * What it does not: scale pollers up and down (it always runs `maxConcurrency` pollers), kill a
 * timed-out handler (in-process, the handler keeps running but its result is ignored), enforce
 * the 6 MB payload limit, or filter events (`filterPatterns`).
 */
import { randomUUID } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { createLogger, errorMessage, type Logger } from '../observability/log.ts';
import { sqsRequestHandler } from '../queue/sender.ts';

/** A Lambda SQS handler (async, as nodejs24.x requires). */
export type SQSHandlerFn = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void | undefined> | SQSBatchResponse | void;

/** A handler to import: a module path (the shipped `.mjs` bundle or a `.ts` source) and export name. */
export interface HandlerModule {
  readonly module: string;
  /** Defaults to `handler`. */
  readonly export?: string;
}

export interface LambdaRunnerOptions {
  readonly queueUrl: string;
  readonly sqs: SQSClient;
  readonly handler: SQSHandlerFn | HandlerModule;
  /** Records per invocation (Lambda: 1–10,000; above 10 needs a batching window). Default 10. */
  readonly batchSize?: number;
  /** Lambda's MaximumBatchingWindowInSeconds (0–300). Default 0. */
  readonly batchWindowSeconds?: number;
  /** Concurrent invocations at most (Lambda's ScalingConfig.MaximumConcurrency). Default 2. */
  readonly maxConcurrency?: number;
  /** The function timeout. Default 30 s. */
  readonly timeoutSeconds?: number;
  /** Whether the function reports partial batch failures (functionResponseType). Default true. */
  readonly reportBatchItemFailures?: boolean;
  readonly functionName?: string;
  readonly memoryLimitMB?: number;
  readonly logger?: Logger;
  /** Called after every invocation, once its records were deleted or left in the queue. */
  readonly onInvoke?: (report: InvocationReport) => void;
}

export type InvocationOutcome = 'success' | 'partial' | 'error' | 'timeout' | 'invalid-response';

export interface InvocationReport {
  readonly requestId: string;
  readonly outcome: InvocationOutcome;
  readonly records: number;
  /** Message ids deleted from the queue. */
  readonly deleted: readonly string[];
  /** Message ids left in the queue to be delivered again. */
  readonly retried: readonly string[];
  readonly durationMs: number;
  /** What went wrong, for `error`, `timeout` and `invalid-response`. */
  readonly error?: string;
  readonly stats: Readonly<RunnerStats>;
}

export interface RunnerStats {
  invocations: number;
  inFlight: number;
  recordsReceived: number;
  recordsDeleted: number;
  recordsRetried: number;
  failedInvocations: number;
  timedOutInvocations: number;
  receiveErrors: number;
  deleteErrors: number;
  /** ReceiveMessage requests sent and not yet answered (long polls waiting for messages). */
  receivesPending: number;
  /** ReceiveMessage requests answered (with messages or empty) or failed. */
  receivesAnswered: number;
}

export interface LambdaRunner {
  /** Stops polling, waits for in-flight invocations and their deletes, then resolves. */
  stop(): Promise<void>;
  readonly stats: Readonly<RunnerStats>;
  readonly eventSourceARN: string;
}

const LONG_POLL_SECONDS = 20;

/** Maps one received SQS message to a Lambda SQS record. */
export function toLambdaRecord(message: Message, source: { eventSourceARN: string; awsRegion: string }): SQSRecord {
  const system = message.Attributes ?? {};
  const attributes: Record<string, string> = {
    ApproximateReceiveCount: system.ApproximateReceiveCount ?? '1',
    SentTimestamp: system.SentTimestamp ?? '',
    SenderId: system.SenderId ?? '',
    ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp ?? '',
  };
  for (const [name, value] of Object.entries(system)) {
    if (!(name in attributes) && value !== undefined) attributes[name] = value;
  }
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { binaryValue: Buffer.from(value.BinaryValue).toString('base64') } : {}),
      stringListValues: [],
      binaryListValues: [],
      dataType: value.DataType as SQSMessageAttributes[string]['dataType'],
    };
  }
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: attributes as unknown as SQSRecord['attributes'],
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: source.eventSourceARN,
    awsRegion: source.awsRegion,
  };
}

export function buildSqsEvent(messages: readonly Message[], source: { eventSourceARN: string; awsRegion: string }): SQSEvent {
  return { Records: messages.map((message) => toLambdaRecord(message, source)) };
}

/** The queue ARN for a queue URL of the form `<endpoint>/<account>/<name>`. */
export function queueArnFromUrl(queueUrl: string, region: string): string {
  const [account = '000000000000', name = ''] = new URL(queueUrl).pathname.split('/').filter(Boolean).slice(-2);
  return `arn:aws:sqs:${region}:${account}:${name}`;
}

export interface Settlement {
  readonly outcome: 'success' | 'partial' | 'invalid-response';
  readonly deleteIds: string[];
  readonly retryIds: string[];
  readonly problem?: string;
}

/**
 * What happens to a batch after the handler returned `response` (Lambda's rules for partial
 * batch responses). Pure.
 */
export function settleBatch(recordIds: readonly string[], response: unknown, reportBatchItemFailures = true): Settlement {
  const all = { deleteIds: [...recordIds], retryIds: [] as string[] };
  const invalid = (problem: string): Settlement => ({ outcome: 'invalid-response', deleteIds: [], retryIds: [...recordIds], problem });
  if (!reportBatchItemFailures || response === undefined || response === null) return { outcome: 'success', ...all };
  if (typeof response !== 'object' || Array.isArray(response)) {
    return invalid(
      `the handler returned ${Array.isArray(response) ? 'an array' : typeof response}; return nothing or { batchItemFailures: [{ itemIdentifier: messageId }] }`,
    );
  }
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { outcome: 'success', ...all };
  if (!Array.isArray(failures)) return invalid('batchItemFailures is not an array');
  const known = new Set(recordIds);
  const failed = new Set<string>();
  for (const item of failures as unknown[]) {
    const id = item && typeof item === 'object' ? (item as { itemIdentifier?: unknown }).itemIdentifier : undefined;
    if (typeof id !== 'string' || id === '') {
      return invalid(`batchItemFailures has an entry without a non-empty itemIdentifier: ${JSON.stringify(item)}`);
    }
    if (!known.has(id)) return invalid(`batchItemFailures names ${JSON.stringify(id)}, which is not a messageId of this batch`);
    failed.add(id);
  }
  if (failed.size === 0) return { outcome: 'success', ...all };
  return {
    outcome: 'partial',
    deleteIds: recordIds.filter((id) => !failed.has(id)),
    retryIds: recordIds.filter((id) => failed.has(id)),
  };
}

/**
 * A settlement on a FIFO queue: after a group's first retried record, every later record of
 * that group is retried too (Lambda's rule for FIFO partial batch responses). `groups` gives
 * each record's `MessageGroupId`, in batch order. Pure.
 */
export function fifoSettlement(records: readonly { id: string; group: string | undefined }[], settlement: Settlement): Settlement & { stopped: string[] } {
  const retry = new Set(settlement.retryIds);
  const failedGroups = new Set<string>();
  const stopped: string[] = [];
  for (const { id, group } of records) {
    if (group === undefined) continue;
    if (retry.has(id)) failedGroups.add(group);
    else if (failedGroups.has(group)) {
      retry.add(id);
      stopped.push(id);
    }
  }
  if (stopped.length === 0) return { ...settlement, stopped };
  const order = records.map((r) => r.id);
  return { ...settlement, deleteIds: order.filter((id) => !retry.has(id)), retryIds: order.filter((id) => retry.has(id)), stopped };
}

export interface LambdaContextOptions {
  readonly functionName: string;
  readonly region: string;
  readonly requestId: string;
  /** When the invocation times out (ms since the epoch). */
  readonly deadline: number;
  readonly memoryLimitMB: number;
  readonly now?: () => number;
}

/** A Lambda `Context` as the nodejs runtime provides it (callback-style methods throw). */
export function createLambdaContext(options: LambdaContextOptions): Context {
  const now = options.now ?? Date.now;
  const callbackStyle = () => {
    throw new Error('context.done/succeed/fail are not supported on nodejs24.x: return a value or a Promise from the handler instead.');
  };
  const date = new Date(now()).toISOString().slice(0, 10).replaceAll('-', '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${options.region}:000000000000:function:${options.functionName}`,
    memoryLimitInMB: String(options.memoryLimitMB),
    awsRequestId: options.requestId,
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: `${date}/[$LATEST]${randomUUID().replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, options.deadline - now()),
    done: callbackStyle,
    fail: callbackStyle,
    succeed: callbackStyle,
  };
}

/** Imports a handler from a module file; errors say which file and export were expected. */
export async function loadHandler(spec: HandlerModule): Promise<SQSHandlerFn> {
  const exportName = spec.export ?? 'handler';
  const url = pathToFileURL(resolvePath(spec.module)).href;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    throw new Error(
      `Cannot load the function module ${spec.module}: ${errorMessage(err)}. Build the bundle first (npm run package) or point to the .ts source.`,
    );
  }
  const handler = mod[exportName] ?? (exportName === 'handler' ? (mod.default as Record<string, unknown> | undefined)?.handler : undefined);
  if (typeof handler !== 'function') {
    throw new Error(`The module ${spec.module} has no exported function "${exportName}" (exports: ${Object.keys(mod).join(', ') || 'none'}).`);
  }
  return handler as SQSHandlerFn;
}

class TimeoutError extends Error {}

/** Starts consuming `queueUrl`; resolves once the handler is loaded and the queue's ARN is known. */
export async function startLambdaRunner(options: LambdaRunnerOptions): Promise<LambdaRunner> {
  const settings = runnerSettings(options);
  const log = (options.logger ?? createLogger()).child({ component: 'lambda-runner', function: settings.functionName });
  const handler = typeof options.handler === 'function' ? options.handler : await loadHandler(options.handler);
  const sqs = pollingClient(options.sqs, settings.concurrency);
  const awsRegion = await sqs.config.region();
  const eventSourceARN = await eventSourceOf(sqs, options.queueUrl, awsRegion, settings, log);
  const run: RunContext = {
    options,
    settings,
    log,
    handler,
    sqs,
    source: { eventSourceARN, awsRegion },
    stopping: new AbortController(),
    stats: {
      invocations: 0,
      inFlight: 0,
      recordsReceived: 0,
      recordsDeleted: 0,
      recordsRetried: 0,
      failedInvocations: 0,
      timedOutInvocations: 0,
      receiveErrors: 0,
      deleteErrors: 0,
      receivesPending: 0,
      receivesAnswered: 0,
    },
  };
  log.info('consuming queue', {
    queueUrl: options.queueUrl,
    batchSize: settings.batchSize,
    batchWindowSeconds: settings.windowSeconds,
    maxConcurrency: settings.concurrency,
    timeoutSeconds: settings.timeoutSeconds,
  });
  const pollers = Array.from({ length: settings.concurrency }, (_, index) => poll(run, index));

  return {
    stats: run.stats,
    eventSourceARN,
    stop: async () => {
      run.stopping.abort();
      await Promise.all(pollers);
      sqs.destroy();
    },
  };
}

/** The event source mapping's settings, with defaults, checked against Lambda's bounds. */
interface RunnerSettings {
  readonly batchSize: number;
  readonly windowSeconds: number;
  readonly concurrency: number;
  readonly timeoutSeconds: number;
  readonly functionName: string;
}

/** What the pollers of one runner share. */
interface RunContext {
  readonly options: LambdaRunnerOptions;
  readonly settings: RunnerSettings;
  readonly log: Logger;
  readonly handler: SQSHandlerFn;
  readonly sqs: SQSClient;
  readonly source: { readonly eventSourceARN: string; readonly awsRegion: string };
  readonly stats: RunnerStats;
  readonly stopping: AbortController;
}

function runnerSettings(options: LambdaRunnerOptions): RunnerSettings {
  const settings: RunnerSettings = {
    batchSize: options.batchSize ?? 10,
    windowSeconds: options.batchWindowSeconds ?? 0,
    concurrency: options.maxConcurrency ?? 2,
    timeoutSeconds: options.timeoutSeconds ?? 30,
    functionName: options.functionName ?? 'local-function',
  };
  checkRange('batchSize', settings.batchSize, 1, 10_000);
  checkRange('batchWindowSeconds', settings.windowSeconds, 0, 300);
  checkRange('maxConcurrency', settings.concurrency, 1, 1000);
  checkRange('timeoutSeconds', settings.timeoutSeconds, 1, 900);
  if (options.queueUrl.endsWith('.fifo') && settings.batchSize > 10) {
    throw new Error(`batchSize ${settings.batchSize}: a FIFO queue's event source takes at most 10 records per batch.`);
  }
  if (settings.batchSize > 10 && settings.windowSeconds < 1) {
    throw new Error(`batchSize ${settings.batchSize} needs batchWindowSeconds of at least 1 (Lambda requires a batching window for batches above 10).`);
  }
  return settings;
}

/** The queue's ARN (the records' `eventSourceARN`); warns when its visibility timeout is too short. */
async function eventSourceOf(sqs: SQSClient, queueUrl: string, awsRegion: string, settings: RunnerSettings, log: Logger): Promise<string> {
  try {
    const queue = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn', 'VisibilityTimeout'] }));
    const visibility = Number(queue.Attributes?.VisibilityTimeout);
    if (visibility < settings.timeoutSeconds + settings.windowSeconds) {
      // Lambda rejects such a mapping; locally it runs, but records may be delivered twice.
      log.warn(
        'the queue visibility timeout is shorter than the function timeout plus the batching window: records can be delivered again while still being processed (AWS advises at least 6x the timeout plus the window)',
        { visibilityTimeoutSeconds: visibility, timeoutSeconds: settings.timeoutSeconds, batchWindowSeconds: settings.windowSeconds },
      );
    }
    return queue.Attributes?.QueueArn ?? queueArnFromUrl(queueUrl, awsRegion);
  } catch (err) {
    sqs.destroy();
    throw new Error(`The Lambda runner cannot reach the queue ${queueUrl}: ${errorMessage(err)}. Check that the broker is running and the queue exists.`);
  }
}

async function receive(run: RunContext, max: number, waitSeconds: number): Promise<Message[]> {
  run.stats.receivesPending++;
  try {
    const result = await run.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: run.options.queueUrl,
        MaxNumberOfMessages: Math.min(10, max),
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: run.stopping.signal },
    );
    return result.Messages ?? [];
  } finally {
    run.stats.receivesPending--;
    run.stats.receivesAnswered++;
  }
}

/** Fills `batch`: waits for a first message, then gathers for the batching window. */
async function collect(run: RunContext, batch: Message[]): Promise<void> {
  const { batchSize, windowSeconds } = run.settings;
  let windowEnd = 0;
  while (!run.stopping.signal.aborted) {
    if (batch.length > 0) {
      const remaining = windowEnd - Date.now();
      if (batch.length >= batchSize || remaining < 1000) break;
      addLatest(batch, await receive(run, batchSize - batch.length, Math.min(LONG_POLL_SECONDS, Math.floor(remaining / 1000))));
      continue;
    }
    batch.push(...(await receive(run, batchSize, LONG_POLL_SECONDS)));
    windowEnd = Date.now() + windowSeconds * 1000;
  }
}

async function deleteRecords(run: RunContext, records: readonly SQSRecord[]): Promise<void> {
  for (let i = 0; i < records.length; i += 10) {
    const chunk = records.slice(i, i + 10);
    try {
      const result = await run.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: run.options.queueUrl,
          Entries: chunk.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
        }),
      );
      for (const failed of result.Failed ?? []) {
        run.stats.deleteErrors++;
        run.log.warn('could not delete a processed record; it will be delivered again', { code: failed.Code, error: failed.Message });
      }
    } catch (err) {
      run.stats.deleteErrors += chunk.length;
      run.log.warn('could not delete processed records; they will be delivered again', { error: errorMessage(err) });
    }
  }
}

/** How one call of the handler ended. */
interface HandlerEnd {
  readonly settlement: Settlement;
  readonly outcome: InvocationOutcome;
  readonly error: string | undefined;
}

/** Calls the handler with the function timeout; a throw or a timeout settles nothing (every record is retried). */
async function callHandler(run: RunContext, event: SQSEvent, context: Context, ids: readonly string[]): Promise<HandlerEnd> {
  const { timeoutSeconds } = run.settings;
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError(`Task timed out after ${timeoutSeconds.toFixed(2)} seconds`)), timeoutSeconds * 1000);
    });
    const response = await Promise.race([Promise.resolve().then(() => run.handler(event, context)), timeout]);
    const settlement = settleBatch(ids, response, run.options.reportBatchItemFailures ?? true);
    return { settlement, outcome: settlement.outcome, error: settlement.problem };
  } catch (err) {
    return {
      settlement: { outcome: 'invalid-response', deleteIds: [], retryIds: [...ids] },
      outcome: err instanceof TimeoutError ? 'timeout' : 'error',
      error: errorMessage(err),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** One invocation: the event, the handler, the deletes its response allows, the stats and the report. */
async function invoke(run: RunContext, messages: Message[]): Promise<void> {
  const { stats, settings } = run;
  const event = buildSqsEvent(messages, run.source);
  const requestId = randomUUID();
  const started = Date.now();
  const deadline = started + settings.timeoutSeconds * 1000;
  const context = createLambdaContext({
    functionName: settings.functionName,
    region: run.source.awsRegion,
    requestId,
    deadline,
    memoryLimitMB: run.options.memoryLimitMB ?? 1024,
  });
  const ids = event.Records.map((record) => record.messageId);
  stats.invocations++;
  stats.inFlight++;
  stats.recordsReceived += ids.length;
  const handled = await callHandler(run, event, context, ids);
  const { outcome, error } = handled;
  const settlement = run.options.queueUrl.endsWith('.fifo') ? fifoStop(run, handled.settlement, event, requestId) : handled.settlement;
  if (outcome === 'timeout') stats.timedOutInvocations++;
  if (outcome === 'error' || outcome === 'invalid-response') stats.failedInvocations++;
  const toDelete = new Set(settlement.deleteIds);
  await deleteRecords(
    run,
    event.Records.filter((record) => toDelete.has(record.messageId)),
  );
  stats.recordsDeleted += settlement.deleteIds.length;
  stats.recordsRetried += settlement.retryIds.length;
  stats.inFlight--;
  const durationMs = Date.now() - started;
  const fields = { requestId, records: ids.length, deleted: settlement.deleteIds.length, retried: settlement.retryIds.length, durationMs, outcome };
  if (error) run.log.warn(`invocation ${outcome}: ${error}`, fields);
  else run.log.debug('invocation done', fields);
  run.options.onInvoke?.({
    requestId,
    outcome,
    records: ids.length,
    deleted: settlement.deleteIds,
    retried: settlement.retryIds,
    durationMs,
    ...(error ? { error } : {}),
    stats: { ...stats },
  });
}

/** FIFO: the records after a group's failed one stay in the queue; a handler that acknowledged them is named in a warning. */
function fifoStop(run: RunContext, settlement: Settlement, event: SQSEvent, requestId: string): Settlement {
  const records = event.Records.map((r) => ({ id: r.messageId, group: (r.attributes as { MessageGroupId?: string }).MessageGroupId }));
  const settled = fifoSettlement(records, settlement);
  if (settled.stopped.length > 0) {
    run.log.warn(
      "the handler acknowledged records that follow a failed record of their message group; keeping them in the queue (Lambda's FIFO rule: report every later record of a failed group as failed)",
      { requestId, kept: settled.stopped },
    );
  }
  return settled;
}

/** Gives back messages gathered for a batch that will not be invoked (on stop). */
async function release(run: RunContext, messages: Message[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const chunk = messages.slice(i, i + 10);
    await run.sqs
      .send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: run.options.queueUrl,
          Entries: chunk.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '', VisibilityTimeout: 0 })),
        }),
      )
      .catch(() => undefined);
  }
}

/** One poller: gathers a batch, invokes, again, until the runner stops; receive errors back off. */
async function poll(run: RunContext, index: number): Promise<void> {
  const signal = run.stopping.signal;
  let backoffMs = 250;
  while (!signal.aborted) {
    const batch: Message[] = [];
    try {
      await collect(run, batch);
      backoffMs = 250;
    } catch (err) {
      if (signal.aborted) {
        await release(run, batch);
        break;
      }
      run.stats.receiveErrors++;
      run.log.warn('cannot receive from the queue; retrying', { poller: index, error: errorMessage(err), retryInMs: backoffMs });
      // Stopping ends the wait early (the timer's AbortError is the expected end, not a failure).
      await delay(backoffMs, undefined, { signal }).catch(() => {});
      backoffMs = Math.min(backoffMs * 2, 10_000);
      continue;
    }
    if (batch.length === 0) continue;
    if (signal.aborted) {
      await release(run, batch);
      break;
    }
    await invoke(run, batch);
  }
}

/**
 * Adds received messages to a batch. A message received again while the batch is still being
 * gathered (its visibility timeout is shorter than the batching window) replaces its older copy:
 * only the newest receipt handle can delete it.
 */
export function addLatest(batch: Message[], received: readonly Message[]): void {
  for (const message of received) {
    const index = batch.findIndex((m) => m.MessageId === message.MessageId);
    if (index >= 0) batch[index] = message;
    else batch.push(message);
  }
}

/** The runner's SQS requests end within this: the longest long poll (20 s) and a margin. */
export const POLLING_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A client for the runner's own calls: `like`'s region, credentials, endpoint and retry
 * settings, with `pollers` sockets so that each poller (receive → invoke → delete, one call at
 * a time) has one, and nobody else waits for them.
 */
export function pollingClient(like: SQSClient, pollers: number): SQSClient {
  const config = like.config;
  const agent = { keepAlive: true, maxSockets: pollers };
  return new SQSClient({
    region: config.region,
    credentials: config.credentials,
    ...(config.isCustomEndpoint && config.endpoint ? { endpoint: config.endpoint } : {}),
    maxAttempts: config.maxAttempts,
    // Bounded requests (a blackholed broker must not hold a poller for the SDK's 15 minutes);
    // the request timeout leaves room for a 20 s long poll.
    requestHandler: { httpAgent: agent, httpsAgent: agent, ...sqsRequestHandler({ connectTimeoutMs: 5_000, requestTimeoutMs: POLLING_REQUEST_TIMEOUT_MS }) },
  });
}

function checkRange(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`Lambda runner option ${name} must be an integer from ${min} to ${max}, got ${value}.`);
  }
}
