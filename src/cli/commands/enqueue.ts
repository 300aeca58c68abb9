/**
 * `operless enqueue`: force a reconcile by sending the message the forwarder would have sent.
 *
 * - `enqueue <kind>/<namespace>/<name>...` needs no cluster access: the message names the
 *   object (no uid, so whatever object has that name now is reconciled — reconciles read live
 *   state). One `SendMessage` per object through the runtime's sender (src/queue/sqs.ts).
 * - `enqueue [<kind>] --all [--namespace ns]` lists the objects through the Kubernetes API
 *   (paginated) and sends one message each, with uid and resourceVersion, in SendMessageBatch
 *   chunks — the scheduled resync function's own code (`resyncAll` in src/core/resync/resync.ts).
 *   A namespace-scoped install (`--namespaces`, `OPERLESS_NAMESPACES` or the project's
 *   serverless.yml: cli/scope.ts) is listed in its namespaces only, never cluster-wide;
 *   `--namespace` must then be one of them. A namespace the identity may not list (403) is
 *   named in the summary and the exit code, and the other namespaces are still enqueued.
 *
 * Queues: next to a running `operless dev` of a project with several kinds, each message goes
 * to the queue of the function that reconciles its kind; `--queue-url` sends everything to one.
 *
 * The reason is `Resync`: like the resync function's messages, these are not caused by an
 * observed change but ask "bring this object to its desired state again". It shows as
 * `reason=Resync` in the function's logs. Guarantees: exit code 1 unless every object was
 * accepted by the queue; an invalid name is refused before anything is sent.
 */
