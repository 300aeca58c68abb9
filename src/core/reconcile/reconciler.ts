/**
 * Stage src/core/reconcile/ — one key's work: group the batch's records by key (batch.ts), the
 * reconcile with pause and finalizer (this file), the follow-up decision (followup.ts), its
 * delivery (delivery.ts), the key's outcome (outcome.ts), metrics, spans and the repair count.
 * Guarantees: a key's reconcile ends in exactly one outcome and at most one follow-up; the
 * folder knows nothing of the controls or the ordering chosen above it.
 *
 * One reconcile of one object key, level-based: read the live primary and decide from it,
 * never from the message (which only names the object).
 *
 * 1. GET the primary. Not found → done (children go with it by owner references).
 * 2. The message carries a uid and the live object has another → the object the message
 *    was about is gone (recreated under the same name) → done; the new object has its own
 *    events. A message without a uid is about whatever object lives under the name: batch.ts
 *    and the forwarder's merge drop the uid whenever the messages they stand for name several
 *    objects, so a message of the old object never hides one of the new. When the caller
 *    passes `forLiveUid` (a batch group), the message is chosen again from the live uid
 *    before anything runs (what `ctx.message` speaks of; the caller's follow-up continues from it).
 * 3. Per-key mode: a message that stands only for requeues a later one replaced → nothing
 *    runs (`superseded`; per-key/requeue-merge.ts).
 * 3a. Not being deleted and paused (`operless.dev/paused: "true"`) → nothing runs (`paused`;
 *    pause.ts), after writing the `Paused` condition and Event at a transition; a resumed
 *    object gets `Paused=False` and is reconciled.
 * 4. Being deleted (`deletionTimestamp`) and carrying our finalizer → `finalize(object)`;
 *    when it returns done (or nothing), remove the finalizer (merge patch guarded by
 *    resourceVersion); when it asks to requeue, keep the finalizer and requeue. Being
 *    deleted without our finalizer: nothing for a controller with `finalize` to do (done);
 *    a controller without `finalize` still gets `reconcile` (it may want to react).
 * 5. Otherwise ensure our finalizer (when `finalize` is given), then `reconcile(object)`.
 *
 * Never throws: every failure becomes `{ type: 'error' }` with the live object (when it was
 * read) so the handler can record a Warning Event on it.
 */
import type { ReconcileMessage } from '../../contract/message.ts';
import type { Logger } from '../../observability/log.ts';
import type { BoundKubeClient } from '../../kube/client.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../kube/finalizers.ts';
import { applyOwned } from '../../kube/owned.ts';
import { statusApplyBody, updateStatus } from '../../kube/status.ts';
import type { Controller } from '../controller/controller.ts';
import { pauseFieldManager, pauseStep, type PauseTransition } from './pause.ts';
import { setCondition } from '../../kube/conditions.ts';
import type { ReconcileEnding } from './followup.ts';
import { TerminalError } from '../controller/errors.ts';
import { done } from '../controller/result.ts';
import type { ReconcileContext } from '../controller/types.ts';
import type { EventRecorder, KindRef, KubeObject } from '../../kube/types.ts';

export interface ReconcileEnv {
  readonly client: BoundKubeClient;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly reconcileId: string;
  /**
   * Per-key mode: true when the message stands only for requeues a later one replaced
   * (per-key/requeue-merge.ts `isSupersededRequeue`), decided on the live object; then nothing runs.
   */
  readonly superseded?: (object: KubeObject) => boolean;
  /** A preview (src/preview/): `ctx.preview` is true; the client's writes are dry runs (kube/recording-transport.ts). */
  readonly preview?: boolean;
}

/** One attempt at reconciling a key (`reconcileKey`): how it ended, the step it reached, the live object read. */
export interface ReconcileAttempt {
  readonly ending: ReconcileEnding;
  /**
   * The live primary, when it was read (for Warning Events); after a reconcile, as its own
   * status write left it (`ctx.object`: the resourceVersion a per-key mark is guarded by).
   */
  readonly object?: KubeObject | undefined;
  /** Which step ran: for logs. */
  readonly step: 'get' | 'finalize' | 'reconcile' | 'skip';
}

