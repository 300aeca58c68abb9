/**
 * `operless preview`: what the project's current code would change in a live cluster, with
 * nothing written (src/preview/run.ts: the runtime's own reconcile, every write a server-side
 * dry run). The step before `osls deploy` (docs/deploy.md).
 *
 * - Objects: `<kind>/<namespace>/<name>...`, or `[<kind>] --all [--namespace ns]
 *   [--selector sel]` (every project kind when none is named), listed through the API in pages.
 * - The controllers are the project's own: every function with an SQS event in serverless.yml,
 *   imported as `operless dev` imports them (their `controllers` export).
 * - The cluster: `--kubeconfig`/`KUBECONFIG`/a running `operless dev`, `--context`, and
 *   impersonation (`--as`) — so a preview can run under the functions' own RBAC.
 * - Bounded: at most `--concurrency` objects at once and `--qps` requests per second in all
 *   (reads, dry-run writes and the diffs' reads share one token bucket); a progress line on
 *   stderr every few seconds on long runs.
 * - Output: one block per object that would change or fail, a summary; `--json` the previews
 *   whole. Exit codes in src/preview/report.ts: 0 nothing would change, 3 something would,
 *   1 a reconcile would fail or a preview failed, 2 a usage error.
 */
import type { Controller } from '../../core/controller/controller.ts';
import { importFunction, loadProjectLayout } from '../../devloop/project.ts';
import { rateLimiter } from '../../kube/recording-transport.ts';
import type { KindRef, KubeObject } from '../../kube/types.ts';
import { previewObject, type ObjectPreview, type PreviewTarget } from '../../preview/run.ts';
import { previewExitCode, previewText } from '../../preview/report.ts';
import { UsageError, helpText, intOption, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { IMPERSONATION_OPTIONS, connectCluster, impersonationFrom } from '../cluster.ts';
import { parseObjectArg, resolveKind, type ProjectKind } from '../kinds.ts';
import { PROJECT_OPTION, projectDir, projectKinds } from '../project-dir.ts';
import { TARGET_OPTIONS, resolveTarget } from '../target.ts';
import type { CommandResult } from './command.ts';

export const previewSpec: CommandSpec = {
  name: 'preview',
  summary: "show what the project's code would change in a live cluster (every write a server-side dry run)",
  usage: '<kind>/<namespace>/<name>... | [<kind>] --all [--namespace <ns>] [--selector <sel>] [options]',
  details:
    "Runs the reconcile of each object with the project's current controllers (serverless.yml's functions),\n" +
    'every write sent with dryRun=All (admission, webhooks, defaulting and validation apply; nothing is\n' +
    'stored), Events collected and follow-ups reported instead of sent. Prints each child that would be\n' +
    'created, changed (a diff without server-set fields) or deleted, the status that would be written,\n' +
    'refused writes, Events and the result. ctx.preview is true: guard calls outside the cluster with it.\n' +
    'Exit codes: 0 nothing would change, 3 something would change, 1 a reconcile would fail, 2 usage.',
  options: {
    kubeconfig: TARGET_OPTIONS.kubeconfig,
    context: TARGET_OPTIONS.context,
    cluster: TARGET_OPTIONS.cluster,
    json: TARGET_OPTIONS.json,
    ...IMPERSONATION_OPTIONS,
    ...PROJECT_OPTION,
    all: { type: 'boolean', description: 'Every object of the kind (every project kind when none is named)' },
    namespace: { type: 'string', short: 'n', description: 'With --all: only this namespace', placeholder: 'ns' },
    selector: { type: 'string', short: 'l', description: 'With --all: only objects with these labels (a label selector)', placeholder: 'sel' },
    concurrency: { type: 'string', description: 'Objects previewed at once', default: '4', placeholder: 'n' },
    qps: { type: 'string', description: 'API requests per second, in all', default: '20', placeholder: 'n' },
  },
  examples: [
    'operless preview mc/default/memcached-sample',
    'operless preview memcached --all --namespace shop',
    'operless preview --all --json > preview.json || echo "exit $?"',
  ],
};

const PROGRESS_EVERY_MS = 5_000;

export async function preview(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(previewSpec, argv);
  if (args.values.help) return { output: helpText(previewSpec) };
  const root = projectDir(args);
  const kinds = projectKinds(root);
  const all = args.values.all === true;
  const namespace = stringOption(args.values, 'namespace');
  const selector = stringOption(args.values, 'selector');
  const concurrency = intOption(args.values, 'concurrency', 1, 64) ?? 4;
  const qps = intOption(args.values, 'qps', 1, 1000) ?? 20;
  if (!all && (namespace || selector))
    throw new UsageError('--namespace and --selector only apply with --all; name single objects as <kind>/<namespace>/<name>');
  if (!all && args.positionals.length === 0)
    throw new UsageError('name an object, e.g. `operless preview mc/default/my-cache`, or use --all. Run `operless preview --help` for usage.');
  if (all && args.positionals.length > 1) throw new UsageError('with --all give at most one kind, e.g. `operless preview mc --all`');

  const controllers = await projectControllers(root);
  const controllerOf = (kind: Pick<KindRef, 'apiVersion' | 'kind'>) => controllerFor(controllers, kind);
  const target = resolveTarget(args);
  const impersonate = impersonationFrom(args);
  const cluster = await connectCluster(target, impersonate);
  try {
    const take = rateLimiter(qps);
    const work: { controller: Controller<KubeObject>; target: PreviewTarget }[] = [];
    if (all) {
      const selected = args.positionals[0] ? [resolveKind(kinds, args.positionals[0])] : kinds;
      if (selected.length === 0) throw new UsageError('no CRDs found in infra/crds/: nothing to preview (run `operless crd` first, or pass --project <dir>)');
      for (const kind of selected) {
        const controller = controllerOf(kind);
        for (const object of await listAll(cluster.client, kind, namespace, selector, take)) {
          work.push({ controller, target: { ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}), name: object.metadata.name } });
        }
      }
    } else {
      for (const arg of args.positionals) {
        const { kind, namespace: ns, name } = parseObjectArg(kinds, arg);
        work.push({ controller: controllerOf(kind), target: { ...(ns ? { namespace: ns } : {}), name } });
      }
    }
    const previews = await runBounded(work, concurrency, (w) =>
      previewObject(w.controller, w.target, { transport: cluster.transport, take, cluster: target.cluster }),
    );
    const exitCode = previewExitCode(previews);
    if (target.json) return { output: `${JSON.stringify({ exitCode, previews }, null, 2)}\n`, exitCode };
    return { output: previewText(previews), exitCode };
  } finally {
    await cluster.close();
  }
}

