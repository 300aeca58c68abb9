/**
 * `operless status`: how the loop is doing, from the outside, without changing anything.
 *
 * - the work queue and the DLQ: visible, in flight, delayed (`GetQueueAttributes`; no message
 *   is ever received — that would count toward the DLQ), and where the age of the oldest
 *   message can be found (see queue-depth.ts); the bulk queue of resyncs and relists the same
 *   way, when one is known (`--bulk-queue-url`, `OPERLESS_BULK_QUEUE_URL`, `operless dev`);
 * - the forwarder: `/readyz` (and its reasons when not ready) and a few `/metrics` values;
 * - per project kind, the objects not yet reconciled at their current generation
 *   (`status.observedGeneration` missing or below `metadata.generation`), with their names —
 *   listed in each namespace of the install's scope (`--namespaces`, `OPERLESS_NAMESPACES`
 *   or the project's serverless.yml: cli/scope.ts), or cluster-wide when it has none. A
 *   namespace the identity may not list (403) is reported by name as forbidden, and the
 *   others are still counted.
 *
 * Each section is read independently: one that is not configured is reported as skipped
 * with how to configure it; one that fails is reported with its error, and the exit code
 * is 1 when any section failed or the forwarder is not ready.
 */
import type { KubeObject } from '../../kube/types.ts';
import { errorMessage } from '../../observability/log.ts';
import { helpText, intOption, parseCommandArgs, UsageError, type CommandSpec } from '../args.ts';
import { connectCluster, hasClusterConfig, type ClusterConnection } from '../cluster.ts';
import type { ProjectKind } from '../kinds.ts';
import { pickMetrics, sumMetrics } from '../prometheus.ts';
import { PROJECT_OPTION, projectDir, projectKinds } from '../project-dir.ts';
import { SCOPE_OPTION, resolveScope, type CliScope } from '../scope.ts';
import { namespacesToList } from '../../kube/scope.ts';
import { oldestAgeNote, queueDepth, type QueueDepth } from '../queue-depth.ts';
import { TARGET_OPTIONS, resolveTarget, sqsClient, type Target } from '../target.ts';
import type { CommandResult } from './command.ts';

export const statusSpec: CommandSpec = {
  name: 'status',
  summary: 'queue and DLQ depth, forwarder health, objects not yet reconciled',
  usage: '[options]',
  details:
    "Reads the queues (GetQueueAttributes only; no message is received), the forwarder's /readyz and\n" +
    '/metrics (--forwarder-url; in a cluster: kubectl -n operless port-forward deploy/operless-forwarder 8080),\n' +
    "and lists every object of the project's kinds whose status.observedGeneration is below its\n" +
    'metadata.generation. Next to a running `operless dev` it needs no options. A namespace-scoped\n' +
    "install lists in its namespaces only: --namespaces, else OPERLESS_NAMESPACES, else the project's\n" +
    'serverless.yml params.default.namespaces; a namespace the identity may not list is reported as forbidden.',
  options: {
    ...TARGET_OPTIONS,
    ...PROJECT_OPTION,
    ...SCOPE_OPTION,
    'max-names': { type: 'string', description: 'Names shown per kind', default: '20', placeholder: 'n' },
    'bulk-queue-url': {
      type: 'string',
      description: 'The bulk queue (resyncs and relists; env OPERLESS_BULK_QUEUE_URL): shown when given',
      placeholder: 'url',
    },
  },
  examples: [
    'operless status',
    'operless status --json',
    'operless status --namespaces team-a,team-b',
    'operless status --queue-url $QUEUE --dlq-url $DLQ --forwarder-url http://127.0.0.1:8080',
  ],
};

export type Section<T> =
  | { readonly state: 'ok'; readonly value: T }
  | { readonly state: 'skipped'; readonly hint: string }
  | { readonly state: 'error'; readonly error: string };

export interface QueueStatus extends QueueDepth {
  readonly oldestMessageAge: string;
}

