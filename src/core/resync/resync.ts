/**
 * Stage src/core/resync/ — the scheduled resync, a Lambda of its own beside the handler it feeds
 * (with the resync period a spec declares, resync-period.ts). Guarantees: below; it imports no
 * other stage of src/core/.
 *
 * Resync: the safety net that heals anything the forwarder ever missed. Lists every object
 * of the given kinds (all namespaces, or each namespace of the operator's scope —
 * `OPERLESS_NAMESPACES`, kube/scope.ts — so a namespace-scoped identity never lists
 * cluster-wide; paginated with `limit`/`continue`, so memory stays bounded however many
 * objects exist) and enqueues one `Resync` reconcile message per object with
 * `SendMessageBatch` (10 per call).
 *
 * Guarantees: every listed object gets a message, is counted as failed, or — when no reconcile
 * message can name it (a built-in kind allows names such as `system:node`, which the contract
 * refuses) — is skipped with one WARN line and counted in `skipped`, never thrown. Entries SQS
 * rejects are retried once, and `resyncAll` rejects with a `ResyncError` naming the counts if
 * any remain, so a scheduled invocation shows up as failed in the function's metrics. A
 * message is a name, not the object: reconciles read live state, so an extra Resync is
 * harmless. Pages of a list that expired mid-way (410) restart from the beginning once.
 * A list the identity may not make (403: a namespace its RBAC does not cover) is logged with
 * the kind and namespace and counted in `forbidden`; the other namespaces and kinds are still
 * resynced, and `resyncAll` then rejects naming each forbidden list — one namespace missing
 * from the RBAC never stops the resync of the others.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { BATCH_LIMIT, sendMessageBatch, type BatchEntry } from '../../queue/batch-send.ts';
import type { KindRef, KubeClient, KubeObject } from '../../kube/types.ts';
import { displayKey, encodeMessage, messageProblem, newMessage, type ReconcileMessage } from '../../contract/message.ts';
import { errorMessage, silentLogger, type Logger } from '../../observability/log.ts';
import { scheduledKinds } from './resync-period.ts';
import { isFifoQueueUrl } from '../../queue/fifo.ts';
import { NAMESPACES_ENV, namespacesToList, parseNamespaceScope } from '../../kube/scope.ts';

export { BATCH_LIMIT, type BatchEntry } from '../../queue/batch-send.ts';
export type { EntryTrace } from '../../queue/port.ts';
export { resyncScheduleExpression, resyncSchedules, type ResyncPeriod, type ResyncSchedule } from './resync-period.ts';
/** The resync function's logger, from this entry so its bundle does not load the root entry's modules. */
export { createLogger, type Logger } from '../../observability/log.ts';
/** Objects per list page. */
export const DEFAULT_PAGE_SIZE = 500;

/** Sends up to 10 entries; resolves with the ids SQS did not accept (empty when all went). */
export type BatchSend = (entries: readonly BatchEntry[]) => Promise<string[]>;

export interface ResyncOptions {
  readonly kinds: readonly KindRef[];
  readonly client: Pick<KubeClient, 'list'>;
  /** Cluster id written into the messages (the forwarder's `cluster`). */
  readonly cluster: string;
  readonly send: BatchSend;
  readonly pageSize?: number;
  /** The operator's namespaces (kube/scope.ts): a namespaced kind is listed in each; empty = all namespaces at once. */
  readonly namespaces?: readonly string[];
  readonly log?: Logger;
  readonly now?: () => number;
  /** Stop early (the function's time budget): rejects with a ResyncError saying how far it got. */
  readonly signal?: AbortSignal;
}

export interface ResyncReport {
  readonly listed: number;
  readonly sent: number;
  readonly failed: number;
  readonly pages: number;
  /** Objects no reconcile message can name (logged): never sent, never retried. */
  readonly skipped: number;
  /** Lists the API server refused (403), each logged with its kind and namespace; the others went on. */
  readonly forbidden: number;
}

