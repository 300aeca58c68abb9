/**
 * One reconcile in a test, against the real control plane: what controller-runtime users do
 * with envtest and `r.Reconcile(ctx, reconcile.Request{…})`, and what a generated project's test
 * needs instead of hand-building a Lambda handler, an SQS event and a sender.
 *
 *   const tester = await reconcileTester(cp, { user: 'site-function', groups: ['my-op:site'] });
 *   const run = await tester.reconcile(siteController, { namespace: 'default', name: 'site-sample' });
 *   assert.deepEqual(run.result, { type: 'done' });
 *
 * Guarantees:
 * - It runs the runtime's own reconcile (`reconcileKey`: the live read, the uid check, the
 *   finalizer, the pause), under the identity given (`user`/`groups`: a client certificate from
 *   the test CA, bound by whatever RBAC the test applied — the function's own), so a missing
 *   permission fails here as it would in Lambda. No identity: the control plane's admin.
 * - Writes are real (nothing is dry-run) and each is reported in order with the server's
 *   answer or refusal (`writes`); Events are recorded on the cluster as the function records
 *   them and reported (`events`); the reconcile's log lines are kept (`logs`).
 * - `followUp` is what the runtime would send next, decided by its own rule
 *   (core/reconcile/followup.ts): nothing, a `Requeue`/`Retry` with its delay, or a dead letter with its
 *   reason. Nothing is sent.
 * - `object` is the primary as it is after the reconcile (read again), or undefined when gone.
 * - `timersToStart` names the declared timers (`timers`) whose chain this reconcile would start
 *   (core/controller/timer.ts `timersToStart`: no live chain marked on the object); nothing is sent.
 * - `fireTimer` runs one tick of a declared timer for an object now — the pending tick of its
 *   chain when the object has one (its mark), else a chain's first — through the runtime's own
 *   tick handling (core/controls/timer-tick.ts `handleTick`: the live read, a paused or deleted object
 *   ending the chain, the run with the reconcile's context, `TimerFailed` on a throw) and reports
 *   the next tick it would send (`nextTick`) without sending it; the next tick's mark is written
 *   on the object, as the runtime writes it once the tick was sent.
 */
import { newMessage, type Reason } from '../contract/message.ts';
import { defineController, type Controller } from '../core/controller/controller.ts';
import { decideFollowUp } from '../core/reconcile/followup.ts';
import { noMetrics } from '../core/reconcile/metrics.ts';
import { reconcileKey } from '../core/reconcile/reconciler.ts';
import { handleTick } from '../core/controls/timer-tick.ts';
import { credibleTimerMark, tickMessage, timersToStart } from '../core/controller/timer.ts';
import { MAX_WAIT_SECONDS } from '../contract/message.ts';
import type { ControllerSpec } from '../core/controller/types.ts';
import { createKubeClient } from '../kube/client.ts';
import { createEventRecorder } from '../kube/events.ts';
import { createClientFactory } from '../kube/factory.ts';
import { recordingTransport, type RecordedWrite } from '../kube/recording-transport.ts';
import type { EventRecorder, KubeObject } from '../kube/types.ts';
import { createLogger } from '../observability/log.ts';
import type { ControlPlane } from './control-plane.ts';

export interface ReconcileRequest {
  readonly namespace?: string;
  readonly name: string;
  /** The message's reason (default `Added`). */
  readonly reason?: Reason;
  /** Failed runs before this one (default 0): decides when a failure is dead-lettered. */
  readonly attempt?: number;
}

/** The reconcile's own outcome. */
export type ReconcileRunResult =
  | { readonly type: 'done' }
  | { readonly type: 'requeueAfter'; readonly seconds: number }
  | { readonly type: 'error'; readonly message: string }
  | { readonly type: 'gone' }
  | { readonly type: 'paused' }
  | { readonly type: 'superseded' };

/** What the runtime would send after it. */
export type ReconcileFollowUp =
  | { readonly type: 'none' }
  | { readonly type: 'send'; readonly reason: 'Requeue' | 'Retry'; readonly attempt: number; readonly delaySeconds: number }
  | { readonly type: 'deadLetter'; readonly reason: string; readonly error: string };

export interface ReconcileRun<T extends KubeObject> {
  readonly result: ReconcileRunResult;
  readonly followUp: ReconcileFollowUp;
  /** Every write but Events, in order, with the server's answer or refusal. */
  readonly writes: readonly RecordedWrite[];
  readonly events: readonly { readonly type: string; readonly reason: string; readonly note: string }[];
  /** The primary after the reconcile, read again; undefined when it is gone. */
  readonly object: T | undefined;
  /** The reconcile's JSON log lines. */
  readonly logs: readonly string[];
  /** The declared timers whose chain this reconcile would start (none alive on the object); nothing is sent. */
  readonly timersToStart: readonly string[];
}

