/**
 * Handling one object key of a batch, in named steps that end in one follow-up and one send:
 *
 * 1. which controller serves the key — none: DLQ `UnknownKind`;
 * 2. may it run now — not due: re-delay it; too little time left to start: hand it back
 *    unchanged (invocation/budget.ts `canStart`);
 * 3. an object outside the namespaces the function runs for (`OPERLESS_NAMESPACES`,
 *    kube/scope.ts): DLQ `UnknownNamespace` (its RBAC would refuse every request anyway);
 *    a Kubernetes client for its cluster — none served: DLQ `UnknownCluster`; another failure:
 *    retried like a failed reconcile;
 * 3a. a tick of a per-object timer runs the timer instead (controls/timer-tick.ts); a controller with a
 *    rate limit takes a place in its shared count first, and one that finds none hands the
 *    key back for later, not as an attempt (controls/rate-limit-lease.ts);
 * 4. the reconcile within the time budget (`reconcileWithinBudget`): its signal is aborted at
 *    half the reserve, and one that ignores it is abandoned at a quarter and counts as failed;
 * 5. the follow-up from the outcome (reconcile/followup.ts) — per-key mode: a requeue merged into the
 *    key's pending one, or marked as pending once sent (per-key/requeue-merge.ts) — logged and
 *    counted, with a `Warning` Event on the object when it goes to the DLQ;
 * 6. the follow-up sent (reconcile/delivery.ts): the key's outcome (reconcile/outcome.ts); per-key mode, a
 *    requeue the queue accepted is then marked on the primary (`markRequeue`); after a
 *    reconcile, the object's missing timer chains are started (controls/timer-tick.ts).
 *
 * Guarantees: the key's records are acknowledged only once its follow-up was accepted by the
 * queue; one Event recorder per key; `handleKey` rejects only on a bug (the handler turns
 * that into a `crashed` outcome).
 *
 * Per-key marks, sent first, marked second, and a failed mark costs only merging: the mark
 * write is a merge patch guarded by the primary's resourceVersion as the reconcile last knew
 * it (after its own status write), so a late or frozen invocation cannot overwrite a newer
 * mark (409). When the write fails for any reason — 409, annotations at the 256 KiB limit
 * (422), an admission webhook down, 429 — the requeue already accepted by the queue stands
 * unmarked and the key's records are acknowledged (logged, `unmarked_requeues_total`): an
 * unmarked requeue sees an older mark, which supersedes nothing due after it
 * (per-key/requeue-merge.ts), so it is reconciled when due and the polling chain goes on. Failing the
 * key instead would send another requeue on every redelivery, block its FIFO group for the
 * visibility timeout each time and end in the DLQ; writing the mark first would leave, on a
 * failed send, a mark naming no message, into which later requeues merge and vanish. The
 * cost of an unmarked requeue: it merges nothing, so while marks keep failing each event that
 * asks for a requeue may start one more chain (unordered mode's behaviour), until a mark is
 * written again.
 */
import { randomUUID } from 'node:crypto';
import { displayKey, type ReconcileMessage } from '../../contract/message.ts';
import { truncateError } from '../../contract/dlq.ts';
import { isEventReason } from '../../contract/names.ts';
import { errorMessage, type Logger } from '../../observability/log.ts';
import type { BoundKubeClient } from '../../kube/client.ts';
import { createEventRecorder } from '../../kube/events.ts';
import { UnknownClusterError, type ClientFactory } from '../../kube/factory.ts';
import { inScope } from '../../kube/scope.ts';
import type { EventRecorder, KindRef, KubeObject } from '../../kube/types.ts';
import { REQUEUE_MARK_ANNOTATION, requeueMarkOf } from '../../contract/requeue-mark.ts';
import { forLiveObject, type KeyGroup } from '../reconcile/batch.ts';
import { abandonAfterMs, canStart, reconcileAllowanceMs } from '../invocation/budget.ts';
import type { Controller } from '../controller/controller.ts';
import { deliver, type DeliveryTarget } from '../reconcile/delivery.ts';
import { decideFollowUp, deferred, redelay, type FollowUp, type ReconcileEnding } from '../reconcile/followup.ts';
import type { KeyOutcome } from '../reconcile/outcome.ts';
import { reconcileKey, type ReconcileAttempt } from '../reconcile/reconciler.ts';
import { rateLimitGate } from '../controls/rate-limit-lease.ts';
import { isSupersededRequeue, requeueStep } from '../per-key/requeue-merge.ts';
import { handleTick, startTimerChains } from '../controls/timer-tick.ts';
import { tracedClient, withKeySpan } from '../reconcile/reconcile-spans.ts';
import { watchWrites, WriteWatch } from '../reconcile/repair.ts';

