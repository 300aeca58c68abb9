/**
 * `toSqsHandler(controllers, options?)`: the Lambda handler for an SQS event source mapping
 * with `ReportBatchItemFailures`. From a batch of "reconcile this object" messages to
 * reconciled objects, with nothing lost on any path:
 *
 * - Poison records (not a valid message) go to the DLQ with reason `InvalidMessage` and are
 *   acknowledged; a message for a kind no controller serves goes there as `UnknownKind`, and
 *   one for a cluster this function has no access to as `UnknownCluster`.
 * - Records are grouped by object key; each key is reconciled once (batch.ts), keys run
 *   concurrently up to `concurrency`.
 * - A key's records are acknowledged only after its follow-up (requeue, retry, re-delay,
 *   hand-back or dead letter) was accepted by the queue; if that send fails, the records are
 *   returned in `batchItemFailures` and SQS delivers them again.
 * - An unexpected exception while handling one key fails only that key's records.
 * - Keys not started before the time budget ran low are handed back to the queue unchanged
 *   (budget.ts), not failed.
 * - The handler always answers before the function timeout (budget.ts): a reconcile that
 *   ignores its aborted `ctx.signal` is abandoned (logged as such, with its key) and treated
 *   as a failed reconcile — retried with backoff, dead-lettered after `maxAttempts` — and
 *   when the last tenth of the reserve is reached every record whose key has not finished is
 *   returned in `batchItemFailures`, so its batch-mates are acknowledged and nothing is lost.
 * - Exhausted retries and `TerminalError` record a `Warning` Event on the object, move the
 *   message to the DLQ (with `operless.reason`/`operless.error`/`operless.failedAt`
 *   attributes) and log the error.
 *
 * Configuration: explicit options override the environment — `OPERLESS_QUEUE_URL`
 * (follow-ups), `OPERLESS_DLQ_URL`, `OPERLESS_CLUSTER` (the cluster id served),
 * `OPERLESS_CONCURRENCY` (default 8), `OPERLESS_BUDGET_RESERVE_MS`; the SQS endpoint through
 * the SDK's `AWS_ENDPOINT_URL_SQS`. A reserve at or above the time an invocation starts with
 * (the function's timeout) is refused: the invocation throws, naming the setting and the
 * timeout (budget.ts `reserveProblem`), so the batch ends in the DLQ after maxReceiveCount
 * instead of being handed back forever.
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { displayKey, encodeMessage, type ReconcileMessage } from '../contract/message.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_FAILED_AT, DLQ_ATTRIBUTE_REASON, truncateError, type DlqReason } from '../contract/dlq.ts';
import { createLogger, errorMessage, type Logger } from '../observability/log.ts';
import { createEmfMetrics, type Metrics } from './metrics.ts';
import type { BoundKubeClient } from '../kube/client.ts';
import { createEventRecorder } from '../kube/events.ts';
import { createClientFactory, UnknownClusterError, type ClientFactory } from '../kube/factory.ts';
import { lazySqsSender, type MessageSender } from '../queue/sender.ts';
import { forLiveObject, groupBatch, type KeyGroup } from './batch.ts';
import { abandonAfterMs, answerAfterMs, canStart, reconcileAllowanceMs, reserveProblem, resolveReserveMs } from './budget.ts';
import { mapBounded } from './concurrency.ts';
import type { Controller } from './controller.ts';
import { decideFollowUp, deferred, redelay, type FollowUp } from './followup.ts';
import { reconcileKey, type KeyResult } from './reconciler.ts';
import type { KubeObject } from '../kube/types.ts';

export interface HandlerOptions {
  /** Work queue for follow-ups (default `OPERLESS_QUEUE_URL`). */
  readonly queueUrl?: string;
  /** Dead-letter queue (default `OPERLESS_DLQ_URL`). */
  readonly deadLetterQueueUrl?: string;
  /** Cluster id this function serves (default `OPERLESS_CLUSTER`); used by the default client factory. */
  readonly cluster?: string;
  /** Keys reconciled at once (default `OPERLESS_CONCURRENCY` or 8). */
  readonly concurrency?: number;
  /** Time kept back for follow-ups, ms (default `OPERLESS_BUDGET_RESERVE_MS` or see budget.ts). */
  readonly budgetReserveMs?: number;
  /** Kubernetes client per cluster id (default: from the environment, see kube/factory.ts). */
  readonly clients?: ClientFactory;
  /** Queue sender (default: SQS via the AWS SDK). */
  readonly sender?: MessageSender;
  readonly log?: Logger;
  readonly metrics?: Metrics;
  /** Clock (ms) and randomness, for tests. */
  readonly now?: () => number;
  readonly random?: () => number;
}

