/**
 * The baseline: an always-on, in-process controller hosting an Operless `ControllerSpec` the
 * way controller-runtime hosts a `Reconciler` — what a user would run instead of Operless,
 * kept honest and tuned so the benchmarks compare delivery mechanisms, not reconcile code:
 *
 * - watches: list+watch of the primary kind and every owned kind, with the same watch stage,
 *   predicates and controller-owner mapping the forwarder uses (`startForwarder` with an
 *   in-process queue port instead of SQS, no coalescing window, no probe server) — the
 *   equivalent of `For(&Memcached{}).Owns(&Deployment{})` with a generation-changed predicate;
 * - a work queue with client-go semantics (`work-queue.ts`): de-duplicated keys, never one key
 *   on two workers, `AddAfter` for `requeueAfter`, per-key exponential backoff 5 ms → 1000 s
 *   for errors, `Forget` on success;
 * - `workers` concurrent workers, each running the runtime's own per-key logic
 *   (`reconcileKey`: GET, finalizer, reconcile, status through the same `ReconcileContext`)
 *   with the same Kubernetes client and Event recorder the functions use.
 *
 * Differences from controller-runtime, on purpose: reads go to the API server (no informer
 * cache), exactly as the functions do, so both sides issue the same requests per reconcile;
 * terminal errors are logged and recorded as a Warning Event, then forgotten (no DLQ).
 *
 * Guarantees: `stop()` stops the watches, shuts the queue down and waits for running
 * reconciles to finish.
 */
import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { decodeMessage, displayKey, followUp, newMessage, objectKey, type ReconcileMessage } from '../../src/contract/message.ts';
import type { Controller } from '../../src/core/controller/controller.ts';
import { isTerminalError } from '../../src/core/controller/errors.ts';
import type { ReconcileEnding } from '../../src/core/reconcile/followup.ts';
import { reconcileKey } from '../../src/core/reconcile/reconciler.ts';
import type { EventRecorder, KindRef, KubeObject } from '../../src/kube/types.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import type { QueuePort } from '../../src/queue/port.ts';
import { createKubeClient, type BoundKubeClient } from '../../src/kube/client.ts';
import { createEventRecorder } from '../../src/kube/events.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { errorMessage, silentLogger, type Logger } from '../../src/observability/log.ts';
import { WorkQueue } from './work-queue.ts';

export interface BaselineOptions {
  readonly kubeConfig: KubeConfig;
  readonly controller: Controller<KubeObject>;
  /** Concurrent reconciles (controller-runtime's MaxConcurrentReconciles). Default 10. */
  readonly workers?: number;
  /** Watch only these namespaces (default: all). */
  readonly namespaces?: readonly string[];
  /** Cluster id written into the keys (default `baseline`). */
  readonly clusterId?: string;
  readonly log?: Logger;
  /** Called after each reconcile, for measurements. */
  readonly onReconcile?: (report: BaselineReconcile) => void;
}

export interface BaselineReconcile {
  readonly key: string;
  readonly result: 'success' | 'requeue_after' | 'error' | 'terminal_error' | 'gone';
  readonly durationMs: number;
}

export interface BaselineStats {
  reconciles: number;
  errors: number;
  requeues: number;
  /** Watch events turned into keys (before de-duplication by the queue). */
  enqueued: number;
}

export interface BaselineController {
  /** Resolves when every watch has listed once. */
  readonly ready: Promise<void>;
  readonly stats: Readonly<BaselineStats>;
  readonly queue: WorkQueue;
  /** Queues a reconcile of one object, as a watch event would. */
  /** Queues one reconcile of `ref` (default reason `Resync`, as a periodic resync would). */
  enqueue(ref: { namespace?: string; name: string }, reason?: 'Resync' | 'Requeue'): void;
  stop(): Promise<void>;
}