/** What handling a key needs from its invocation. */
export interface KeyRun extends DeliveryTarget {
  readonly controllers: readonly Controller<KubeObject>[];
  readonly clients: ClientFactory;
  /** The namespaces this function runs for; empty = all (kube/scope.ts). */
  readonly namespaces: readonly string[];
  readonly random: () => number;
  /** The invocation's logger (with its request id). */
  readonly log: Logger;
  /** Milliseconds left in the invocation. */
  readonly remaining: () => number;
  readonly reserveMs: number;
  /** The longest single delay of a follow-up (invocation/schedule.ts). */
  readonly maxDelaySeconds: number;
}

/** The follow-up of a key and the controller it is counted for. */
interface Decision {
  readonly controllerName: string;
  readonly followUp: FollowUp;
  /** Per-key mode, a requeue sent (or a timer's next tick): marks it on the primary once the queue accepted it (per-key/requeue-merge.ts, controls/timer-tick.ts); may fail. */
  readonly markSent?: () => Promise<void>;
  /** After a reconcile: starts the object's missing timer chains once the follow-up was accepted (controls/timer-tick.ts); never fails. */
  readonly startTimers?: () => Promise<void>;
}

/** Handles one key: decides its follow-up, then sends it. */
export async function handleKey(run: KeyRun, group: KeyGroup): Promise<KeyOutcome> {
  const reconcileId = randomUUID();
  const log = keyLogger(run.log, group, reconcileId);
  return withKeySpan(group, reconcileId, async (span) => {
    const { controllerName, followUp, markSent, startTimers } = await decideForKey(
      { ...run, clients: async (cluster) => tracedClient(await run.clients(cluster), span) },
      group,
      log,
      reconcileId,
    );
    span.setAttribute('operless.followup', followUp.type);
    const outcome = await deliver(run, log, controllerName, group.body, followUp, span);
    if (outcome.type === 'sendFailed') return outcome;
    if (outcome.type === 'sent' && markSent) {
      try {
        await markSent();
      } catch (err) {
        // The requeue (or tick) stands unmarked: an older mark supersedes nothing due after it, so it runs when due.
        log.warn('could not mark the requeue just sent on the object; it stands unmarked (reconciled when due, merges nothing)', { error: errorMessage(err) });
        run.metrics.unmarkedRequeue?.(controllerName);
      }
    }
    await startTimers?.();
    return outcome;
  });
}

function keyLogger(parent: Logger, group: KeyGroup, reconcileId: string): Logger {
  const message = group.message;
  return parent.child({
    key: displayKey(message),
    cluster: message.cluster,
    reconcileId,
    attempt: message.attempt,
    reason: message.reason,
    ...(group.records.length > 1 ? { coalesced: group.records.length } : {}),
  });
}