/** The handler Lambda calls: `(event, context) => Promise<SQSBatchResponse>`. */
export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

interface Resolved {
  queueUrl: string | undefined;
  deadLetterQueueUrl: string | undefined;
  concurrency: number;
  reserveMs: number | undefined;
  /** Where `reserveMs` came from, for error messages. */
  reserveSource: string;
  clients: ClientFactory;
  sender: () => Promise<MessageSender>;
  log: Logger;
  metrics: Metrics;
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
  return (event, context) => handleBatch(list, config, event, context);
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
  return {
    queueUrl: options.queueUrl ?? (process.env.OPERLESS_QUEUE_URL || undefined),
    deadLetterQueueUrl: options.deadLetterQueueUrl ?? (process.env.OPERLESS_DLQ_URL || undefined),
    concurrency: Math.max(1, Math.floor(options.concurrency ?? envNumber('OPERLESS_CONCURRENCY') ?? 8)),
    reserveMs: options.budgetReserveMs ?? envNumber('OPERLESS_BUDGET_RESERVE_MS'),
    reserveSource: options.budgetReserveMs !== undefined ? 'the budgetReserveMs option of toSqsHandler' : 'OPERLESS_BUDGET_RESERVE_MS',
    clients: options.clients ?? createClientFactory({ env: { ...process.env, ...(cluster ? { OPERLESS_CLUSTER: cluster } : {}) } }),
    sender: () => {
      if (options.sender) return Promise.resolve(options.sender);
      // The SDK is imported on the first send: a cold start that sends nothing never loads it.
      sender ??= Promise.resolve(lazySqsSender());
      return sender;
    },
    log: options.log ?? createLogger(),
    metrics: options.metrics ?? createEmfMetrics(),
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
  };
}

async function handleBatch(controllers: Controller<KubeObject>[], config: Resolved, event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  const log = config.log.child({ requestId: context.awsRequestId });
  const remaining = () => (typeof context.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : Number.POSITIVE_INFINITY);
  const startedWith = remaining();
  const unworkable = reserveProblem(startedWith, config.reserveMs, config.reserveSource);
  if (unworkable) {
    // Refused: the invocation fails as a whole, so SQS delivers the batch again and, after
    // maxReceiveCount, moves it to the DLQ — instead of handing it back forever.
    log.error(`configuration that cannot work: ${unworkable}`, { records: event.Records?.length ?? 0 });
    throw new Error(unworkable);
  }
  const reserveMs = resolveReserveMs(Number.isFinite(startedWith) ? startedWith : 60_000, config.reserveMs);
  const records = event.Records ?? [];
  const { groups, poison } = groupBatch(records, config.now());
  const failed = new Set<string>();
  const fail = (rs: readonly SQSRecord[]) => {
    for (const r of rs) failed.add(r.messageId);
  };
  // Records whose fate is decided (acknowledged or failed). At the answer deadline every
  // other record is failed, and nothing more is started.
  const settled = new Set<string>();
  const settle = (rs: readonly SQSRecord[]) => {
    for (const r of rs) settled.add(r.messageId);
  };
  let answered = false;

  const poisonWork = Promise.all(poison.map(async ({ record, error }) => {
    log.error('poison message: not a valid reconcile message; moving it to the DLQ', { messageId: record.messageId, error });
    try {
      await sendDeadLetter(config, record.body, 'InvalidMessage', error);
      config.metrics.deadLetter('unknown', 'InvalidMessage');
    } catch (err) {
      log.error('could not move the poison message to the DLQ; leaving it to the queue\'s redrive policy', { messageId: record.messageId, error: errorMessage(err) });
      fail([record]);
    }
    settle([record]);
  }));

  const groupWork = mapBounded(groups, config.concurrency, async (group) => {
    if (answered) return;
    try {
      const ok = await handleGroup(controllers, config, group, log, remaining, reserveMs);
      if (!ok) fail(group.records);
    } catch (err) {
      log.error('unexpected error while handling a key; its records will be delivered again', {
        key: displayKey(group.message), error: errorMessage(err),
      });
      fail(group.records);
    }
    settle(group.records);
  });

  const answerIn = answerAfterMs(remaining(), reserveMs);
  let answerTimer: ReturnType<typeof setTimeout> | undefined;
  const deadline = Number.isFinite(answerIn)
    ? new Promise<'deadline'>((resolve) => { answerTimer = setTimeout(() => resolve('deadline'), answerIn); })
    : undefined;
  const all = Promise.all([poisonWork, groupWork]).then(() => 'finished' as const);
  const how = await (deadline ? Promise.race([all, deadline]) : all);
  if (answerTimer) clearTimeout(answerTimer);
  answered = true;
  if (how === 'deadline') {
    const unfinished = groups.filter((g) => g.records.some((r) => !settled.has(r.messageId)));
    log.error('the time budget is spent: answering now; the records of unfinished keys are reported as failures and will be delivered again', {
      remainingMs: remaining(), reserveMs,
      unfinishedKeys: unfinished.map((g) => displayKey(g.message)),
      unfinishedRecords: records.filter((r) => !settled.has(r.messageId)).length,
    });
    fail(records.filter((r) => !settled.has(r.messageId)));
  }

  return { batchItemFailures: records.filter((r) => failed.has(r.messageId)).map((r) => ({ itemIdentifier: r.messageId })) };
}