export interface ForwarderStatus {
  readonly url: string;
  readonly ready: boolean;
  /** Why it is not ready, from /readyz. */
  readonly reasons: string[];
  readonly metrics: Record<string, number>;
}

export interface KindStatus {
  readonly kind: string;
  readonly apiVersion: string;
  readonly total: number;
  readonly notReconciled: number;
  /** `namespace/name (generation G, observed O|never)`, at most --max-names. */
  readonly names: string[];
  /** Where it was listed: the scope's namespaces, or `all namespaces` / `cluster` (a cluster-scoped kind). */
  readonly listedIn: readonly string[];
  /** Where the API server refused the list (403): namespaces, or `all namespaces` / `cluster`; the totals leave them out. */
  readonly forbidden: readonly string[];
}

export interface StatusReport {
  readonly queue: Section<QueueStatus>;
  readonly dlq: Section<QueueStatus>;
  /** The bulk queue, when one is known. */
  readonly bulk?: Section<QueueStatus>;
  readonly forwarder: Section<ForwarderStatus>;
  readonly objects: Section<KindStatus[]>;
}

/** Forwarder metrics shown by `status` (sums over labels). */
export const FORWARDER_METRICS = [
  'operless_forwarder_watches_synced',
  'operless_forwarder_queue_reachable',
  'operless_forwarder_leader',
  'operless_forwarder_buffer_depth',
  'operless_forwarder_messages_sent_total',
  'operless_forwarder_send_errors_total',
  'operless_forwarder_messages_dropped_total',
  'operless_forwarder_watch_restarts_total',
  'operless_forwarder_relists_total',
] as const;

export async function status(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(statusSpec, argv);
  if (args.values.help) return { output: helpText(statusSpec) };
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
  const maxNames = intOption(args.values, 'max-names', 0, 10_000) ?? 20;
  const target = resolveTarget(args);
  const root = projectDir(args);
  const kinds = projectKinds(root);
  const scope = resolveScope(args, root);
  const bulkUrl =
    typeof args.values['bulk-queue-url'] === 'string' ? args.values['bulk-queue-url'] : process.env.OPERLESS_BULK_QUEUE_URL || bulkQueueOfDev(target);
  const [queue, dlq, bulk, forwarder, objects] = await Promise.all([
    readQueue(target, target.queueUrl, '--queue-url or OPERLESS_QUEUE_URL'),
    readQueue(target, target.dlqUrl, '--dlq-url or OPERLESS_DLQ_URL'),
    bulkUrl ? readQueue(target, bulkUrl, '--bulk-queue-url') : undefined,
    readForwarder(target.forwarderUrl),
    readObjects(target, kinds, scope, maxNames),
  ]);
  const report: StatusReport = { queue, dlq, ...(bulk ? { bulk } : {}), forwarder, objects };
  const exitCode = statusExitCode(report);
  if (target.json) return { output: `${JSON.stringify(report, null, 2)}\n`, exitCode };
  return { output: renderStatus(report), exitCode };
}

/** The bulk queue of the first function of a running `operless dev` (the one `queueUrl` is), if any. */
function bulkQueueOfDev(target: Target): string | undefined {
  if (target.source !== 'operless dev' || !target.devFunctions) return undefined;
  return Object.values(target.devFunctions).find((f) => f.queueUrl === target.queueUrl)?.bulkQueueUrl;
}

/** 1 when a section failed, a list was forbidden, or the forwarder is not ready; skipped sections are fine (pure). */
export function statusExitCode(report: StatusReport): number {
  const sections = [report.queue, report.dlq, ...(report.bulk ? [report.bulk] : []), report.forwarder, report.objects];
  if (sections.some((s) => s.state === 'error')) return 1;
  if (report.objects.state === 'ok' && report.objects.value.some((k) => k.forbidden.length > 0)) return 1;
  if (report.forwarder.state === 'ok' && !report.forwarder.value.ready) return 1;
  return 0;
}