export async function reconcileKey<T extends KubeObject>(
  controller: Controller<T>,
  message: ReconcileMessage,
  env: ReconcileEnv,
  forLiveUid?: (uid: string | undefined) => ReconcileMessage,
): Promise<ReconcileAttempt> {
  const kind = controller.kind;
  const client = env.client.with({ fieldManager: controller.fieldManager, signal: env.signal });
  if (kind.namespaced !== (message.namespace !== undefined)) {
    const problem = kind.namespaced
      ? `${kind.kind} is namespaced but the message for "${message.name}" has no namespace`
      : `${kind.kind} is cluster-scoped but the message for "${message.name}" has namespace "${message.namespace}"`;
    return {
      ending: { type: 'error', error: new TerminalError(`${problem}; fix the producer (forwarder watch config)`, { reason: 'InvalidMessage' }) },
      step: 'skip',
    };
  }
  let object: T | undefined;
  try {
    object = await client.get<T>(kind, message.name, message.namespace);
  } catch (error) {
    return { ending: { type: 'error', error }, step: 'get' };
  }
  if (!object) return { ending: { type: 'gone', why: 'NotFound' }, step: 'skip' };
  if (message.uid && object.metadata.uid && object.metadata.uid !== message.uid) {
    return { ending: { type: 'gone', why: 'UidChanged' }, object, step: 'skip' };
  }
  if (env.superseded?.(object)) return { ending: { type: 'superseded' }, object, step: 'skip' };
  if (!object.metadata.deletionTimestamp) {
    const pause = pauseStep(object);
    if (pause.transition) object = await showPause(client, controller, object, pause.transition, env);
    if (pause.paused) return { ending: { type: 'paused' }, object, step: 'skip' };
  }
  const ranFor = forLiveUid ? forLiveUid(object.metadata.uid) : message;
  const finalizer = controller.finalizer;
  const spec = controller.spec;
  let step: ReconcileAttempt['step'] = 'reconcile';
  try {
    if (object.metadata.deletionTimestamp && spec.finalize && finalizer) {
      if (!hasFinalizer(object, finalizer)) return { ending: { type: 'result', result: done() }, object, step: 'skip' };
      step = 'finalize';
      const ctx = createContext(controller, object, ranFor, client, env);
      const result = (await spec.finalize(object, ctx)) ?? done();
      if (result.type === 'requeueAfter') return { ending: { type: 'result', result }, object, step };
      await removeFinalizer(client, kind, ctx.object, finalizer);
      env.log.info('finalized; finalizer removed', { finalizer });
      return { ending: { type: 'result', result: done() }, object, step };
    }
    if (spec.finalize && finalizer) object = await ensureFinalizer(client, kind, object, finalizer);
    const ctx = createContext(controller, object, ranFor, client, env);
    const result = await spec.reconcile(object, ctx);
    if (!result || (result.type !== 'done' && result.type !== 'requeueAfter')) {
      throw new TypeError(`reconcile of ${controller.kind.kind} returned ${JSON.stringify(result)}; return done() or requeueAfter(seconds) from 'operless'`);
    }
    // `ctx.object`: the primary with the resourceVersion of the reconcile's own status write, the precondition of a per-key mark.
    return { ending: { type: 'result', result }, object: ctx.object, step };
  } catch (error) {
    return { ending: { type: 'error', error }, object, step };
  }
}

/**
 * Writes a pause transition: the object's conditions as read with `Paused` set, under a field
 * manager of its own and guarded by the resourceVersion read (a keyed or an atomic conditions
 * list alike keeps every condition of the author's), and its Event. Never throws: a failed write is logged and the
 * pause holds all the same (the next trigger tries again); returns the object as written, or
 * as it was.
 */
async function showPause<T extends KubeObject>(
  client: BoundKubeClient,
  controller: Controller<T>,
  object: T,
  transition: PauseTransition,
  env: ReconcileEnv,
): Promise<T> {
  const existing = (object.status as { conditions?: unknown } | undefined)?.conditions;
  const conditions = setCondition(Array.isArray(existing) ? existing : [], transition.condition);
  let written = object;
  try {
    written = await client
      .with({ fieldManager: pauseFieldManager(controller.fieldManager) })
      .applyStatus<T>(controller.kind, statusApplyBody(object, { conditions }));
  } catch (error) {
    env.log.warn('could not write the Paused condition; the pause holds, the next change tries again', {
      error: error instanceof Error ? error.message : String(error),
      paused: transition.condition.status,
    });
  }
  await env.events.record(written, transition.event);
  return written;
}

/** The context handed to `reconcile`/`finalize`; `object` follows the latest status written. */
export function createContext<T extends KubeObject>(
  controller: Controller<T>,
  initial: T,
  message: ReconcileMessage,
  client: BoundKubeClient,
  env: ReconcileEnv,
): ReconcileContext<T> {
  let current = initial;
  return {
    reconcileId: env.reconcileId,
    message,
    log: env.log,
    client,
    events: env.events,
    signal: env.signal,
    preview: env.preview === true,
    get object() {
      return current;
    },
    applyOwned: <C extends KubeObject>(childKind: KindRef, child: C) => applyOwned(client, current, childKind, child),
    async updateStatus(status: Record<string, unknown>): Promise<boolean> {
      const written = await updateStatus(client, controller.kind, current, status);
      if (!written) return false;
      current = { ...current, status: written.status, metadata: { ...current.metadata, resourceVersion: written.metadata.resourceVersion } };
      return true;
    },
  };
}
