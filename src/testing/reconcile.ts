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
 *   (core/followup.ts): nothing, a `Requeue`/`Retry` with its delay, or a dead letter with its
 *   reason. Nothing is sent.
 * - `object` is the primary as it is after the reconcile (read again), or undefined when gone.
 */
import { newMessage, type Reason } from '../contract/message.ts';
import { defineController, type Controller } from '../core/controller.ts';
import { decideFollowUp } from '../core/followup.ts';
import { reconcileKey } from '../core/reconciler.ts';
import type { ControllerSpec } from '../core/types.ts';
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
}

export interface ReconcileTester {
  reconcile<T extends KubeObject>(controller: ControllerSpec<T> | Controller<T>, request: ReconcileRequest): Promise<ReconcileRun<T>>;
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
  return {
    async reconcile<T extends KubeObject>(given: ControllerSpec<T> | Controller<T>, request: ReconcileRequest): Promise<ReconcileRun<T>> {
      const controller = isController(given) ? given : defineController(given);
      const writes: RecordedWrite[] = [];
      const transport = recordingTransport(base.transport, { dryRun: false, record: (w) => { if (!w.path.startsWith(EVENTS_PATH)) writes.push(w); } });
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
      const kind = controller.kind;
      const message = {
        ...newMessage({ cluster, apiVersion: kind.apiVersion, kind: kind.kind, name: request.name, ...(request.namespace ? { namespace: request.namespace } : {}) }, request.reason ?? 'Added'),
        attempt: request.attempt ?? 0,
      };
      const log = createLogger({ level: 'debug', write: (line) => logs.push(line), fields: { key: `${kind.kind}/${request.namespace ? `${request.namespace}/` : ''}${request.name}`, reconcileId } });
      const ran = await reconcileKey(controller as unknown as Controller<KubeObject>, message, { client, events, log, reconcileId, signal: new AbortController().signal });
      const followUp = decideFollowUp({ message, outcome: ran.outcome, policy: controller.retry, now: Date.now() });
      const object = await base.get<T>(kind, request.name, request.namespace);
      return { result: resultOf(ran.outcome), followUp: followUpOf(followUp), writes, events: recorded, object, logs };
    },
  };
}

function resultOf(outcome: Awaited<ReturnType<typeof reconcileKey>>['outcome']): ReconcileRunResult {
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
  return { type: 'send', reason: followUp.message.reason === 'Requeue' ? 'Requeue' : 'Retry', attempt: followUp.message.attempt, delaySeconds: followUp.delaySeconds };
}