export class ResyncError extends Error {
  override readonly name = 'ResyncError';
  readonly report: ResyncReport;
  constructor(message: string, report: ResyncReport) {
    super(message);
    this.report = report;
  }
}

/** One `Resync` message per object (pure). */
export function resyncMessages(kind: KindRef, items: readonly KubeObject[], cluster: string, now: number): ReconcileMessage[] {
  return items.map((item) =>
    newMessage(
      {
        cluster,
        apiVersion: kind.apiVersion,
        kind: kind.kind,
        namespace: kind.namespaced ? item.metadata.namespace : undefined,
        name: item.metadata.name,
        uid: item.metadata.uid,
        resourceVersion: item.metadata.resourceVersion,
      },
      'Resync',
      now,
    ),
  );
}

/** Splits into batches of at most `size` (pure). */
export function chunk<T>(items: readonly T[], size: number = BATCH_LIMIT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export async function resyncAll(options: ResyncOptions): Promise<ResyncReport> {
  const log = options.log ?? silentLogger;
  const now = options.now ?? Date.now;
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  let listed = 0;
  let sent = 0;
  let failed = 0;
  let pages = 0;
  let skipped = 0;
  const forbidden: string[] = [];
  const lists = options.kinds.flatMap((kind) =>
    (kind.namespaced ? namespacesToList(options.namespaces ?? []) : [undefined]).map((namespace) => ({ kind, namespace })),
  );
  for (const { kind, namespace } of lists) {
    let token: string | undefined;
    let restarted = false;
    for (;;) {
      if (options.signal?.aborted) {
        throw new ResyncError(
          `resync ran out of time after enqueueing ${sent} objects (${kind.kind} not finished); ` + 'raise the resync function timeout or its page size',
          { listed, sent, failed, pages, skipped, forbidden: forbidden.length },
        );
      }
      let page: { items: KubeObject[]; continue?: string };
      try {
        page = await options.client.list(kind, { limit: pageSize, ...(namespace ? { namespace } : {}), ...(token ? { continue: token } : {}) });
      } catch (err) {
        if (token && !restarted && (err as { status?: number }).status === 410) {
          log.warn('list continue token expired; listing again from the start', { kind: kind.kind });
          token = undefined;
          restarted = true;
          continue;
        }
        if ((err as { status?: number }).status === 403) {
          const where = namespace ? `${kind.kind} in namespace ${namespace}` : `${kind.kind} in all namespaces`;
          forbidden.push(where);
          log.warn(
            'list forbidden: this kind is not resynced there, the other namespaces and kinds go on (grant the resync identity list in it, or remove it from OPERLESS_NAMESPACES)',
            {
              kind: kind.kind,
              namespace: namespace ?? 'all',
              error: errorMessage(err),
            },
          );
          break;
        }
        throw err;
      }
      pages += 1;
      listed += page.items.length;
      const at = now();
      const bodies: string[] = [];
      for (const message of resyncMessages(kind, page.items, options.cluster, at)) {
        const problem = messageProblem(message, at);
        if (problem) {
          skipped += 1;
          log.warn('object skipped: no reconcile message can name it', { key: displayKey(message), error: problem.error });
        } else bodies.push(encodeMessage(message));
      }
      for (const batch of chunk(bodies)) {
        const entries = batch.map((body, i) => ({ id: `m${i}`, body }));
        let rejected = await safeSend(options.send, entries, log);
        if (rejected.length > 0) {
          rejected = await safeSend(
            options.send,
            entries.filter((e) => rejected.includes(e.id)),
            log,
          );
        }
        failed += rejected.length;
        sent += entries.length - rejected.length;
      }
      token = page.continue || undefined;
      if (!token) break;
    }
  }
  return finish();

  function finish(): ResyncReport {
    const report = { listed, sent, failed, pages, skipped, forbidden: forbidden.length };
    if (forbidden.length > 0) {
      throw new ResyncError(
        `resync enqueued ${sent} of ${listed} objects; the API server refused to list ${forbidden.join(', ')} (403, see the warnings above)` +
          `${failed > 0 ? `, and ${failed} messages were rejected by the queue` : ''}. ` +
          'Every other namespace was resynced; grant the resync identity list there (operless rbac --namespaces) or remove the namespace from OPERLESS_NAMESPACES.',
        report,
      );
    }
    if (failed > 0) {
      throw new ResyncError(
        `resync enqueued ${sent} of ${listed} objects; ${failed} messages were rejected by the queue (see the warnings above). ` +
          'The next scheduled resync will try again; check the queue policy and the function role if this repeats.',
        report,
      );
    }
    log.info('resync done', { ...report });
    return report;
  }
}

async function safeSend(send: BatchSend, entries: readonly BatchEntry[], log: Logger): Promise<string[]> {
  try {
    return await send(entries);
  } catch (err) {
    log.warn('SendMessageBatch failed', { error: errorMessage(err), entries: entries.length });
    return entries.map((e) => e.id);
  }
}

/** A `BatchSend` over `SendMessageBatch` to one queue. */
export function sqsBatchSend(sqs: SQSClient, queueUrl: string, log: Logger = silentLogger): BatchSend {
  return async (entries) => {
    const { failed } = await sendMessageBatch(sqs, queueUrl, entries);
    for (const f of failed) log.warn('queue rejected a resync message', { id: f.id, code: f.code, error: f.message });
    return failed.map((f) => f.id);
  };
}

export interface ResyncHandlerOptions {
  readonly kinds: readonly KindRef[];
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Kubernetes client for a cluster id (default: the function's configured access). */
  readonly clientFor?: (cluster: string) => Promise<Pick<KubeClient, 'list'>>;
  readonly sqs?: SQSClient;
  readonly log?: Logger;
}

/** Time kept back from the Lambda budget to report and exit cleanly. */
const RESERVE_MS = 3_000;

/**
 * The queue a resync sends to: the bulk queue (`OPERLESS_BULK_QUEUE_URL`) when set, so the
 * backlog never delays a live change (docs/semantics.md, "Live changes before the backlog"),
 * else the work queue (`OPERLESS_QUEUE_URL`). Per-key order cannot span two queues, so a bulk
 * queue next to a `.fifo` work queue (or a `.fifo` bulk queue) is refused, naming the variable.
 * Pure; throws a message naming what is missing or wrong.
 */
export function resyncQueueUrl(env: Readonly<Record<string, string | undefined>>): string {
  const queueUrl = env.OPERLESS_QUEUE_URL;
  const bulkUrl = env.OPERLESS_BULK_QUEUE_URL || undefined;
  if (!queueUrl)
    throw new Error(
      'the resync function needs OPERLESS_QUEUE_URL (the reconcile queue) and OPERLESS_CLUSTER (the cluster id the forwarder uses); set them in serverless.yml',
    );
  if (bulkUrl === undefined) return queueUrl;
  if (isFifoQueueUrl(queueUrl) || isFifoQueueUrl(bulkUrl)) {
    throw new Error(
      'OPERLESS_BULK_QUEUE_URL must be empty with per-key ordering (a .fifo queue): per-key order cannot span two queues, so the resync sends to the FIFO work queue',
    );
  }
  return bulkUrl;
}

/**
 * The scheduled resync function: `OPERLESS_QUEUE_URL` (where reconcile messages go) and
 * `OPERLESS_CLUSTER` (the cluster id the forwarder uses) are required;
 * `OPERLESS_BULK_QUEUE_URL`, when set, is where they go instead (`resyncQueueUrl`); `OPERLESS_NAMESPACES`
 * (comma-separated; an invalid name fails the invocation, naming the variable) lists in those
 * namespaces only; Kubernetes access is configured like the reconcile function's (see
 * src/kube/factory.ts).
 */
export function createResyncHandler(options: ResyncHandlerOptions) {
  const env = options.env ?? process.env;
  return async (_event: unknown, context?: { getRemainingTimeInMillis(): number }): Promise<ResyncReport> => {
    const queueUrl = resyncQueueUrl(env);
    const cluster = env.OPERLESS_CLUSTER;
    if (!cluster) {
      throw new Error(
        'the resync function needs OPERLESS_QUEUE_URL (the reconcile queue) and OPERLESS_CLUSTER (the cluster id the forwarder uses); set them in serverless.yml',
      );
    }
    const namespaces = parseNamespaceScope(env[NAMESPACES_ENV], NAMESPACES_ENV);
    const log = (options.log ?? silentLogger).child({ function: 'resync', cluster });
    const clientFor = options.clientFor ?? (await import('../../kube/factory.ts')).createClientFactory({ env });
    const sqs = options.sqs ?? (await import('../../queue/sqs.ts')).sharedSqsClient();
    const budget = context ? Math.max(1_000, context.getRemainingTimeInMillis() - RESERVE_MS) : undefined;
    return resyncAll({
      kinds: options.kinds,
      client: await clientFor(cluster),
      cluster,
      send: sqsBatchSend(sqs, queueUrl, log),
      namespaces,
      log,
      ...(budget ? { signal: AbortSignal.timeout(budget) } : {}),
    });
  };
}

/** A kind and the environment variables that hold the URL of its own work queue and, optionally, of its bulk queue. */
export interface ResyncTarget {
  readonly kind: KindRef;
  readonly queueUrlVariable: string;
  readonly bulkQueueUrlVariable?: string;
}

export interface PerKindResyncHandlerOptions extends Omit<ResyncHandlerOptions, 'kinds'> {
  readonly targets: readonly ResyncTarget[];
}

/**
 * The scheduled resync of a project with a queue per kind (what `operless init` generates):
 * each kind's objects go to the queue named by its `bulkQueueUrlVariable` when it has one,
 * else by its `queueUrlVariable`. Kinds are resynced
 * independently; one that fails (API server, queue, a missing variable) does not stop the
 * others, and the invocation then rejects naming each kind that did not finish, so it shows in
 * the function's error metrics. An event with `kinds` (a schedule's input, one schedule per
 * resync period: resync-period.ts) resyncs those kinds only. Resolves with a report per kind.
 */
export function createPerKindResyncHandler(options: PerKindResyncHandlerOptions) {
  const env = options.env ?? process.env;
  const log = options.log ?? silentLogger;
  // One Kubernetes client factory for all kinds (one connection pool, one credential cache).
  let factory: ((cluster: string) => Promise<Pick<KubeClient, 'list'>>) | undefined;
  const clientFor =
    options.clientFor ??
    (async (cluster: string) => {
      factory ??= (await import('../../kube/factory.ts')).createClientFactory({ env });
      return factory(cluster);
    });
  const runs = options.targets.map((target) => ({
    target,
    run: createResyncHandler({
      ...options,
      clientFor,
      kinds: [target.kind],
      env: {
        ...env,
        OPERLESS_QUEUE_URL: env[target.queueUrlVariable],
        OPERLESS_BULK_QUEUE_URL: target.bulkQueueUrlVariable ? env[target.bulkQueueUrlVariable] : undefined,
      },
      log: log.child({ kind: target.kind.kind }),
    }),
  }));
  return async (event: unknown, context?: { getRemainingTimeInMillis(): number }): Promise<Record<string, ResyncReport>> => {
    const due = scheduledKinds(
      event,
      runs.map(({ target }) => target.kind.kind),
    );
    const dueRuns = runs.filter(({ target }) => due.includes(target.kind.kind));
    const results = await Promise.allSettled(dueRuns.map(({ run }) => run(event, context)));
    const reports: Record<string, ResyncReport> = {};
    const failures: string[] = [];
    results.forEach((result, i) => {
      const { kind, queueUrlVariable } = dueRuns[i]!.target;
      if (result.status === 'fulfilled') reports[kind.kind] = result.value;
      else failures.push(`${kind.kind} (queue URL from ${queueUrlVariable}): ${errorMessage(result.reason)}`);
    });
    if (failures.length > 0) throw new Error(`resync did not finish for ${failures.join('; ')}`);
    return reports;
  };
}