/** Handles one key; true when its records may be acknowledged. */
async function handleGroup(
  controllers: Controller<KubeObject>[],
  config: Resolved,
  group: KeyGroup,
  parent: Logger,
  remaining: () => number,
  reserveMs: number,
): Promise<boolean> {
  const message = group.message;
  const reconcileId = randomUUID();
  const log = parent.child({
    key: displayKey(message), cluster: message.cluster, reconcileId, attempt: message.attempt, reason: message.reason,
    ...(group.records.length > 1 ? { coalesced: group.records.length } : {}),
  });
  const controller = controllers.find((c) => c.handles(message));
  if (!controller) {
    const error = `no controller in this function serves ${message.apiVersion} ${message.kind} (served: ${controllers.map((c) => `${c.kind.apiVersion} ${c.kind.kind}`).join(', ')})`;
    log.error('message for an unknown kind; moving it to the DLQ', { error });
    return deliver(config, log, controller, group, { type: 'deadLetter', label: 'terminal_error', reason: 'UnknownKind', error });
  }
  const now = config.now();
  if (group.notDue && message.notBefore !== undefined) {
    log.debug('not due yet; re-delaying', { notBefore: message.notBefore });
    config.metrics.deferred(controller.name, 'not_due');
    return deliver(config, log, controller, group, redelay({ ...message, notBefore: message.notBefore }, now));
  }
  if (!canStart(remaining(), reserveMs)) {
    log.info('no time left in this invocation to start; handing the key back to the queue', { remainingMs: remaining(), reserveMs });
    config.metrics.deferred(controller.name, 'deferred');
    return deliver(config, log, controller, group, deferred(message));
  }

  let client: BoundKubeClient;
  try {
    client = await config.clients(message.cluster);
  } catch (err) {
    if (err instanceof UnknownClusterError) {
      log.error('message for a cluster this function has no access to; moving it to the DLQ', { error: err.message });
      return deliver(config, log, controller, group, { type: 'deadLetter', label: 'terminal_error', reason: 'UnknownCluster', error: err.message });
    }
    log.error('could not create the Kubernetes client', { error: errorMessage(err) });
    const followUp = decideFollowUp({ message, outcome: { type: 'error', error: err }, policy: controller.retry, now, random: config.random });
    return deliver(config, log, controller, group, followUp);
  }

  const abort = new AbortController();
  const allowance = reconcileAllowanceMs(remaining(), reserveMs);
  const timer = Number.isFinite(allowance)
    ? setTimeout(() => abort.abort(new Error(`reconcile stopped: the function's time budget ran out after ${Math.round(allowance)} ms`)), allowance)
    : undefined;
  const started = config.now();
  const lagMs = Math.max(0, started - message.observedAt);
  let result: KeyResult;
  // The message the reconcile ran for, once it read the live object (batch.ts, forLiveObject).
  let forLive: ReconcileMessage | undefined;
  let abandonTimer: ReturnType<typeof setTimeout> | undefined;
  try {
    const reconciling = reconcileKey(controller, message, {
      client,
      events: createEventRecorder({ client: client.with({ fieldManager: controller.fieldManager }), controller: `operless/${controller.name}`, log }),
      log,
      signal: abort.signal,
      reconcileId,
    }, (liveUid) => (forLive = forLiveObject(group, liveUid)));
    // A reconcile that ignores its aborted signal is not waited for past a quarter of the
    // reserve: it counts as failed, so its follow-up (retry or dead letter) still goes out and
    // the invocation answers in time. It may still run on in the background (the runtime
    // cannot stop it); at-least-once delivery already allows two runs of one key.
    const abandonIn = abandonAfterMs(remaining(), reserveMs);
    const abandoned = Number.isFinite(abandonIn)
      ? new Promise<KeyResult>((resolve) => {
        abandonTimer = setTimeout(() => {
          const graceMs = Math.round(abandonIn - allowance);
          log.error('reconcile ignored ctx.signal and is still running after the time budget ran out; abandoning it and counting it as failed', {
            graceMs, remainingMs: remaining(),
          });
          resolve({
            outcome: { type: 'error', error: new Error(`reconcile did not stop within ${graceMs} ms after its signal was aborted (the function's time budget ran out); pass ctx.signal to every long wait`) },
            object: { apiVersion: message.apiVersion, kind: message.kind, metadata: { name: message.name, ...(message.namespace ? { namespace: message.namespace } : {}), ...(message.uid ? { uid: message.uid } : {}) } },
            step: 'reconcile',
          });
        }, abandonIn);
      })
      : undefined;
    result = await (abandoned ? Promise.race([reconciling, abandoned]) : reconciling);
  } finally {
    if (timer) clearTimeout(timer);
    if (abandonTimer) clearTimeout(abandonTimer);
  }
  const durationMs = config.now() - started;
  // In a group of several uids, the follow-up continues from the live object's own messages.
  const followUp = decideFollowUp({ message: forLive ?? message, outcome: result.outcome, policy: controller.retry, now: config.now(), random: config.random });
  config.metrics.reconcile({ controller: controller.name, label: followUp.label, durationSeconds: durationMs / 1000, lagSeconds: lagMs / 1000 });

  const fields = {
    result: followUp.label, durationMs, lagMs, step: result.step,
    ...(result.outcome.type === 'gone' ? { gone: result.outcome.why } : {}),
    ...(followUp.type === 'send' ? { requeueSeconds: followUp.delaySeconds, nextAttempt: followUp.message.attempt } : {}),
    ...(result.outcome.type === 'error' ? { error: errorMessage(result.outcome.error) } : {}),
  };
  if (followUp.type === 'deadLetter') {
    log.error(followUp.reason === 'TerminalError' ? 'reconcile failed terminally; not retrying' : 'reconcile retries exhausted; giving up', fields);
    if (result.object) {
      const events = createEventRecorder({ client: client.with({ fieldManager: controller.fieldManager }), controller: `operless/${controller.name}`, log });
      const reason = followUp.reason === 'TerminalError' ? terminalReason(result.outcome) : 'ReconcileFailed';
      await events.record(result.object, { type: 'Warning', reason, action: 'Reconcile', note: truncateError(followUp.error) });
    }
  } else if (followUp.label === 'error' || followUp.label === 'conflict' || followUp.label === 'throttled') {
    log.warn('reconcile failed; retrying', fields);
  } else {
    log.info('reconciled', fields);
  }
  return deliver(config, log, controller, group, followUp);
}