/** What the work queue does with a key after one reconcile: client-go's Forget, AddAfter or AddRateLimited. */
export type WorkQueueStep =
  /** Forget the key: the object is gone, or reconciled with nothing more to do. */
  | { readonly result: 'gone' | 'success' }
  /** Forget the key's backoff, then queue it again after `delayMs` (`requeueAfter`). */
  | { readonly result: 'requeue_after'; readonly delayMs: number }
  /** Forget the key: a terminal error is logged and recorded as a Warning Event, not retried. */
  | { readonly result: 'terminal_error'; readonly error: unknown }
  /** Queue the key again with its per-key backoff. */
  | { readonly result: 'error'; readonly error: unknown };

/** The work queue's step for a reconcile outcome. Pure. */
export function workQueueStep(outcome: ReconcileEnding): WorkQueueStep {
  if (outcome.type === 'gone') return { result: 'gone' };
  if (outcome.type === 'superseded') return { result: 'success' }; // never from this runner: per-key queues only
  if (outcome.type === 'paused') return { result: 'success' }; // forgotten, as controller-runtime forgets a done key
  if (outcome.type === 'result') {
    return outcome.result.type === 'requeueAfter' ? { result: 'requeue_after', delayMs: outcome.result.seconds * 1000 } : { result: 'success' };
  }
  return isTerminalError(outcome.error) ? { result: 'terminal_error', error: outcome.error } : { result: 'error', error: outcome.error };
}

/** What the watch stage, the workers and `enqueue` share. */
interface BaselineRuntime {
  readonly options: BaselineOptions;
  readonly controller: Controller<KubeObject>;
  readonly clusterId: string;
  readonly log: Logger;
  readonly client: BoundKubeClient;
  readonly events: EventRecorder;
  readonly queue: WorkQueue;
  /** The newest message per key: what a worker reconciles when it takes the key. */
  readonly latest: Map<string, ReconcileMessage>;
  readonly stats: BaselineStats;
}

export function startBaselineController(options: BaselineOptions): BaselineController {
  const rt = baselineRuntime(options);
  const watches = startWatchStage(rt);
  const workers = Math.max(1, Math.floor(options.workers ?? 10));
  const running = Array.from({ length: workers }, () => runWorker(rt));
  const { controller, clusterId } = rt;
  return {
    ready: watches.ready,
    stats: rt.stats,
    queue: rt.queue,
    enqueue(ref, reason = 'Resync') {
      offer(
        rt,
        newMessage(
          {
            cluster: clusterId,
            apiVersion: controller.kind.apiVersion,
            kind: controller.kind.kind,
            name: ref.name,
            ...(ref.namespace ? { namespace: ref.namespace } : {}),
          },
          reason,
        ),
      );
    },
    async stop() {
      await watches.stop({ graceMs: 0 });
      rt.queue.shutDown();
      await Promise.all(running);
    },
  };
}

function baselineRuntime(options: BaselineOptions): BaselineRuntime {
  const { controller } = options;
  const log = (options.log ?? silentLogger).child({ component: 'baseline', controller: controller.name });
  const client: BoundKubeClient = createKubeClient(createTransport(options.kubeConfig), { fieldManager: controller.fieldManager });
  return {
    options,
    controller,
    clusterId: options.clusterId ?? 'baseline',
    log,
    client,
    events: createEventRecorder({ client, controller: `operless/${controller.name}`, log }),
    queue: new WorkQueue(),
    latest: new Map(),
    stats: { reconciles: 0, errors: 0, requeues: 0, enqueued: 0 },
  };
}

/** Keeps `message` as the key's newest and queues the key (de-duplicated by the queue). */
function offer(rt: BaselineRuntime, message: ReconcileMessage): void {
  const key = objectKey(message);
  rt.latest.set(key, message);
  rt.stats.enqueued += 1;
  rt.queue.add(key);
}

