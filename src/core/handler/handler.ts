/**
 * Stage src/core/handler/ — the SQS handler: a batch grouped by key, each key run through the
 * stages below (key.ts), one batch response. Guarantees: nothing lost on any path (below);
 * nothing else in src/core/ imports this folder.
 *
 * `toSqsHandler(controllers, options?)`: the Lambda handler for an SQS event source mapping
 * with `ReportBatchItemFailures`. From a batch of "reconcile this object" messages to
 * reconciled objects, with nothing lost on any path:
 *
 * - Poison records (not a valid message) go to the DLQ with reason `InvalidMessage` and are
 *   acknowledged; a message for a kind no controller serves goes there as `UnknownKind`, and
 *   one for a cluster this function has no access to as `UnknownCluster`, one for an object
 *   outside the namespaces it runs for (`OPERLESS_NAMESPACES`) as `UnknownNamespace`.
 * - Records are grouped by object key; each key is reconciled once (reconcile/batch.ts), keys run
 *   concurrently up to `concurrency`.
 * - A key's records are acknowledged only after its follow-up (requeue, retry, re-delay,
 *   hand-back or dead letter) was accepted by the queue; if that send fails, the records are
 *   returned in `batchItemFailures` and SQS delivers them again.
 * - An unexpected exception while handling one key fails only that key's records.
 * - Keys not started before the time budget ran low are handed back to the queue unchanged
 *   (invocation/budget.ts), not failed.
 * - The handler always answers before the function timeout (invocation/budget.ts): a reconcile that
 *   ignores its aborted `ctx.signal` is abandoned (logged as such, with its key) and treated
 *   as a failed reconcile — retried with backoff, dead-lettered after `maxAttempts` — and
 *   when the last tenth of the reserve is reached every record whose key has not finished is
 *   returned in `batchItemFailures`, so its batch-mates are acknowledged and nothing is lost.
 * - Exhausted retries and `TerminalError` record a `Warning` Event on the object, move the
 *   message to the DLQ (with `operless.reason`/`operless.error`/`operless.failedAt`
 *   attributes) and log the error.
 *
 * Structure: every key (key.ts) and every poison record ends in one typed outcome
 * (reconcile/outcome.ts: acknowledged, sent, dead-lettered, send failed, crashed, unfinished); the
 * answer deadline gives the work still running `unfinished`, and `batchResponse` folds the
 * outcomes into `batchItemFailures` in one place.
 *
 * Per-key mode (the ordering, resolved once at cold start by ordering.ts from `OPERLESS_ORDERING`
 * or the work queue's kind and passed down; a mismatch with the queues refuses the cold start,
 * naming the field): delayed follow-ups go through the delay queue
 * (reconcile/delivery.ts), and `batchResponse` applies Lambda's FIFO rule (a failed record fails the
 * rest of its group in the batch). A batch from the delay queue itself (its event source
 * mapping invokes the same function) is handed to the mover (per-key/mover.ts), which moves due
 * follow-ups into the work queue.
 *
 * Configuration: explicit options override the environment — `OPERLESS_QUEUE_URL`
 * (follow-ups), `OPERLESS_DLQ_URL`, `OPERLESS_DELAY_QUEUE_URL` (per-key mode), `OPERLESS_CLUSTER` (the cluster id served),
 * `OPERLESS_NAMESPACES` (the namespaces served, comma-separated; empty = all; an invalid name
 * fails the function's init, naming the variable),
 * `OPERLESS_CONCURRENCY` (default 8), `OPERLESS_BUDGET_RESERVE_MS`, `OPERLESS_MAX_DELAY_SECONDS`
 * (tests only: a lower longest delay, refused at start unless 1–900); the SQS endpoint through
 * the SDK's `AWS_ENDPOINT_URL_SQS`. A reserve at or above the time an invocation starts with
 * (the function's timeout) is refused: the invocation throws, naming the setting and the
 * timeout (invocation/budget.ts `reserveProblem`), so the batch ends in the DLQ after maxReceiveCount
 * instead of being handed back forever.
 *
 * Tracing: the standard `OTEL_*` variables (observability/otel-config.ts) are read at the first
 * invocation; when they ask for an exporter the SDK is loaded and registered then, and every
 * invocation flushes its spans before it answers (bounded: `FLUSH_MAX_MS`, and never past the
 * time left), so nothing waits in a frozen process. A variable that cannot be used fails the
 * invocation with a message naming it. Unset: the SDK is never loaded.
 */
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { displayKey } from '../../contract/message.ts';
import type { Ordering } from '../../contract/ordering.ts';
import { createLogger, errorMessage, type Logger } from '../../observability/log.ts';
import { startTracingFromEnv, type Tracing } from '../../observability/otel-start.ts';
import { createEmfMetrics, type Metrics } from '../reconcile/metrics.ts';
import { createClientFactory, type ClientFactory } from '../../kube/factory.ts';
import { NAMESPACES_ENV, parseNamespaceScope } from '../../kube/scope.ts';
import { lazySqsSender, type MessageSender } from '../../queue/sender.ts';
import { groupBatch, type KeyGroup, type PoisonRecord } from '../reconcile/batch.ts';
import { answerAfterMs, reserveProblem, resolveReserveMs } from '../invocation/budget.ts';
import { answerDeadline, type AnswerDeadline } from '../invocation/deadline.ts';
import { mapBounded } from '../invocation/concurrency.ts';
import { MAX_DELAY_VARIABLE, resolveMaxDelaySeconds } from '../invocation/schedule.ts';
import type { Controller } from '../controller/controller.ts';
import { sendDeadLetter, shortenRetryWait, type DeliveryTarget } from '../reconcile/delivery.ts';
import { handleKey, type KeyRun } from './key.ts';
import { toDelayMoverHandler } from '../per-key/mover.ts';
import { isFromQueueNamed, ORDERING_VARIABLE, resolveOrdering } from './ordering.ts';
import { batchResponse, UNFINISHED, type KeyOutcome, type SettledWork } from '../reconcile/outcome.ts';
import type { KubeObject } from '../../kube/types.ts';

