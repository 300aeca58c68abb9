/**
 * Lambda entry point: the scheduled resync (serverless.yml, `resyncSchedule`), the safety net
 * that heals anything the forwarder ever missed. It lists every object of every kind of this
 * project and sends each a `Resync` reconcile message on its kind's own work queue, whose
 * URL serverless.yml gives this function in the variable named below. `operless create api`
 * adds each new kind here (at the +operless:scaffold markers).
 *
 * Kinds are resynced independently: one that fails (API server, queue) does not stop the
 * others, and the invocation then fails naming each kind that did not finish, so it shows in
 * the function's error metrics. An extra Resync is harmless: reconciles read live state.
 */
import { createClientFactory, createLogger, type KindRef } from 'operless';
import { createResyncHandler, type ResyncReport } from 'operless/resync';
import { TENANT } from '../src/tenant/types.ts';
// +operless:scaffold:resync-imports

/** Every kind, and the environment variable holding the URL of its work queue. */
export const resyncKinds: { readonly kind: KindRef; readonly queueUrlVariable: string }[] = [
  { kind: TENANT, queueUrlVariable: 'TENANT_QUEUE_URL' },
  // +operless:scaffold:resync-kinds
];

const log = createLogger();
const clients = createClientFactory();
const resyncs = resyncKinds.map(({ kind, queueUrlVariable }) => ({
  kind,
  queueUrlVariable,
  run: createResyncHandler({
    kinds: [kind],
    env: { ...process.env, OPERLESS_QUEUE_URL: process.env[queueUrlVariable] },
    clientFor: clients,
    log: log.child({ kind: kind.kind }),
  }),
}));

export async function handler(event: unknown, context?: { getRemainingTimeInMillis(): number }): Promise<Record<string, ResyncReport>> {
  const results = await Promise.allSettled(resyncs.map((resync) => resync.run(event, context)));
  const reports: Record<string, ResyncReport> = {};
  const failures: string[] = [];
  results.forEach((result, i) => {
    const { kind, queueUrlVariable } = resyncs[i]!;
    if (result.status === 'fulfilled') reports[kind.kind] = result.value;
    else failures.push(`${kind.kind} (queue URL from ${queueUrlVariable}): ${result.reason instanceof Error ? result.reason.message : String(result.reason)}`);
  });
  if (failures.length > 0) throw new Error(`resync did not finish for ${failures.join('; ')}`);
  return reports;
}
