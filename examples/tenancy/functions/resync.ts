/**
 * Lambda entry point: the scheduled resync (serverless.yml, `resyncSchedule`), the safety net
 * that heals anything the forwarder ever missed. It lists every object of every kind of this
 * project and sends each a `Resync` reconcile message on its kind's own bulk queue (unordered
 * kinds: a live change never waits behind the backlog) or work queue (per-key kinds), whose
 * URLs serverless.yml gives this function in the variables named below. `operless create api`
 * adds each new kind here (at the +operless:scaffold markers).
 *
 * Kinds are resynced independently: one that fails (API server, queue) does not stop the
 * others, and the invocation then fails naming each kind that did not finish, so it shows in
 * the function's error metrics. An extra Resync is harmless: reconciles read live state.
 */
import { createLogger, createPerKindResyncHandler, type ResyncTarget } from 'operless/resync';
import { TENANT } from '../src/tenant/types.ts';
// +operless:scaffold:resync-imports

/** Every kind, and the environment variables holding the URLs of its work queue and bulk queue. */
export const resyncTargets: ResyncTarget[] = [
  { kind: TENANT, queueUrlVariable: 'TENANT_QUEUE_URL', bulkQueueUrlVariable: 'TENANT_BULK_QUEUE_URL' },
  // +operless:scaffold:resync-kinds
];

export const handler = createPerKindResyncHandler({ targets: resyncTargets, log: createLogger() });