export interface HandlerOptions {
  /** Work queue for follow-ups (default `OPERLESS_QUEUE_URL`). */
  readonly queueUrl?: string;
  /** Dead-letter queue (default `OPERLESS_DLQ_URL`). */
  readonly deadLetterQueueUrl?: string;
  /** Per-key mode: the delay queue for delayed follow-ups (default `OPERLESS_DELAY_QUEUE_URL`). */
  readonly delayQueueUrl?: string;
  /**
   * The ordering (default `OPERLESS_ORDERING`, else the work queue's kind: `.fifo` is per-key).
   * Resolved once here and checked against the queues (ordering.ts), a mismatch refused naming the field.
   */
  readonly ordering?: Ordering;
  /** Cluster id this function serves (default `OPERLESS_CLUSTER`); used by the default client factory. */
  readonly cluster?: string;
  /** The namespaces this function serves (default `OPERLESS_NAMESPACES`); empty = all. */
  readonly namespaces?: readonly string[];
  /** Keys reconciled at once (default `OPERLESS_CONCURRENCY` or 8). */
  readonly concurrency?: number;
  /** Time kept back for follow-ups, ms (default `OPERLESS_BUDGET_RESERVE_MS` or see invocation/budget.ts). */
  readonly budgetReserveMs?: number;
  /** Kubernetes client per cluster id (default: from the environment, see kube/factory.ts). */
  readonly clients?: ClientFactory;
  /** Queue sender (default: SQS via the AWS SDK). */
  readonly sender?: MessageSender;
  readonly log?: Logger;
  readonly metrics?: Metrics;
  /** The process's tracing (default: from the `OTEL_*` variables, observability/otel-start.ts). */
  readonly tracing?: () => Promise<Tracing>;
  /** Clock (ms) and randomness, for tests. */
  readonly now?: () => number;
  readonly random?: () => number;
  /**
   * The longest single delay of a follow-up, whole seconds in [1, 900] (default
   * `OPERLESS_MAX_DELAY_SECONDS` or SQS's 900): longer waits hop through `notBefore`
   * re-delays. Lower only to test the long-wait path in seconds.
   */
  readonly maxDelaySeconds?: number;
}

