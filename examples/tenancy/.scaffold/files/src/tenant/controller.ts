/**
 * The Tenant controller. Each reconcile reads the live Tenant (never a cached copy), makes the
 * cluster match its spec, and reports the result in status. Return done() when finished,
 * requeueAfter(seconds) to look again later; throw to retry with backoff (TerminalError: give up).
 *
 * Idempotent: running it twice, or twice at once, must converge on the same objects.
 * See what a change would do to a live cluster before deploying it: `npx operless preview`
 * runs this reconcile with every cluster write a server-side dry run.
 */
import { done, setCondition, type ControllerSpec, type ReconcileContext, type ReconcileResult } from 'operless';
import { TENANT, type Tenant } from './types.ts';

import { NAMESPACES, RESOURCEQUOTAS } from 'operless/kinds';

export const READY = 'Ready';

export const tenantController: ControllerSpec<Tenant> = {
  ...TENANT,
  owns: [NAMESPACES, RESOURCEQUOTAS],
  reconcile: reconcileTenant,
  // Optional controls (docs/semantics.md), uncomment what this kind needs:
  // resync: { everySeconds: 600 },  // how often the scheduled resync re-enqueues every Tenant (keep serverless.yml's resyncSchedule in step)
  // rateLimit: { perSecond: 5 },    // at most 5 reconciles of Tenant start per second across every invocation; the excess waits in the queue
  //                                 // (the count is a Lease: give the function get/create/patch on leases in infra/rbac/tenant-function.yaml)
  // timers: [{ name: 'health', everySeconds: 300, async run(object, ctx) { /* e.g. an external health check, without an event */ } }],
};

export async function reconcileTenant(object: Tenant, ctx: ReconcileContext<Tenant>): Promise<ReconcileResult> {
  // TODO: create or update the Namespace, ResourceQuota this Tenant owns, by server-side apply with a
  // controller owner reference (changes to them come back here as `Owned` messages), e.g.
  //   await ctx.applyOwned(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: object.metadata.name }, ... });
  // Anything outside the cluster (an external API, a payment, an email) is yours to guard:
  // `operless preview` runs this reconcile with every cluster write a dry run, but cannot undo a call, e.g.
  //   if (!ctx.preview) await billing.ensureAccount(object.metadata.name);
  const generation = object.metadata.generation;
  const conditions = setCondition(object.status?.conditions, {
    type: READY,
    status: 'True',
    reason: 'Reconciled',
    message: `Tenant ${object.metadata.name} is reconciled`,
    observedGeneration: generation,
  });
  // Written through the status subresource, only when it changed.
  if (await ctx.updateStatus({ observedGeneration: generation, conditions })) ctx.log.info('status updated', { ready: true });
  return done();
}
