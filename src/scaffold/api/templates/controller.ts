/**
 * Template of `src/<kind>/controller.ts`: the kind's controller stub — its `owns` and related
 * `watches`, and a reconcile that sets the `Ready` condition and says, in comments, where the
 * owned children and the related objects go; the optional controls (a resync period, a rate
 * limit toward an external API, a timer per object) as commented examples in the declaration,
 * not flags: each needs code of the author's (a timer's run) or a figure only they know.
 * docs/cli.md ("operless init and operless create api") says why. Pure.
 */
import type { KindRef } from '../../../kube/types.ts';
import { isBuiltinKind } from '../../known-kinds.ts';
import { camel, constant, kebab } from '../../names.ts';
import type { ApiEntry } from '../../project-file.ts';
import { refField } from './types.ts';

function kindRefLiteral(ref: KindRef): string {
  return `{ apiVersion: '${ref.apiVersion}', kind: '${ref.kind}', plural: '${ref.plural}', namespaced: ${ref.namespaced} }`;
}

export function controllerModule(api: ApiEntry): string {
  const k = api.kind;
  const refs = [...api.owns, ...(api.watches ?? []).filter((w) => !api.owns.some((o) => o.kind === w.kind))];
  // Built-in kinds come typed from operless/kinds (their objects are checked against the model); the project's own kinds as literals.
  const builtin = refs.filter(isBuiltinKind);
  const custom = refs.filter((ref) => !isBuiltinKind(ref));
  const owned = [
    ...(builtin.length > 0 ? [`import { ${builtin.map((ref) => constant(ref.plural)).join(', ')} } from 'operless/kinds';`] : []),
    ...custom.map((ref) => `export const ${constant(ref.plural)}: KindRef = ${kindRefLiteral(ref)};`),
  ].join('\n');
  const watches = (api.watches ?? []).map((w) => `{ kind: ${constant(w.plural)}, map: { field: 'spec.${refField(w)}.name' } }`).join(', ');
  const watchNote = (api.watches ?? [])
    .map(
      (w) => `  // ${w.kind} object.spec.${refField(w)}?.name (same namespace) is read here; its changes reconcile this ${k}
  // (\`Related\` messages), e.g. const ${camel(w.kind)} = ref ? await ctx.client.get(${constant(w.plural)}, ref.name, object.metadata.namespace) : undefined;\n`,
    )
    .join('');
  const ownsList = api.owns.map((ref) => constant(ref.plural)).join(', ');
  const example = api.owns[0];
  const exampleNote = example
    ? `  // TODO: create or update the ${api.owns.map((o) => o.kind).join(', ')} this ${k} owns, by server-side apply with a
  // controller owner reference (changes to them come back here as \`Owned\` messages), e.g.
  //   await ctx.applyOwned(${constant(example.plural)}, { apiVersion: '${example.apiVersion}', kind: '${example.kind}', metadata: { name: object.metadata.name${example.namespaced && api.namespaced ? ', namespace: object.metadata.namespace' : ''} }, ... });\n`
    : '  // TODO: make the cluster match object.spec (ctx.client reads and writes; ctx.applyOwned for children).\n';
  const previewNote = `  // Anything outside the cluster (an external API, a payment, an email) is yours to guard:
  // \`operless preview\` runs this reconcile with every cluster write a dry run, but cannot undo a call, e.g.
  //   if (!ctx.preview) await billing.ensureAccount(object.metadata.name);\n`;
  return `/**
 * The ${k} controller. Each reconcile reads the live ${k} (never a cached copy), makes the
 * cluster match its spec, and reports the result in status. Return done() when finished,
 * requeueAfter(seconds) to look again later; throw to retry with backoff (TerminalError: give up).
 *
 * Idempotent: running it twice, or twice at once, must converge on the same objects.
 * See what a change would do to a live cluster before deploying it: \`npx operless preview\`
 * runs this reconcile with every cluster write a server-side dry run.
 */
import { done, setCondition, type ControllerSpec,${custom.length > 0 ? ' type KindRef,' : ''} type ReconcileContext, type ReconcileResult } from 'operless';
import { ${constant(k)}, type ${k} } from './types.ts';
${owned ? `\n${owned}\n` : ''}
export const READY = 'Ready';

export const ${camel(k)}Controller: ControllerSpec<${k}> = {
  ...${constant(k)},
  owns: [${ownsList}],${watches ? `\n  watches: [${watches}],` : ''}
  reconcile: reconcile${k},
  // Optional controls (docs/semantics.md), uncomment what this kind needs:
  // resync: { everySeconds: 600 },  // how often the scheduled resync re-enqueues every ${k} (keep serverless.yml's resyncSchedule in step)
  // rateLimit: { perSecond: 5 },    // at most 5 reconciles of ${k} start per second across every invocation; the excess waits in the queue
  //                                 // (the count is a Lease: give the function get/create/patch on leases in infra/rbac/${kebab(k)}-function.yaml)
  // timers: [{ name: 'health', everySeconds: 300, async run(object, ctx) { /* e.g. an external health check, without an event */ } }],
};

export async function reconcile${k}(object: ${k}, ctx: ReconcileContext<${k}>): Promise<ReconcileResult> {
${exampleNote}${watchNote}${previewNote}  const generation = object.metadata.generation;
  const conditions = setCondition(object.status?.conditions, {
    type: READY,
    status: 'True',
    reason: 'Reconciled',
    message: \`${k} \${object.metadata.name} is reconciled\`,
    observedGeneration: generation,
  });
  // Written through the status subresource, only when it changed.
  if (await ctx.updateStatus({ observedGeneration: generation, conditions })) ctx.log.info('status updated', { ready: true });
  return done();
}
`;
}