async function decideForKey(run: KeyRun, group: KeyGroup, keyLog: Logger, reconcileId: string): Promise<Decision> {
  let log = keyLog;
  const message = group.message;
  const controller = run.controllers.find((c) => c.handles(message));
  if (!controller) return { controllerName: 'unknown', followUp: unknownKind(run.controllers, message, log) };
  const decide = (followUp: FollowUp): Decision => ({ controllerName: controller.name, followUp });
  if (!inScope(run.namespaces, message.namespace)) return decide(outsideScope(run.namespaces, message, log));
  const held = heldBack(run, group, controller, log);
  if (held) return decide(held);
  const found = await clientFor(run, controller, message, log);
  if ('followUp' in found) return decide(found.followUp);
  // A resync's reconcile: whether it wrote a change is what the resync repaired (reconcile/repair.ts); a client without a transport (a test's fake) cannot tell.
  const writes = message.reason === 'Resync' && found.client.transport ? new WriteWatch() : undefined;
  const client = writes ? { client: watchWrites(found.client, writes) } : found;
  const events = createEventRecorder({ client: client.client.with({ fieldManager: controller.fieldManager }), controller: `operless/${controller.name}`, log });
  if (message.timer !== undefined)
    return {
      controllerName: controller.name,
      ...(await handleTick(run, controller, { ...message, timer: message.timer }, { client: client.client, events, log, reconcileId })),
    };
  const gate = await rateLimitGate(run, controller, message, client.client, log);
  if (gate.followUp) return decide(gate.followUp);
  if (gate.window !== undefined) log = log.child({ rateWindow: gate.window });
  const perKey = run.ordering === 'per-key';
  const superseded = perKey ? { superseded: (object: KubeObject) => isSupersededRequeue(group.due, object) } : {};
  const ran = await reconcileWithinBudget(run, controller, group, { client: client.client, events, log, reconcileId, ...superseded });
  const decided = decideFollowUp({
    message: ran.ranFor,
    ending: ran.result.ending,
    policy: controller.retry,
    now: run.now(),
    random: run.random,
    maxDelaySeconds: run.maxDelaySeconds,
  });
  const { followUp, mark } = perKey ? requeueStep(decided, ran.result.object, run.now()) : { followUp: decided, mark: undefined };
  run.metrics.reconcile({
    controller: controller.name,
    label: followUp.label,
    durationSeconds: ran.durationMs / 1000,
    lagSeconds: ran.lagMs / 1000,
    ...(writes ? { resyncRepaired: writes.changed } : {}),
  });
  await reportReconcile(log, events, ran, followUp);
  const object = ran.result.object;
  const startTimers = controller.timers.length > 0 ? { startTimers: () => startTimerChains(run, controller, message.cluster, ran.result, log) } : {};
  if (mark === undefined || !object) return { ...decide(followUp), ...startTimers };
  const markClient = client.client.with({ fieldManager: controller.fieldManager });
  return { ...decide(followUp), markSent: () => markRequeue(markClient, controller.kind, object, mark), ...startTimers };
}

/**
 * Writes the pending-requeue mark (the due time of the requeue just sent) on the primary,
 * guarded by the uid (a recreated object) and the resourceVersion the reconcile last knew (a
 * newer mark, or any change since: 409, and the requeue stands unmarked).
 */
async function markRequeue(client: BoundKubeClient, kind: KindRef, object: KubeObject, due: number): Promise<void> {
  const { name, namespace, uid, resourceVersion } = object.metadata;
  const guard = { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) };
  await client.mergePatch(kind, name, namespace, { metadata: { ...guard, annotations: { [REQUEUE_MARK_ANNOTATION]: String(due) } } });
}

function unknownKind(controllers: readonly Controller<KubeObject>[], message: ReconcileMessage, log: Logger): FollowUp {
  const served = controllers.map((c) => `${c.kind.apiVersion} ${c.kind.kind}`).join(', ');
  const error = `no controller in this function serves ${message.apiVersion} ${message.kind} (served: ${served})`;
  log.error('message for an unknown kind; moving it to the DLQ', { error });
  return { type: 'deadLetter', label: 'terminal_error', reason: 'UnknownKind', error };
}