import { decodeMessage, displayKey, encodeMessage, newMessage, type ReconcileMessage } from '../../contract/message.ts';
import { createSqsSender } from '../../queue/sqs.ts';
import { ResyncError, resyncAll, sqsBatchSend, type BatchEntry, type BatchSend } from '../../core/resync/resync.ts';
import type { KindRef } from '../../kube/types.ts';
import { UsageError, helpText, intOption, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { connectCluster } from '../cluster.ts';
import { parseObjectArg, resolveKind, type ProjectKind } from '../kinds.ts';
import { PROJECT_OPTION, projectDir, projectKinds } from '../project-dir.ts';
import { SCOPE_OPTION, resolveScope } from '../scope.ts';
import { TARGET_OPTIONS, queueUrlForKind, resolveTarget, sqsClient, type Target } from '../target.ts';
import type { CommandResult } from './command.ts';

export const ENQUEUE_REASON = 'Resync' as const;

export const enqueueSpec: CommandSpec = {
  name: 'enqueue',
  summary: 'send a reconcile message for objects (one, several, or --all of a kind)',
  usage: '<kind>/<namespace>/<name>... | [<kind>] --all [--namespace <ns>] [options]',
  details:
    'Names one object per argument (cluster-scoped kinds: <kind>/<name>); this needs only the queue.\n' +
    'With --all, lists the objects of the kind (every project kind when none is given) through the\n' +
    'Kubernetes API and sends one message each, with uid and resourceVersion. Messages carry\n' +
    `reason ${ENQUEUE_REASON}. Kinds are the project's CRDs (infra/crds), typed like kubectl: Memcached, memcacheds, mc.\n` +
    'A namespace-scoped install lists in its namespaces only: --namespaces, else OPERLESS_NAMESPACES, else the\n' +
    "project's serverless.yml params.default.namespaces; a namespace the identity may not list is reported.",
  options: {
    ...TARGET_OPTIONS,
    ...PROJECT_OPTION,
    ...SCOPE_OPTION,
    all: { type: 'boolean', description: 'Every object of the kind (listed from the cluster)' },
    namespace: { type: 'string', short: 'n', description: 'With --all: only this namespace (one of --namespaces when set)', placeholder: 'ns' },
    'page-size': { type: 'string', description: 'With --all: objects per list request', default: '500', placeholder: 'n' },
  },
  examples: ['operless enqueue mc/default/memcached-sample', 'operless enqueue memcached --all --namespace default', 'operless enqueue --all --json'],
};

export interface EnqueueSummary {
  /** The queue the messages went to (the first, when the kinds have queues of their own). */
  readonly queueUrl: string;
  /** Every queue messages went to, when more than one. */
  readonly queueUrls?: readonly string[];
  readonly reason: typeof ENQUEUE_REASON;
  readonly listed?: number;
  readonly sent: number;
  readonly failed: number;
  /** With --all: lists the API server refused (403); the error names them. */
  readonly forbidden?: number;
  readonly objects: string[];
  readonly error?: string;
}

export async function enqueue(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(enqueueSpec, argv);
  if (args.values.help) return { output: helpText(enqueueSpec) };
  const root = projectDir(args);
  const kinds = projectKinds(root);
  const all = args.values.all === true;
  const namespace = stringOption(args.values, 'namespace');
  const pageSize = intOption(args.values, 'page-size', 1, 10_000) ?? 500;
  if (!all && namespace) throw new UsageError('--namespace only applies with --all; name single objects as <kind>/<namespace>/<name>');
  if (!all && args.positionals.length === 0)
    throw new UsageError('name an object, e.g. `operless enqueue mc/default/my-cache`, or use --all. Run `operless enqueue --help` for usage.');
  if (all && args.positionals.length > 1) throw new UsageError('with --all give at most one kind, e.g. `operless enqueue mc --all`');

  const namespaces = all ? listNamespaces(resolveScope(args, root).namespaces, namespace) : [];
  const target = resolveTarget(args);
  const summary = all
    ? await enqueueAll(target, selectKinds(kinds, args.positionals[0], namespace), namespaces, pageSize)
    : await enqueueNamed(
        target,
        args.positionals.map((arg) => messageFor(kinds, arg, target.cluster, Date.now())),
      );
  const exitCode = summary.failed > 0 || summary.error ? 1 : 0;
  if (target.json) return { output: `${JSON.stringify(summary, null, 2)}\n`, exitCode };
  return { output: describe(summary), exitCode };
}

/** The kinds `--all` covers: the one named, or every project kind (a usage error if there is none). */
export function selectKinds(kinds: readonly ProjectKind[], typed: string | undefined, namespace: string | undefined): ProjectKind[] {
  const selected = typed ? [resolveKind(kinds, typed)] : [...kinds];
  if (selected.length === 0) throw new UsageError('no CRDs found in infra/crds/: nothing to enqueue (run `operless crd` first, or pass --project <dir>)');
  const clusterScoped = selected.filter((k) => !k.namespaced);
  if (namespace && clusterScoped.length > 0) {
    throw new UsageError(`--namespace does not apply to cluster-scoped ${clusterScoped.map((k) => k.kind).join(', ')}`);
  }
  return selected;
}

/**
 * The namespaces `--all` lists a namespaced kind in (pure): `--namespace` alone — refused when
 * a scope is set and does not hold it — else the scope's (empty: all namespaces at once).
 */
export function listNamespaces(scope: readonly string[], namespace: string | undefined): readonly string[] {
  if (namespace === undefined) return scope;
  if (scope.length > 0 && !scope.includes(namespace)) {
    throw new UsageError(`--namespace ${namespace} is outside the install's namespaces (${scope.join(', ')}): name one of them, or change --namespaces`);
  }
  return [namespace];
}

/** The message for one `<kind>/<namespace>/<name>` argument (pure but for validation). */
export function messageFor(kinds: readonly ProjectKind[], arg: string, cluster: string, now: number): ReconcileMessage {
  const { kind, namespace, name } = parseObjectArg(kinds, arg);
  const message = newMessage({ cluster, apiVersion: kind.apiVersion, kind: kind.kind, namespace, name }, ENQUEUE_REASON, now);
  try {
    encodeMessage(message);
  } catch (err) {
    throw new UsageError(`"${arg}": ${(err as Error).message.replace(/^refusing to send an invalid reconcile message: /, '')}`);
  }
  return message;
}

/** The distinct queues of a summary: `queueUrl` is the first, `queueUrls` only when several. */
function queuesOf(urls: readonly string[]): Pick<EnqueueSummary, 'queueUrl' | 'queueUrls'> {
  const distinct = [...new Set(urls)];
  return { queueUrl: distinct[0]!, ...(distinct.length > 1 ? { queueUrls: distinct } : {}) };
}

async function enqueueNamed(target: Target, messages: readonly ReconcileMessage[]): Promise<EnqueueSummary> {
  const sender = createSqsSender(sqsClient(target));
  const queues = messages.map((m) => queueUrlForKind(target, m.kind));
  const objects: string[] = [];
  let failed = 0;
  let error: string | undefined;
  for (const [i, message] of messages.entries()) {
    try {
      await sender.send(queues[i]!, { body: encodeMessage(message) });
      objects.push(displayKey(message));
    } catch (err) {
      failed += 1;
      error ??= `${(err as Error).message} (check the queue URL, region and credentials: \`operless doctor\`)`;
    }
  }
  return { ...queuesOf(queues), reason: ENQUEUE_REASON, sent: objects.length, failed, objects, ...(error ? { error } : {}) };
}

async function enqueueAll(target: Target, kinds: readonly KindRef[], namespaces: readonly string[], pageSize: number): Promise<EnqueueSummary> {
  const queues = kinds.map((k) => queueUrlForKind(target, k.kind));
  const queueOfKind = new Map(kinds.map((k, i) => [k.kind, queues[i]!]));
  const cluster = await connectCluster(target);
  const objects: string[] = [];
  const sqs = sqsClient(target);
  const senders = new Map(queues.map((url) => [url, sqsBatchSend(sqs, url)]));
  // Sends each entry to its kind's queue and records which objects were accepted, for the report.
  const send: BatchSend = async (entries) => {
    const decoded = entries.map((e) => ({ entry: e, message: decodeMessage(e.body) }));
    const byQueue = new Map<string, BatchEntry[]>();
    for (const { entry, message } of decoded) {
      const url = (message.ok ? queueOfKind.get(message.message.kind) : undefined) ?? queues[0]!;
      const batch = byQueue.get(url) ?? [];
      batch.push(entry);
      byQueue.set(url, batch);
    }
    const rejected = (await Promise.all([...byQueue].map(([url, batch]) => senders.get(url)!(batch)))).flat();
    for (const { entry, message } of decoded) {
      if (!rejected.includes(entry.id) && message.ok) objects.push(displayKey(message.message));
    }
    return rejected;
  };
  try {
    const report = await resyncAll({ kinds, client: cluster.client, cluster: target.cluster, send, pageSize, namespaces });
    return { ...queuesOf(queues), reason: ENQUEUE_REASON, listed: report.listed, sent: report.sent, failed: report.failed, objects };
  } catch (err) {
    if (err instanceof ResyncError) {
      return { ...queuesOf(queues), reason: ENQUEUE_REASON, ...err.report, objects, error: err.message };
    }
    throw err;
  } finally {
    await cluster.close();
  }
}

function describe(summary: EnqueueSummary): string {
  const lines: string[] = [];
  const on = summary.queueUrls ? `each on its kind's queue (${summary.queueUrls.join(', ')})` : `on ${summary.queueUrl}`;
  if (summary.listed !== undefined) lines.push(`Listed ${summary.listed} object(s); enqueued ${summary.sent} with reason ${summary.reason} ${on}:`);
  else lines.push(`Enqueued ${summary.sent} object(s) with reason ${summary.reason} ${on}:`);
  lines.push(...summary.objects.map((o) => `  ${o}`));
  if (summary.failed > 0) lines.push(`✘ ${summary.failed} message(s) were not accepted by the queue: ${summary.error ?? 'see above'}`);
  else if (summary.error) lines.push(`✘ ${summary.error}`);
  return `${lines.join('\n')}\n`;
}
