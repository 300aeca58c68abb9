/**
 * The fault suite's polling controller: `Poller` (fixtures/pollers-crd.yaml), a controller
 * that asks for `requeueAfter` — the one thing the Memcached controller never does — so the
 * suite runs requeue chains through its faults: in per-key ordering the pending-requeue mark
 * (`operless.dev/requeue-at`), the merge and supersede rules (src/core/per-key/requeue-merge.ts), the
 * delay queue, the mover and its FIFO deduplication ids (src/queue/fifo.ts).
 *
 * Each reconcile reads `status.progress` and, while it is below `spec.polls`, writes it one
 * higher and returns `requeueAfter(POLL_SECONDS)`; once it reached `spec.polls` it writes
 * `done` and returns `done()`. So an object converges only through its own chain of requeues
 * (no event arrives after its `Added`), one poll per reconcile whichever chain runs it.
 *
 * `POLL_SECONDS` is above the merge margin (1 s, requeue-merge.ts): a requeue asked while
 * one is pending merges into it rather than replacing it. Retries: 1 s base, 4 s cap, 10
 * attempts (the runtime's default count), so an API server outage of the suite's length is
 * retried through, not dead-lettered.
 */
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { done, requeueAfter } from '../../src/core/controller/result.ts';
import type { ReconcileContext } from '../../src/core/controller/types.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';

export const POLLER: KindRef = { apiVersion: 'faults.operless.dev/v1', kind: 'Poller', plural: 'pollers', namespaced: true };
export const POLLER_RETRY = { baseSeconds: 1, capSeconds: 4, maxAttempts: 10 } as const;
export const POLL_SECONDS = 3;

export interface Poller extends KubeObject {
  spec: { polls: number };
  status?: { progress?: number; done?: boolean; observedGeneration?: number };
}

async function reconcilePoller(poller: Poller, ctx: ReconcileContext<Poller>) {
  const progress = poller.status?.progress ?? 0;
  if (progress < poller.spec.polls) {
    await ctx.updateStatus({ progress: progress + 1, done: false });
    return requeueAfter(POLL_SECONDS);
  }
  await ctx.updateStatus({ progress, done: true });
  return done();
}

export const controllers = [defineController<Poller>({ ...POLLER, reconcile: reconcilePoller, retry: POLLER_RETRY })];
export const handler = toSqsHandler(controllers);