function outsideScope(namespaces: readonly string[], message: ReconcileMessage, log: Logger): FollowUp {
  const error = `namespace "${message.namespace}" is not one this function runs for (OPERLESS_NAMESPACES=${namespaces.join(',')}); add it to the namespaces of the forwarder, the functions and the RBAC together`;
  log.error('message for an object outside the namespaces this function runs for; moving it to the DLQ', { error });
  return { type: 'deadLetter', label: 'terminal_error', reason: 'UnknownNamespace', error };
}

/** The follow-up of a key that must not run now (not due, or no time left to start), else undefined. */
function heldBack(run: KeyRun, group: KeyGroup, controller: Controller<KubeObject>, log: Logger): FollowUp | undefined {
  const message = group.message;
  if (group.notDue && message.notBefore !== undefined) {
    log.debug('not due yet; re-delaying', { notBefore: message.notBefore });
    run.metrics.deferred(controller.name, 'not_due');
    return redelay({ ...message, notBefore: message.notBefore }, run.now(), run.maxDelaySeconds);
  }
  if (!canStart(run.remaining(), run.reserveMs)) {
    log.info('no time left in this invocation to start; handing the key back to the queue', { remainingMs: run.remaining(), reserveMs: run.reserveMs });
    run.metrics.deferred(controller.name, 'deferred');
    return deferred(message);
  }
  return undefined;
}

async function clientFor(
  run: KeyRun,
  controller: Controller<KubeObject>,
  message: ReconcileMessage,
  log: Logger,
): Promise<{ client: BoundKubeClient } | { followUp: FollowUp }> {
  const now = run.now();
  try {
    return { client: await run.clients(message.cluster) };
  } catch (err) {
    if (err instanceof UnknownClusterError) {
      log.error('message for a cluster this function has no access to; moving it to the DLQ', { error: err.message });
      return { followUp: { type: 'deadLetter', label: 'terminal_error', reason: 'UnknownCluster', error: err.message } };
    }
    log.error('could not create the Kubernetes client', { error: errorMessage(err) });
    return {
      followUp: decideFollowUp({
        message,
        ending: { type: 'error', error: err },
        policy: controller.retry,
        now,
        random: run.random,
        maxDelaySeconds: run.maxDelaySeconds,
      }),
    };
  }
}

interface ReconcileEnvOfKey {
  readonly client: BoundKubeClient;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly reconcileId: string;
  readonly superseded?: (object: KubeObject) => boolean;
}

/** A reconcile as it ended within the budget, with the message it ran for. */
interface BudgetedRun {
  readonly result: ReconcileAttempt;
  /** In a group of several uids, the live object's own message (reconcile/batch.ts, forLiveObject); else the group's. */
  readonly ranFor: ReconcileMessage;
  readonly durationMs: number;
  readonly lagMs: number;
}

/**
 * Runs the key's reconcile with its signal aborted at the end of its allowance. One that
 * ignores its aborted signal is not waited for past a quarter of the reserve: it counts as
 * failed, so its follow-up (retry or dead letter) still goes out and the invocation answers in
 * time. It may still run on in the background (the runtime cannot stop it); at-least-once
 * delivery already allows two runs of one key.
 */
async function reconcileWithinBudget(run: KeyRun, controller: Controller<KubeObject>, group: KeyGroup, env: ReconcileEnvOfKey): Promise<BudgetedRun> {
  const message = group.message;
  const abort = new AbortController();
  const allowance = reconcileAllowanceMs(run.remaining(), run.reserveMs);
  const timers: ReturnType<typeof setTimeout>[] = [];
  if (Number.isFinite(allowance)) {
    timers.push(setTimeout(() => abort.abort(new Error(`reconcile stopped: the function's time budget ran out after ${Math.round(allowance)} ms`)), allowance));
  }
  const started = run.now();
  let ranFor: ReconcileMessage | undefined;
  try {
    const reconciling = reconcileKey(controller, message, { ...env, signal: abort.signal }, (liveUid) => (ranFor = forLiveObject(group, liveUid)));
    const abandonIn = abandonAfterMs(run.remaining(), run.reserveMs);
    const abandoned = Number.isFinite(abandonIn)
      ? new Promise<ReconcileAttempt>((resolve) => {
          timers.push(setTimeout(() => resolve(abandonedResult(run, message, env.log, abandonIn - allowance)), abandonIn));
        })
      : undefined;
    const result = await (abandoned ? Promise.race([reconciling, abandoned]) : reconciling);
    return { result, ranFor: ranFor ?? message, durationMs: run.now() - started, lagMs: Math.max(0, started - message.observedAt) };
  } finally {
    for (const timer of timers) clearTimeout(timer);
  }
}

