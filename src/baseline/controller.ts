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
import { decodeMessage, displayKey, followUp, newMessage, objectKey, type ReconcileMessage } from '../contract/message.ts';
import type { Controller } from '../core/controller.ts';
import { isTerminalError } from '../core/errors.ts';
import { reconcileKey } from '../core/reconciler.ts';
import type { KindRef, KubeObject } from '../kube/types.ts';
import { startForwarder, type Forwarder } from '../forwarder/forwarder.ts';
import type { QueuePort } from '../queue/port.ts';
import { createKubeClient, type BoundKubeClient } from '../kube/client.ts';
import { createEventRecorder } from '../kube/events.ts';
import { createTransport } from '../kube/transport.ts';
import { errorMessage, silentLogger, type Logger } from '../observability/log.ts';
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

export function startBaselineController(options: BaselineOptions): BaselineController {
  const { controller } = options;
  const workers = Math.max(1, Math.floor(options.workers ?? 10));
  const clusterId = options.clusterId ?? 'baseline';
  const log = (options.log ?? silentLogger).child({ component: 'baseline', controller: controller.name });
  const client: BoundKubeClient = createKubeClient(createTransport(options.kubeConfig), { fieldManager: controller.fieldManager });
  const events = createEventRecorder({ client, controller: `operless/${controller.name}`, log });
  const queue = new WorkQueue();
  const latest = new Map<string, ReconcileMessage>();
  const stats: BaselineStats = { reconciles: 0, errors: 0, requeues: 0, enqueued: 0 };

  const offer = (message: ReconcileMessage) => {
    const key = objectKey(message);
    latest.set(key, message);
    stats.enqueued += 1;
    queue.add(key);
  };

  // The watch stage, delivering straight into the work queue.
  const inProcess: QueuePort = {
    async sendBatch(entries) {
      for (const entry of entries) {
        const decoded = decodeMessage(entry.body);
        if (decoded.ok) offer(decoded.message);
        else log.error('the watch stage produced an invalid message; dropped', { error: decoded.error });
      }
      return { failed: [] };
    },
    async probe() {},
  };
  const kinds: KindRef[] = [controller.kind, ...(controller.spec.owns ?? [])];
  const ns = options.namespaces && options.namespaces.length > 0 ? { namespaces: [...options.namespaces] } : {};
  const watch = (k: KindRef) => ({ apiVersion: k.apiVersion, kind: k.kind, plural: k.plural, namespaced: k.namespaced, ...(k.namespaced ? ns : {}) });
  const watches: Forwarder = startForwarder(
    {
      clusterId,
      queue: { url: 'http://in-process.invalid/000000000000/baseline', region: 'us-east-1' }, // never contacted: the queue port below
      primaries: [watch(kinds[0]!)],
      owned: kinds.slice(1).map(watch),
      coalesceWindowMs: 0,
      leaderElection: { enabled: false },
      resyncOnStart: true,
    },
    { kubeConfig: options.kubeConfig, queue: inProcess, serve: false, logger: log },
  );

  async function work(): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      const message = latest.get(key)!;
      const started = Date.now();
      let result: BaselineReconcile['result'] = 'success';
      try {
        result = await reconcileOnce(key, message);
      } catch (err) {
        result = 'error';
        log.error('unexpected error in a worker; retrying the key with backoff', { key: displayKey(message), error: errorMessage(err) });
        queue.addRateLimited(key);
      } finally {
        queue.done(key);
      }
      stats.reconciles += 1;
      options.onReconcile?.({ key, result, durationMs: Date.now() - started });
    }
  }

  async function reconcileOnce(key: string, message: ReconcileMessage): Promise<BaselineReconcile['result']> {
    const reconcileId = randomUUID();
    const keyLog = log.child({ key: displayKey(message), reconcileId });
    const abort = new AbortController();
    const { outcome, object } = await reconcileKey(controller, message, { client, events, log: keyLog, signal: abort.signal, reconcileId });
    if (outcome.type === 'gone') {
      queue.forget(key);
      return 'gone';
    }
    if (outcome.type === 'result') {
      queue.forget(key);
      if (outcome.result.type === 'requeueAfter') {
        stats.requeues += 1;
        latest.set(key, followUp(message, { reason: 'Requeue', attempt: 0 }));
        queue.addAfter(key, outcome.result.seconds * 1000);
        return 'requeue_after';
      }
      return 'success';
    }
    stats.errors += 1;
    if (isTerminalError(outcome.error)) {
      queue.forget(key);
      keyLog.error('reconcile failed terminally; not retrying', { error: errorMessage(outcome.error) });
      if (object) await events.record(object, { type: 'Warning', reason: 'TerminalError', action: 'Reconcile', note: errorMessage(outcome.error) }).catch(() => {});
      return 'terminal_error';
    }
    const delayMs = queue.addRateLimited(key);
    latest.set(key, followUp(message, { reason: 'Retry', attempt: queue.numRequeues(key) }));
    keyLog.warn('reconcile failed; retrying', { error: errorMessage(outcome.error), delayMs });
    return 'error';
  }

  const running = Array.from({ length: workers }, () => work());
  const ready = watches.ready;

  return {
    ready,
    stats,
    queue,
    enqueue(ref, reason = 'Resync') {
      offer(newMessage({ cluster: clusterId, apiVersion: controller.kind.apiVersion, kind: controller.kind.kind, name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) }, reason));
    },
    async stop() {
      await watches.stop({ graceMs: 0 });
      queue.shutDown();
      await Promise.all(running);
    },
  };
}