/** The forwarder's watch stage, delivering straight into the work queue: no SQS, no coalescing window, no probe server. */
function startWatchStage(rt: BaselineRuntime): Forwarder {
  const inProcess: QueuePort = {
    async sendBatch(entries) {
      for (const entry of entries) {
        const decoded = decodeMessage(entry.body);
        if (decoded.ok) offer(rt, decoded.message);
        else rt.log.error('the watch stage produced an invalid message; dropped', { error: decoded.error });
      }
      return { failed: [] };
    },
    async probe() {},
  };
  return startForwarder(watchStageConfig(rt.controller, rt.clusterId, rt.options.namespaces), {
    kubeConfig: rt.options.kubeConfig,
    queue: inProcess,
    serve: false,
    logger: rt.log,
  });
}

/** The watch stage's configuration: the primary and every owned kind, in the given namespaces (default all). */
function watchStageConfig(controller: Controller<KubeObject>, clusterId: string, namespaces: readonly string[] | undefined) {
  const kinds: KindRef[] = [controller.kind, ...(controller.spec.owns ?? [])];
  const ns = namespaces && namespaces.length > 0 ? { namespaces: [...namespaces] } : {};
  const watch = (k: KindRef) => ({ apiVersion: k.apiVersion, kind: k.kind, plural: k.plural, namespaced: k.namespaced, ...(k.namespaced ? ns : {}) });
  return {
    clusterId,
    queue: { url: 'http://in-process.invalid/000000000000/baseline', region: 'us-east-1' }, // never contacted: the in-process queue port
    primaries: [watch(controller.kind)],
    owned: kinds.slice(1).map(watch),
    coalesceWindowMs: 0,
    leaderElection: { enabled: false },
    resyncOnStart: true,
  };
}

/** One worker: takes keys until the queue shuts down; a key is never on two workers (the queue's guarantee). */
async function runWorker(rt: BaselineRuntime): Promise<void> {
  const { queue, log } = rt;
  for (;;) {
    const key = await queue.get();
    if (key === undefined) return;
    const message = rt.latest.get(key)!;
    const started = Date.now();
    let result: BaselineReconcile['result'] = 'success';
    try {
      result = await reconcileOnce(rt, key, message);
    } catch (err) {
      result = 'error';
      log.error('unexpected error in a worker; retrying the key with backoff', { key: displayKey(message), error: errorMessage(err) });
      queue.addRateLimited(key);
    } finally {
      queue.done(key);
    }
    rt.stats.reconciles += 1;
    rt.options.onReconcile?.({ key, result, durationMs: Date.now() - started });
  }
}

/** Reconciles one key with the runtime's own per-key logic, then applies the work queue's step. */
async function reconcileOnce(rt: BaselineRuntime, key: string, message: ReconcileMessage): Promise<BaselineReconcile['result']> {
  const reconcileId = randomUUID();
  const keyLog = rt.log.child({ key: displayKey(message), reconcileId });
  const abort = new AbortController();
  const { ending: outcome, object } = await reconcileKey(rt.controller, message, {
    client: rt.client,
    events: rt.events,
    log: keyLog,
    signal: abort.signal,
    reconcileId,
  });
  const step = workQueueStep(outcome);
  const { queue, latest, stats } = rt;
  switch (step.result) {
    case 'gone':
    case 'success':
      queue.forget(key);
      break;
    case 'requeue_after':
      queue.forget(key);
      stats.requeues += 1;
      latest.set(key, followUp(message, { reason: 'Requeue', attempt: 0 }));
      queue.addAfter(key, step.delayMs);
      break;
    case 'terminal_error':
      stats.errors += 1;
      queue.forget(key);
      keyLog.error('reconcile failed terminally; not retrying', { error: errorMessage(step.error) });
      if (object)
        await rt.events.record(object, { type: 'Warning', reason: 'TerminalError', action: 'Reconcile', note: errorMessage(step.error) }).catch(() => {});
      break;
    case 'error': {
      stats.errors += 1;
      const delayMs = queue.addRateLimited(key);
      latest.set(key, followUp(message, { reason: 'Retry', attempt: queue.numRequeues(key) }));
      keyLog.warn('reconcile failed; retrying', { error: errorMessage(step.error), delayMs });
      break;
    }
  }
  return step.result;
}