/** What an abandoned reconcile counts as: a failure naming the grace it was given. */
function abandonedResult(run: KeyRun, message: ReconcileMessage, log: Logger, graceMsExact: number): ReconcileAttempt {
  const graceMs = Math.round(graceMsExact);
  log.error('reconcile ignored ctx.signal and is still running after the time budget ran out; abandoning it and counting it as failed', {
    graceMs,
    remainingMs: run.remaining(),
  });
  return {
    ending: {
      type: 'error',
      error: new Error(
        `reconcile did not stop within ${graceMs} ms after its signal was aborted (the function's time budget ran out); pass ctx.signal to every long wait`,
      ),
    },
    object: {
      apiVersion: message.apiVersion,
      kind: message.kind,
      metadata: { name: message.name, ...(message.namespace ? { namespace: message.namespace } : {}), ...(message.uid ? { uid: message.uid } : {}) },
    },
    step: 'reconcile',
  };
}

/** Logs the reconcile's result; a dead letter also records a `Warning` Event on the object. */
async function reportReconcile(log: Logger, events: EventRecorder, ran: BudgetedRun, followUp: FollowUp): Promise<void> {
  const ending = ran.result.ending;
  const fields = {
    result: followUp.label,
    durationMs: ran.durationMs,
    lagMs: ran.lagMs,
    step: ran.result.step,
    ...(ending.type === 'gone' ? { gone: ending.why } : {}),
    ...(followUp.type === 'send' ? { requeueSeconds: followUp.delaySeconds, nextAttempt: followUp.message.attempt } : {}),
    ...(ending.type === 'error' ? { error: errorMessage(ending.error) } : {}),
  };
  if (followUp.type === 'deadLetter') {
    log.error(followUp.reason === 'TerminalError' ? 'reconcile failed terminally; not retrying' : 'reconcile retries exhausted; giving up', fields);
    if (ran.result.object) {
      const reason = followUp.reason === 'TerminalError' ? terminalReason(ending) : 'ReconcileFailed';
      await events.record(ran.result.object, { type: 'Warning', reason, action: 'Reconcile', note: truncateError(followUp.error) });
    }
  } else if (followUp.label === 'error' || followUp.label === 'conflict' || followUp.label === 'throttled') {
    log.warn('reconcile failed; retrying', fields);
  } else if (followUp.label === 'superseded') {
    log.info('a requeue a later one replaced: acknowledged without a reconcile', { ...fields, pendingRequeueAt: requeueMarkOf(ran.result.object) });
  } else if (followUp.label === 'paused') {
    log.info('paused (operless.dev/paused): acknowledged without a reconcile', fields);
  } else if (followUp.label === 'requeue_merged') {
    log.info('reconciled; its requeue merged into the pending one', { ...fields, pendingRequeueAt: requeueMarkOf(ran.result.object) });
  } else {
    log.info('reconciled', fields);
  }
}

/** The Event reason of a terminal failure: the error's own `reason` when it is a valid one. */
function terminalReason(ending: ReconcileEnding): string {
  const reason = ending.type === 'error' ? (ending.error as { reason?: unknown } | undefined)?.reason : undefined;
  return isEventReason(reason) ? reason : 'TerminalError';
}
