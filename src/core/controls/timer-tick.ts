/**
 * Handling a tick of a per-object timer (controller/timer.ts): a key group whose messages name a timer
 * runs that timer, never the reconcile, and ends in one follow-up — the next tick — and the
 * timer's mark on the object once the queue accepted it.
 *
 * 1. The controller no longer declares the timer: the chain ends (logged).
 * 2. GET the object. Gone (404, another uid), being deleted, or paused: the chain ends (logged,
 *    counted `timer_stopped`); a paused object's mark is removed, so the reconcile after the
 *    resume starts the chain at once. The GET fails: the next tick is sent all the same (the chain is
 *    never lost to an API hiccup), unmarked.
 * 3. A tick due before the object's mark: a later chain replaced it (`superseded`, logged).
 * 4. `run(object, ctx)` with the reconcile's context (ctx.signal aborted at half the reserve;
 *    one that ignores it is abandoned at a quarter, as a reconcile is). A throw is logged, counted
 *    and recorded as a `Warning` Event `TimerFailed`; the next tick is its retry.
 * 5. The next tick, due one period after this one, is the follow-up; once sent, it is marked
 *    (merge patch guarded by the uid and the resourceVersion last known). A mark that cannot be
 *    written leaves the tick standing unmarked: it is due after the old mark, so it runs.
 *
 * Never throws: every path ends in a follow-up (send or none).
 *
 * `startTimerChains` is the other end: after a reconcile, it starts the chains the object lacks.
 */
import type { ReconcileMessage } from '../../contract/message.ts';
import { timerMarkAnnotation } from '../../contract/timer-mark.ts';
import { isPaused } from '../../contract/pause.ts';
import { errorMessage, type Logger } from '../../observability/log.ts';
import type { BoundKubeClient } from '../../kube/client.ts';
import type { EventRecorder, KubeObject } from '../../kube/types.ts';
import { abandonAfterMs, reconcileAllowanceMs } from '../invocation/budget.ts';
import type { Controller } from '../controller/controller.ts';
import { sendFollowUp, type DeliveryTarget } from '../reconcile/delivery.ts';
import type { FollowUp, OutcomeLabel } from '../reconcile/followup.ts';
import type { Metrics } from '../reconcile/metrics.ts';
import { createContext, type ReconcileAttempt } from '../reconcile/reconciler.ts';
import { scheduleUntil } from '../invocation/schedule.ts';
import { nextTickDue, tickDue, tickMessage, tickStep, timersToStart } from '../controller/timer.ts';
import type { TimerSpec } from '../controller/types.ts';

/** What handling a tick needs from its invocation. */
export interface TickRun {
  readonly metrics: Metrics;
  readonly now: () => number;
  readonly remaining: () => number;
  readonly reserveMs: number;
  readonly maxDelaySeconds: number;
}

export interface TickEnv {
  readonly client: BoundKubeClient;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly reconcileId: string;
}

/** The tick's follow-up, and the mark to write once it was sent. */
export interface TickDecision {
  readonly followUp: FollowUp;
  readonly markSent?: () => Promise<void>;
}

/** Handles the tick `tick` (a due group's message naming a timer) of `controller`. */
export async function handleTick(
  run: TickRun,
  controller: Controller<KubeObject>,
  tick: ReconcileMessage & { timer: string },
  env: TickEnv,
): Promise<TickDecision> {
  const log = env.log.child({ timer: tick.timer });
  const counted = (label: OutcomeLabel, followUp: FollowUp, markSent?: () => Promise<void>): TickDecision => {
    run.metrics.timerTick?.(controller.name, tick.timer, label);
    return markSent ? { followUp, markSent } : { followUp };
  };
  const stopped = (why: string): TickDecision => {
    log.info(`timer chain ends: ${why}`);
    return counted('timer_stopped', { type: 'none', label: 'timer_stopped' });
  };
  const timer = controller.timers.find((t) => t.name === tick.timer);
  if (!timer) return stopped(`${controller.kind.kind} declares no timer named "${tick.timer}"`);
  const due = tickDue(tick);
  const client = env.client.with({ fieldManager: controller.fieldManager });
  let object: KubeObject | undefined;
  try {
    object = await client.get(controller.kind, tick.name, tick.namespace);
  } catch (err) {
    log.warn('could not read the object for its timer; sending the next tick unmarked', { error: errorMessage(err) });
    return counted('error', nextTick(run, tick, nextTickDue(due, timer.everySeconds, run.now()), 'error'));
  }
  if (!object) return stopped('the object is gone');
  if (tick.uid && object.metadata.uid && object.metadata.uid !== tick.uid)
    return stopped('the object was recreated (another uid); the new one starts its own chain');
  if (object.metadata.deletionTimestamp) return stopped('the object is being deleted');
  if (isPaused(object)) {
    // Without its mark, the reconcile that follows the resume starts the chain at once.
    await writeMark(client, controller, object, timer.name, null).catch((err: unknown) =>
      log.warn('could not remove the timer mark of a paused object; its chain restarts a minute after the mark once resumed', { error: errorMessage(err) }),
    );
    return stopped('the object is paused (operless.dev/paused); the reconcile after the pause starts the timer again');
  }
  const step = tickStep(due, object, timer.name, timer.everySeconds, run.now());
  if (step.type === 'superseded') {
    log.info('a tick a later one replaced: acknowledged without running the timer', { due, pendingTickAt: step.mark });
    return counted('superseded', { type: 'none', label: 'superseded' });
  }
  const ran = await runWithinBudget(run, controller, timer, object, tick, env, log);
  const label: OutcomeLabel = ran.error === undefined ? 'success' : 'error';
  if (ran.error !== undefined) {
    log.error('timer failed; it runs again at its next tick', { error: errorMessage(ran.error), nextTickAt: step.next });
    await env.events.record(ran.object, {
      type: 'Warning',
      reason: 'TimerFailed',
      action: 'Timer',
      note: `timer ${timer.name}: ${errorMessage(ran.error)}`.slice(0, 1024),
    });
  } else {
    log.info('timer ran', { nextTickAt: step.next });
  }
  const marked = ran.object;
  return counted(label, nextTick(run, tick, step.next, label), () => writeMark(client, controller, marked, timer.name, String(step.next)));
}