/** One tick of a declared timer for an object. */
export interface TimerRequest {
  readonly namespace?: string;
  readonly name: string;
  /** The timer's `name` in the controller's `timers`. */
  readonly timer: string;
}

/**
 * How a tick ended: the timer ran (`ran`) or threw (`failed`, its message), the chain ended
 * (`stopped`: the object is gone, being deleted or paused, or the timer is not declared; `why`),
 * or a later chain's tick is pending on the object (`superseded`).
 */
export type TimerRunResult =
  | { readonly type: 'ran' }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'stopped'; readonly why: string }
  | { readonly type: 'superseded' };

export interface TimerRun<T extends KubeObject> {
  readonly result: TimerRunResult;
  /** The next tick the runtime would send (not sent), due `delaySeconds` from now at `dueAt` (epoch ms); undefined when the chain ends. */
  readonly nextTick: { readonly delaySeconds: number; readonly dueAt: number } | undefined;
  /** Every write but Events, in order (the run's own, then the next tick's mark). */
  readonly writes: readonly RecordedWrite[];
  readonly events: readonly { readonly type: string; readonly reason: string; readonly note: string }[];
  /** The object after the tick, read again; undefined when it is gone. */
  readonly object: T | undefined;
  readonly logs: readonly string[];
}

export interface ReconcileTester {
  reconcile<T extends KubeObject>(controller: ControllerSpec<T> | Controller<T>, request: ReconcileRequest): Promise<ReconcileRun<T>>;
  /** Fires one tick of a declared timer for an object, now (a timer runs without an event in production: this is how a test makes it run). */
  fireTimer<T extends KubeObject>(controller: ControllerSpec<T> | Controller<T>, request: TimerRequest): Promise<TimerRun<T>>;
}

export interface ReconcileTesterOptions {
  /** The identity to reconcile as (a client certificate from the test CA); default the admin. */
  readonly user?: string;
  readonly groups?: readonly string[];
  /** The cluster id the messages carry (default `test`). */
  readonly cluster?: string;
}

const EVENTS_PATH = '/apis/events.k8s.io/';

function isController<T extends KubeObject>(c: ControllerSpec<T> | Controller<T>): c is Controller<T> {
  return 'spec' in c && typeof (c as Controller<T>).handles === 'function';
}