/** The project's controller of a kind; a usage error naming what the functions serve when none. */
export function controllerFor(controllers: readonly Controller<KubeObject>[], kind: Pick<KindRef, 'apiVersion' | 'kind'>): Controller<KubeObject> {
  const found = controllers.find((c) => c.kind.apiVersion === kind.apiVersion && c.kind.kind === kind.kind);
  if (!found)
    throw new UsageError(
      `no function of this project reconciles ${kind.kind} (${kind.apiVersion}): serverless.yml's functions serve ${controllers.map((c) => c.kind.kind).join(', ') || 'nothing'}`,
    );
  return found;
}

/** Every reconcile function's controllers, imported as `operless dev` imports them. */
export async function projectControllers(root: string): Promise<Controller<KubeObject>[]> {
  process.env.OPERLESS_METRICS ??= 'off';
  const layout = loadProjectLayout(root);
  const loaded = [];
  for (const entry of layout.functions) loaded.push(await importFunction(root, entry));
  return loaded.flatMap((f) => [...f.controllers]);
}

async function listAll(
  client: Awaited<ReturnType<typeof connectCluster>>['client'],
  kind: ProjectKind,
  namespace: string | undefined,
  selector: string | undefined,
  take: () => Promise<void>,
): Promise<KubeObject[]> {
  const items: KubeObject[] = [];
  let cont: string | undefined;
  do {
    await take();
    const page = await client.list(kind, {
      ...(namespace ? { namespace } : {}),
      ...(selector ? { labelSelector: selector } : {}),
      limit: 500,
      ...(cont ? { continue: cont } : {}),
    });
    items.push(...page.items);
    cont = page.continue;
  } while (cont);
  return items;
}

/** Runs `fn` over `items`, at most `limit` at once, results in the items' order; a progress line on long runs. */
async function runBounded<I>(items: readonly I[], limit: number, fn: (item: I) => Promise<ObjectPreview>): Promise<ObjectPreview[]> {
  const results = new Array<ObjectPreview>(items.length);
  let next = 0;
  let finished = 0;
  const started = Date.now();
  const timer = setInterval(() => {
    process.stderr.write(`operless preview: ${finished}/${items.length} objects previewed (${Math.round((Date.now() - started) / 1000)} s)\n`);
  }, PROGRESS_EVERY_MS);
  timer.unref();
  try {
    await Promise.all(
      Array.from({ length: Math.min(limit, items.length) }, async () => {
        while (next < items.length) {
          const i = next++;
          results[i] = await fn(items[i]!);
          finished += 1;
        }
      }),
    );
  } finally {
    clearInterval(timer);
  }
  return results;
}