function nextTick(run: TickRun, tick: ReconcileMessage & { timer: string }, next: number, label: OutcomeLabel): FollowUp {
  return { type: 'send', label, message: tickMessage(tick, tick.timer, next), delaySeconds: scheduleUntil(next, run.now(), run.maxDelaySeconds).delaySeconds };
}

/** Writes the timer's mark (the next tick's due time; null removes it), guarded by uid and the resourceVersion last known. */
async function writeMark(client: BoundKubeClient, controller: Controller<KubeObject>, object: KubeObject, name: string, due: string | null): Promise<void> {
  const { uid, resourceVersion } = object.metadata;
  const guard = { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) };
  await client.mergePatch(controller.kind, object.metadata.name, object.metadata.namespace, {
    metadata: { ...guard, annotations: { [timerMarkAnnotation(name)]: due } },
  });
}

/** Runs the timer with the reconcile's budget rules; the object as the run's own status writes left it. */
async function runWithinBudget(
  run: TickRun,
  controller: Controller<KubeObject>,
  timer: TimerSpec,
  object: KubeObject,
  tick: ReconcileMessage,
  env: TickEnv,
  log: Logger,
): Promise<{ error?: unknown; object: KubeObject }> {
  const abort = new AbortController();
  const timers: ReturnType<typeof setTimeout>[] = [];
  const allowance = reconcileAllowanceMs(run.remaining(), run.reserveMs);
  if (Number.isFinite(allowance))
    timers.push(setTimeout(() => abort.abort(new Error(`timer stopped: the function's time budget ran out after ${Math.round(allowance)} ms`)), allowance));
  const client = env.client.with({ fieldManager: controller.fieldManager, signal: abort.signal });
  const ctx = createContext(controller, object, tick, client, { client, events: env.events, log, signal: abort.signal, reconcileId: env.reconcileId });
  try {
    const running = timer.run(object, ctx).then(
      () => ({ object: ctx.object }),
      (error: unknown) => ({ error: error ?? new Error('timer rejected without a reason'), object: ctx.object }),
    );
    const abandonIn = abandonAfterMs(run.remaining(), run.reserveMs);
    if (!Number.isFinite(abandonIn)) return await running;
    const abandoned = new Promise<{ error: unknown; object: KubeObject }>((resolve) => {
      timers.push(
        setTimeout(
          () =>
            resolve({
              error: new Error("timer did not stop after its signal was aborted (the function's time budget ran out); pass ctx.signal to every long wait"),
              object: ctx.object,
            }),
          abandonIn,
        ),
      );
    });
    return await Promise.race([running, abandoned]);
  } catch (error) {
    return { error, object: ctx.object };
  } finally {
    for (const t of timers) clearTimeout(t);
  }
}

/**
 * After a reconcile of a live object (not paused, not being deleted): sends a tick due now for
 * each of the controller's timers without a live chain (controller/timer.ts `timersToStart`). Best
 * effort and never throws: a tick that could not be sent is logged, and the object's next
 * reconcile tries again.
 */
export async function startTimerChains(
  target: DeliveryTarget,
  controller: Controller<KubeObject>,
  cluster: string,
  result: ReconcileAttempt,
  log: Logger,
): Promise<void> {
  const object = result.object;
  const read = result.ending.type === 'result' || (result.ending.type === 'error' && result.step !== 'get' && result.step !== 'skip');
  if (controller.timers.length === 0 || !read || !object?.metadata.resourceVersion || isPaused(object)) return;
  const now = target.now();
  for (const name of timersToStart(controller.timers, object, now)) {
    const ref = {
      cluster,
      apiVersion: object.apiVersion ?? controller.kind.apiVersion,
      kind: controller.kind.kind,
      namespace: object.metadata.namespace,
      name: object.metadata.name,
      uid: object.metadata.uid,
    };
    try {
      await sendFollowUp(target, tickMessage(ref, name, now), 0);
      log.info('timer chain started', { timer: name });
    } catch (err) {
      log.warn('could not start the timer chain; the next reconcile of the object tries again', { timer: name, error: errorMessage(err) });
    }
  }
}