/** The handler Lambda calls: `(event, context) => Promise<SQSBatchResponse>`. */
export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

interface Resolved {
  queueUrl: string | undefined;
  deadLetterQueueUrl: string | undefined;
  delayQueueUrl: string | undefined;
  ordering: Ordering;
  /** Per-key with a delay queue: its name, which the delay queue's batches' ARN ends in. */
  delayQueueName: string | undefined;
  concurrency: number;
  reserveMs: number | undefined;
  /** Where `reserveMs` came from, for error messages. */
  reserveSource: string;
  maxDelaySeconds: number;
  clients: ClientFactory;
  namespaces: readonly string[];
  sender: () => Promise<MessageSender>;
  log: Logger;
  metrics: Metrics;
  tracing: () => Promise<Tracing>;
  now: () => number;
  random: () => number;
}

/** Controllers of any object type, as `toSqsHandler` accepts them. */
// The type parameter is only used in method positions, so any Controller<T> fits.
export type AnyController = Controller<KubeObject>;

export function toSqsHandler(controllers: AnyController | readonly AnyController[], options: HandlerOptions = {}): SqsBatchHandler {
  const list = (Array.isArray(controllers) ? controllers : [controllers]) as Controller<KubeObject>[];
  if (list.length === 0) throw new TypeError('toSqsHandler needs at least one controller from defineController()');
  for (const c of list) {
    if (!c || typeof c.handles !== 'function') throw new TypeError('toSqsHandler takes controllers made by defineController(spec), not raw specs');
  }
  const config = resolveOptions(options);
  const mover =
    config.ordering === 'per-key' && config.delayQueueUrl
      ? toDelayMoverHandler({
          queueUrl: config.queueUrl ?? '',
          delayQueueUrl: config.delayQueueUrl,
          concurrency: config.concurrency,
          sender: lazyMessageSender(config.sender),
          log: config.log,
          now: config.now,
          maxDelaySeconds: config.maxDelaySeconds,
        })
      : undefined;
  return async (event, context) => {
    const tracing = await config.tracing();
    try {
      return await (mover && isFromQueueNamed(event.Records?.[0]?.eventSourceARN, config.delayQueueName)
        ? mover(event, context)
        : handleBatch(list, config, event, context));
    } finally {
      await tracing.flush(flushBudgetMs(context));
    }
  };
}

/** The longest an invocation waits for its spans to be exported before it answers. */
export const FLUSH_MAX_MS = 2000;

/** Time for the flush: `FLUSH_MAX_MS`, less when the invocation has less left (keeping a margin). Pure. */
export function flushBudgetMs(context: Pick<Context, 'getRemainingTimeInMillis'> | undefined): number {
  const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : Number.POSITIVE_INFINITY;
  return Math.max(0, Math.min(FLUSH_MAX_MS, remaining - 100));
}