export async function reconcileTester(cp: ControlPlane, options: ReconcileTesterOptions = {}): Promise<ReconcileTester> {
  const kubeconfigPath = options.user ? (await cp.identity(options.user, options.groups ?? [])).kubeconfigPath : cp.kubeconfigPath;
  const base = await createClientFactory({ sources: { test: { type: 'file', path: kubeconfigPath } }, env: {} })('test');
  const cluster = options.cluster ?? 'test';
  /** A recording client, event recorder and logger for one run of `controller` on one object. */
  const session = (controller: Controller<KubeObject>, request: { namespace?: string; name: string }) => {
    const writes: RecordedWrite[] = [];
    const transport = recordingTransport(base.transport, {
      dryRun: false,
      record: (w) => {
        if (!w.path.startsWith(EVENTS_PATH)) writes.push(w);
      },
    });
    const client = createKubeClient(transport, { fieldManager: controller.fieldManager });
    const recorded: { type: string; reason: string; note: string }[] = [];
    const recorder = createEventRecorder({ client, controller: controller.fieldManager, instance: 'test' });
    const events: EventRecorder = {
      async record(regarding, event) {
        recorded.push({ type: event.type, reason: event.reason, note: event.note });
        await recorder.record(regarding, event);
      },
    };
    const logs: string[] = [];
    const reconcileId = `test-${crypto.randomUUID()}`;
    const log = createLogger({
      level: 'debug',
      write: (line) => logs.push(line),
      fields: { key: `${controller.kind.kind}/${request.namespace ? `${request.namespace}/` : ''}${request.name}`, reconcileId },
    });
    return { writes, client, events, recorded, logs, reconcileId, log };
  };
  const controllerOf = <T extends KubeObject>(given: ControllerSpec<T> | Controller<T>) =>
    (isController(given) ? given : defineController(given)) as unknown as Controller<KubeObject>;
  return {
    async reconcile<T extends KubeObject>(given: ControllerSpec<T> | Controller<T>, request: ReconcileRequest): Promise<ReconcileRun<T>> {
      const controller = controllerOf(given);
      const { writes, client, events, recorded, logs, reconcileId, log } = session(controller, request);
      const kind = controller.kind;
      const message = {
        ...newMessage(
          { cluster, apiVersion: kind.apiVersion, kind: kind.kind, name: request.name, ...(request.namespace ? { namespace: request.namespace } : {}) },
          request.reason ?? 'Added',
        ),
        attempt: request.attempt ?? 0,
      };
      const ran = await reconcileKey(controller, message, { client, events, log, reconcileId, signal: new AbortController().signal });
      const followUp = decideFollowUp({ message, ending: ran.ending, policy: controller.retry, now: Date.now() });
      const object = await base.get<T>(kind, request.name, request.namespace);
      const starts = object && ran.ending.type !== 'paused' && ran.ending.type !== 'gone' ? timersToStart(controller.timers, object, Date.now()) : [];
      return { result: resultOf(ran.ending), followUp: followUpOf(followUp), writes, events: recorded, object, logs, timersToStart: starts };
    },

    async fireTimer<T extends KubeObject>(given: ControllerSpec<T> | Controller<T>, request: TimerRequest): Promise<TimerRun<T>> {
      const controller = controllerOf(given);
      const { writes, client, events, recorded, logs, reconcileId, log } = session(controller, request);
      const kind = controller.kind;
      // The object's pending tick, arriving now: due at its mark when a chain is alive (so it runs
      // rather than being superseded by that chain), else now (a chain's first tick).
      const now = Date.now();
      const declared = controller.timers.find((t) => t.name === request.timer);
      const current = declared ? await base.get(kind, request.name, request.namespace) : undefined;
      const due = (declared && current ? credibleTimerMark(current, declared, now) : undefined) ?? now;
      const tick = {
        ...tickMessage(
          { cluster, apiVersion: kind.apiVersion, kind: kind.kind, ...(request.namespace ? { namespace: request.namespace } : {}), name: request.name },
          request.timer,
          due,
        ),
        timer: request.timer,
      };
      let label = '';
      const metrics = {
        ...noMetrics,
        timerTick: (_controller: string, _timer: string, outcome: string) => {
          label = outcome;
        },
      };
      const decision = await handleTick(
        { metrics, now: Date.now, remaining: () => Number.POSITIVE_INFINITY, reserveMs: 0, maxDelaySeconds: MAX_WAIT_SECONDS },
        controller,
        tick,
        { client, events, log, reconcileId },
      );
      const followUp = decision.followUp;
      if (followUp.type === 'send') await decision.markSent?.();
      const object = await base.get<T>(kind, request.name, request.namespace);
      const nextTick =
        followUp.type === 'send' ? { delaySeconds: followUp.delaySeconds, dueAt: followUp.message.notBefore ?? followUp.message.observedAt } : undefined;
      return { result: timerResultOf(label, logs), nextTick, writes, events: recorded, object, logs };
    },
  };
}

/** The tick's end, from its outcome label and its log: the chain's end and a failure carry their reason. */
function timerResultOf(label: string, logs: readonly string[]): TimerRunResult {
  const last = (pattern: RegExp) => logs.map((line) => JSON.parse(line) as { msg?: string; error?: unknown }).findLast((l) => pattern.test(l.msg ?? ''));
  if (label === 'superseded') return { type: 'superseded' };
  if (label === 'timer_stopped') return { type: 'stopped', why: (last(/^timer chain ends: /)?.msg ?? '').replace(/^timer chain ends: /, '') };
  if (label === 'success') return { type: 'ran' };
  const failed = last(/^timer failed|^could not read the object/);
  return { type: 'failed', message: String(failed?.error ?? failed?.msg ?? 'the timer failed') };
}

function resultOf(outcome: Awaited<ReturnType<typeof reconcileKey>>['ending']): ReconcileRunResult {
  switch (outcome.type) {
    case 'result':
      return outcome.result.type === 'requeueAfter' ? { type: 'requeueAfter', seconds: outcome.result.seconds } : { type: 'done' };
    case 'error':
      return { type: 'error', message: outcome.error instanceof Error ? outcome.error.message : String(outcome.error) };
    default:
      return { type: outcome.type };
  }
}

function followUpOf(followUp: ReturnType<typeof decideFollowUp>): ReconcileFollowUp {
  if (followUp.type === 'none') return { type: 'none' };
  if (followUp.type === 'deadLetter') return { type: 'deadLetter', reason: followUp.reason, error: followUp.error };
  return {
    type: 'send',
    reason: followUp.message.reason === 'Requeue' ? 'Requeue' : 'Retry',
    attempt: followUp.message.attempt,
    delaySeconds: followUp.delaySeconds,
  };
}