function terminalReason(outcome: { type: string; error?: unknown }): string {
  const reason = (outcome.error as { reason?: unknown } | undefined)?.reason;
  return typeof reason === 'string' && /^[A-Z][A-Za-z0-9]*$/.test(reason) ? reason : 'TerminalError';
}

/** Performs a follow-up; true when the key's records may be acknowledged. */
async function deliver(config: Resolved, log: Logger, controller: Controller<KubeObject> | undefined, group: KeyGroup, followUp: FollowUp): Promise<boolean> {
  try {
    if (followUp.type === 'send') {
      await sendFollowUp(config, followUp.message, followUp.delaySeconds);
    } else if (followUp.type === 'deadLetter') {
      await sendDeadLetter(config, group.body, followUp.reason, followUp.error);
      config.metrics.deadLetter(controller?.name ?? 'unknown', followUp.reason);
    }
    return true;
  } catch (err) {
    log.error('could not send the follow-up message; the records will be delivered again', {
      followUp: followUp.type, error: errorMessage(err),
    });
    return false;
  }
}

async function sendFollowUp(config: Resolved, message: ReconcileMessage, delaySeconds: number): Promise<void> {
  if (!config.queueUrl) {
    throw new Error('OPERLESS_QUEUE_URL is not set: the function cannot requeue or retry; set it to the work queue URL (serverless.yml does)');
  }
  const sender = await config.sender();
  await sender.send(config.queueUrl, { body: encodeMessage(message), delaySeconds });
}

async function sendDeadLetter(config: Resolved, body: string, reason: DlqReason, error: string): Promise<void> {
  if (!config.deadLetterQueueUrl) {
    throw new Error('OPERLESS_DLQ_URL is not set: the function cannot move a failed message to the dead-letter queue; set it to the DLQ URL (serverless.yml does)');
  }
  const sender = await config.sender();
  await sender.send(config.deadLetterQueueUrl, {
    body,
    attributes: {
      [DLQ_ATTRIBUTE_REASON]: reason,
      [DLQ_ATTRIBUTE_ERROR]: truncateError(error),
      [DLQ_ATTRIBUTE_FAILED_AT]: new Date(config.now()).toISOString(),
    },
  });
}