/** A sender that resolves `load` on its first send. */
function lazyMessageSender(load: () => Promise<MessageSender>): MessageSender {
  return { send: async (queueUrl, message) => (await load()).send(queueUrl, message) };
}

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`);
  return value;
}

function resolveOptions(options: HandlerOptions): Resolved {
  let sender: Promise<MessageSender> | undefined;
  const cluster = options.cluster ?? process.env.OPERLESS_CLUSTER;
  const queueUrl = options.queueUrl ?? (process.env.OPERLESS_QUEUE_URL || undefined);
  const delayQueueUrl = options.delayQueueUrl ?? (process.env.OPERLESS_DELAY_QUEUE_URL || undefined);
  const { ordering, delayQueueName } = resolveOrdering({
    ordering:
      options.ordering !== undefined
        ? { value: options.ordering, field: 'the ordering option of toSqsHandler' }
        : { value: process.env[ORDERING_VARIABLE], field: ORDERING_VARIABLE },
    queueUrl: { value: queueUrl, field: options.queueUrl !== undefined ? 'the queueUrl option of toSqsHandler' : 'OPERLESS_QUEUE_URL' },
    delayQueueUrl: {
      value: delayQueueUrl,
      field: options.delayQueueUrl !== undefined ? 'the delayQueueUrl option of toSqsHandler' : 'OPERLESS_DELAY_QUEUE_URL',
    },
  });
  return {
    queueUrl,
    deadLetterQueueUrl: options.deadLetterQueueUrl ?? (process.env.OPERLESS_DLQ_URL || undefined),
    delayQueueUrl,
    ordering,
    delayQueueName,
    concurrency: Math.max(1, Math.floor(options.concurrency ?? envNumber('OPERLESS_CONCURRENCY') ?? 8)),
    reserveMs: options.budgetReserveMs ?? envNumber('OPERLESS_BUDGET_RESERVE_MS'),
    reserveSource: options.budgetReserveMs !== undefined ? 'the budgetReserveMs option of toSqsHandler' : 'OPERLESS_BUDGET_RESERVE_MS',
    namespaces: options.namespaces ?? parseNamespaceScope(process.env[NAMESPACES_ENV], NAMESPACES_ENV),
    maxDelaySeconds:
      options.maxDelaySeconds !== undefined
        ? resolveMaxDelaySeconds(options.maxDelaySeconds, 'the maxDelaySeconds option of toSqsHandler')
        : resolveMaxDelaySeconds(process.env[MAX_DELAY_VARIABLE]),
    clients: options.clients ?? createClientFactory({ env: { ...process.env, ...(cluster ? { OPERLESS_CLUSTER: cluster } : {}) } }),
    sender: () => {
      if (options.sender) return Promise.resolve(options.sender);
      // The SDK is imported on the first send: a cold start that sends nothing never loads it.
      sender ??= Promise.resolve(lazySqsSender());
      return sender;
    },
    log: options.log ?? createLogger(),
    metrics: options.metrics ?? createEmfMetrics(),
    tracing: options.tracing ?? (() => startTracingFromEnv(process.env, process.env.AWS_LAMBDA_FUNCTION_NAME || 'operless-function')),
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
  };
}

/** A unit of work of a batch (a key's group, or one poison record) and how it will end. */
interface Work {
  /** The object key, for logs (poison records have none). */
  readonly key?: string;
  readonly records: readonly SQSRecord[];
  readonly outcome: Promise<KeyOutcome>;
}

async function handleBatch(controllers: Controller<KubeObject>[], config: Resolved, event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  const log = config.log.child({ requestId: context.awsRequestId });
  const remaining = () => (typeof context.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : Number.POSITIVE_INFINITY);
  const startedWith = remaining();
  refuseUnworkableReserve(config, startedWith, log, event);
  const reserveMs = resolveReserveMs(Number.isFinite(startedWith) ? startedWith : 60_000, config.reserveMs);
  const records = event.Records ?? [];
  const { groups, poison } = groupBatch(records, config.now());
  const deadline = answerDeadline(answerAfterMs(remaining(), reserveMs), UNFINISHED);
  const run: KeyRun = { ...config, controllers, log, remaining, reserveMs };
  const work: Work[] = [
    ...poison.map((p) => ({ records: [p.record], outcome: handlePoison(config, log, p) })),
    ...startKeys(groups, config.concurrency, deadline, (group) => guardedKey(run, group)),
  ];
  const settled = await Promise.all(work.map(async (w) => ({ ...w, outcome: await Promise.race([w.outcome, deadline.reached]) })));
  logUnfinished(log, settled, { remainingMs: remaining(), reserveMs });
  const response = batchResponse(records, settled);
  const handedBack = settled.filter((w) => w.outcome.type === 'sendFailed').flatMap((w) => w.records);
  await withinAnswerDeadline(deadline, log, handedBack.length, shortenRetryWait(config, log, handedBack));
  deadline.clear();
  return response;
}

/**
 * Waits for `shortening` (best effort, never rejects) only until the answer deadline: on a
 * queue that accepts and never answers, its calls and their retries (3 attempts, each up to
 * the request timeout) would otherwise run past the function timeout after a follow-up send
 * that failed the same way — and a timed-out invocation acknowledges nothing. Cut off, the
 * records keep the queue's visibility timeout (logged).
 */
async function withinAnswerDeadline(deadline: AnswerDeadline<KeyOutcome>, log: Logger, records: number, shortening: Promise<void>): Promise<void> {
  if (records === 0) return;
  const finished = await Promise.race([shortening.then(() => true), deadline.reached.then(() => false)]);
  if (!finished)
    log.warn(
      "no time left to shorten the wait of records handed back after a failed send; answering now, they come back after the queue's visibility timeout",
      { records },
    );
}

/**
 * Refuses a reserve that cannot work (invocation/budget.ts `reserveProblem`): the invocation fails as a
 * whole, so SQS delivers the batch again and, after maxReceiveCount, moves it to the DLQ —
 * instead of handing it back forever.
 */
function refuseUnworkableReserve(config: Resolved, startedWith: number, log: Logger, event: SQSEvent): void {
  const unworkable = reserveProblem(startedWith, config.reserveMs, config.reserveSource);
  if (!unworkable) return;
  log.error(`configuration that cannot work: ${unworkable}`, { records: event.Records?.length ?? 0 });
  throw new Error(unworkable);
}

/** Starts the keys, at most `limit` at once, in order; a key not started by the deadline never is. */
function startKeys(groups: readonly KeyGroup[], limit: number, deadline: AnswerDeadline<KeyOutcome>, handle: (group: KeyGroup) => Promise<KeyOutcome>): Work[] {
  const outcomes = groups.map(() => Promise.withResolvers<KeyOutcome>());
  void mapBounded(groups, limit, async (group, index) => {
    if (deadline.passed()) return;
    outcomes[index]?.resolve(await handle(group));
  });
  return groups.map((group, index) => ({ key: displayKey(group.message), records: group.records, outcome: outcomes[index]!.promise }));
}

/** One key behind an error boundary: a bug fails only that key's records. */
async function guardedKey(run: KeyRun, group: KeyGroup): Promise<KeyOutcome> {
  try {
    return await handleKey(run, group);
  } catch (err) {
    run.log.error('unexpected error while handling a key; its records will be delivered again', {
      key: displayKey(group.message),
      error: errorMessage(err),
    });
    return { type: 'crashed', error: errorMessage(err) };
  }
}

/** A record that is not a valid message goes to the DLQ as `InvalidMessage`. */
async function handlePoison(target: DeliveryTarget, log: Logger, { record, error }: PoisonRecord): Promise<KeyOutcome> {
  log.error('poison message: not a valid reconcile message; moving it to the DLQ', { messageId: record.messageId, error });
  try {
    await sendDeadLetter(target, record.body, 'InvalidMessage', error);
    target.metrics.deadLetter('unknown', 'InvalidMessage');
    return { type: 'deadLettered', reason: 'InvalidMessage' };
  } catch (err) {
    log.error("could not move the poison message to the DLQ; leaving it to the queue's redrive policy", {
      messageId: record.messageId,
      error: errorMessage(err),
    });
    return { type: 'sendFailed', followUp: 'deadLetter', error: errorMessage(err) };
  }
}

/** One line when the answer deadline left work unfinished, naming its keys. */
function logUnfinished(log: Logger, settled: readonly (SettledWork & Pick<Work, 'key'>)[], budget: { remainingMs: number; reserveMs: number }): void {
  const unfinished = settled.filter((s) => s.outcome.type === 'unfinished');
  if (unfinished.length === 0) return;
  log.error('the time budget is spent: answering now; the records of unfinished keys are reported as failures and will be delivered again', {
    ...budget,
    unfinishedKeys: unfinished.flatMap((s) => (s.key === undefined ? [] : [s.key])),
    unfinishedRecords: unfinished.reduce((n, s) => n + s.records.length, 0),
  });
}