/** An object whose current generation the controller has not reported as observed (pure). */
export function notReconciled(object: KubeObject): boolean {
  const generation = object.metadata.generation;
  if (generation === undefined) return false;
  const observed = (object.status as { observedGeneration?: unknown } | undefined)?.observedGeneration;
  return typeof observed !== 'number' || observed < generation;
}

function objectLabel(object: KubeObject): string {
  const name = object.metadata.namespace ? `${object.metadata.namespace}/${object.metadata.name}` : object.metadata.name;
  const observed = (object.status as { observedGeneration?: unknown } | undefined)?.observedGeneration;
  return `${name} (generation ${object.metadata.generation}, observed ${typeof observed === 'number' ? observed : 'never'})`;
}

async function readQueue(target: Target, url: string | undefined, how: string): Promise<Section<QueueStatus>> {
  if (!url) return { state: 'skipped', hint: `not configured: pass ${how}, or run next to a running \`operless dev\`` };
  const sqs = sqsClient(target);
  try {
    const depth = await queueDepth(sqs, url);
    return { state: 'ok', value: { ...depth, oldestMessageAge: oldestAgeNote(url, target.region, depth.oldestAgeSeconds) } };
  } catch (err) {
    return { state: 'error', error: `${url}: ${errorMessage(err)} (check the URL, region and credentials; \`operless doctor\` checks them)` };
  } finally {
    sqs.destroy();
  }
}

async function readForwarder(url: string | undefined): Promise<Section<ForwarderStatus>> {
  if (!url) {
    return {
      state: 'skipped',
      hint: 'not configured: pass --forwarder-url (e.g. after `kubectl -n operless port-forward deploy/operless-forwarder 8080`) or set OPERLESS_FORWARDER_URL',
    };
  }
  const base = url.replace(/\/+$/, '');
  try {
    const ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5000) });
    const readyText = await ready.text();
    const metricsResponse = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5000) });
    // A labelled counter has no sample until first incremented: read it as 0.
    const counters = Object.fromEntries(FORWARDER_METRICS.filter((n) => n.endsWith('_total')).map((n) => [n, 0]));
    const metrics = metricsResponse.ok ? { ...counters, ...pickMetrics(sumMetrics(await metricsResponse.text()), FORWARDER_METRICS) } : {};
    return {
      state: 'ok',
      value: {
        url: base,
        ready: ready.status === 200,
        reasons:
          ready.status === 200
            ? []
            : readyText
                .split('\n')
                .map((l) => l.trim())
                .filter(Boolean),
        metrics,
      },
    };
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    return { state: 'error', error: `${base} did not answer: ${errorMessage(cause ?? err)} (is the forwarder running and the port forwarded?)` };
  }
}

async function readObjects(target: Target, kinds: readonly ProjectKind[], scope: CliScope, maxNames: number): Promise<Section<KindStatus[]>> {
  if (kinds.length === 0) return { state: 'skipped', hint: 'no CRDs in infra/crds/ (run in your project folder, or pass --project <dir>)' };
  if (!hasClusterConfig(target)) {
    return { state: 'skipped', hint: 'no cluster configured: pass --kubeconfig <path> [--context <name>] or set KUBECONFIG' };
  }
  let cluster: ClusterConnection;
  try {
    cluster = await connectCluster(target);
  } catch (err) {
    return { state: 'error', error: errorMessage(err) };
  }
  try {
    const out: KindStatus[] = [];
    for (const kind of kinds) {
      let total = 0;
      const stale: KubeObject[] = [];
      const listedIn: string[] = [];
      const forbidden: string[] = [];
      for (const namespace of kind.namespaced ? namespacesToList(scope.namespaces) : [undefined]) {
        const where = namespace ?? (kind.namespaced ? 'all namespaces' : 'cluster');
        let token: string | undefined;
        try {
          do {
            const page = await cluster.client.list(kind, { limit: 500, ...(namespace ? { namespace } : {}), ...(token ? { continue: token } : {}) });
            total += page.items.length;
            for (const item of page.items) if (notReconciled(item)) stale.push(item);
            token = page.continue || undefined;
          } while (token);
          listedIn.push(where);
        } catch (err) {
          if ((err as { status?: number }).status !== 403) throw err;
          forbidden.push(where);
        }
      }
      out.push({
        kind: kind.kind,
        apiVersion: kind.apiVersion,
        total,
        notReconciled: stale.length,
        names: stale.slice(0, maxNames).map(objectLabel),
        listedIn,
        forbidden,
      });
    }
    return { state: 'ok', value: out };
  } catch (err) {
    return { state: 'error', error: `${errorMessage(err)} (\`operless doctor\` checks cluster access)` };
  } finally {
    await cluster.close();
  }
}

/** The human-readable report (pure). */
export function renderStatus(report: StatusReport): string {
  const lines: string[] = [];
  const section = <T>(title: string, s: Section<T>, body: (value: T) => string[]) => {
    if (s.state === 'ok') lines.push(...body(s.value).map((l, i) => (i === 0 ? `${title.padEnd(12)}${l}` : `${' '.repeat(12)}${l}`)));
    else if (s.state === 'skipped') lines.push(`${title.padEnd(12)}– ${s.hint}`);
    else lines.push(`${title.padEnd(12)}✘ ${s.error}`);
  };
  const queueLines = (q: QueueStatus) => [
    `${q.visible} visible, ${q.inFlight} in flight, ${q.delayed} delayed  (${q.url})`,
    `oldest message age: ${q.oldestMessageAge}`,
  ];
  section('queue', report.queue, queueLines);
  if (report.bulk) section('bulk queue', report.bulk, queueLines);
  section('dlq', report.dlq, (q) => [
    `${q.visible} visible, ${q.inFlight} in flight, ${q.delayed} delayed  (${q.url})`,
    ...(q.visible + q.inFlight + q.delayed > 0 ? ['inspect with `operless dlq list`; replay with `operless dlq redrive`'] : []),
  ]);
  section('forwarder', report.forwarder, (f) => {
    const m = f.metrics;
    const value = (name: string) => (m[name] === undefined ? '?' : String(m[name]));
    return [
      f.ready ? `✔ ready  (${f.url})` : `✘ not ready  (${f.url})`,
      ...f.reasons.map((r) => `  ${r}`),
      `watches synced ${value('operless_forwarder_watches_synced')}, queue reachable ${value('operless_forwarder_queue_reachable')}, ` +
        `leader ${value('operless_forwarder_leader')}, buffered ${value('operless_forwarder_buffer_depth')}`,
      `sent ${value('operless_forwarder_messages_sent_total')}, send errors ${value('operless_forwarder_send_errors_total')}, ` +
        `dropped ${value('operless_forwarder_messages_dropped_total')}, watch restarts ${value('operless_forwarder_watch_restarts_total')}, ` +
        `relists ${value('operless_forwarder_relists_total')}`,
    ];
  });
  section('objects', report.objects, (kinds) =>
    kinds.flatMap((k) => [
      `${k.kind}: ${k.total} total, ${k.notReconciled} not yet reconciled at their current generation${k.listedIn.length > 0 ? ` (in ${k.listedIn.join(', ')})` : ''}`,
      ...(k.forbidden.length > 0 ? [`  ✘ forbidden (403) in ${k.forbidden.join(', ')}: not counted; ${forbiddenHint(k.forbidden)}`] : []),
      ...k.names.map((n) => `  ${n}`),
      ...(k.notReconciled > k.names.length ? [`  … and ${k.notReconciled - k.names.length} more`] : []),
    ]),
  );
  return `${lines.join('\n')}\n`;
}

/** What to do about a forbidden list (pure): a scoped install names its namespaces; a namespace of the scope needs the RBAC. */
function forbiddenHint(where: readonly string[]): string {
  return where.includes('all namespaces')
    ? 'a namespace-scoped install? pass --namespaces <a,b> (or set OPERLESS_NAMESPACES) to list in its namespaces only'
    : 'grant this identity list there (operless rbac --namespaces), or leave the namespace out of the scope';
}
