/**
 * The public shapes of the reconcile runtime: what an operator author writes against — the
 * controller spec, the context of one reconcile, the retry policy. The Kubernetes object
 * model they are written in terms of (`KubeObject`, `KindRef`, `KubeClient`, …) is
 * src/kube/types.ts.
 *
 * A controller is defined once with `defineController(spec)` (controller.ts) and served by
 * `toSqsHandler(controller)` (handler/handler.ts). The runtime calls `reconcile(object, ctx)` with the
 * *live* object read from the API server for the key named by a queue message.
 */
import type { Logger } from '../../observability/log.ts';
import type { ReconcileMessage } from '../../contract/message.ts';
import type { RelatedMapping } from '../../contract/related.ts';
import type { ReconcileResult } from './result.ts';
import type { ResyncPeriod } from '../resync/resync-period.ts';
import type { RateLimit } from './rate-limit.ts';
import type { EventRecorder, KindFor, KindRef, KubeClient, KubeObject } from '../../kube/types.ts';

export interface ReconcileContext<T extends KubeObject = KubeObject> {
  /** Unique per reconcile; on every log line. */
  readonly reconcileId: string;
  /** The message that caused this reconcile (reason, attempt, observedAt). */
  readonly message: ReconcileMessage;
  readonly log: Logger;
  readonly client: KubeClient;
  readonly events: EventRecorder;
  /** Aborted when the function's time budget for this reconcile runs out. */
  readonly signal: AbortSignal;
  /**
   * True when this reconcile is a preview (`operless preview`, `operless dlq replay`): every
   * write through `client`, `applyOwned` and `updateStatus` is a server-side dry run and Events
   * are collected, not recorded. Calls to anything outside the cluster are the author's to guard:
   * `if (!ctx.preview) await billing.charge(…)` (docs/cli.md, "operless preview").
   */
  readonly preview: boolean;
  /** Server-side applies a child with a controller owner reference to the primary. */
  applyOwned<C extends KubeObject>(kind: KindFor<C>, child: NoInfer<C>): Promise<C>;
  /**
   * Writes `status` through the status subresource, only when it differs from the live
   * status (returns false when nothing was written). Sets `observedGeneration` if absent.
   */
  updateStatus(status: Record<string, unknown>): Promise<boolean>;
  /** The primary as read at the start of this reconcile. */
  readonly object: T;
}

export interface RetryPolicy {
  /** First retry delay in seconds (default 1). */
  readonly baseSeconds: number;
  /** Upper bound of any delay in seconds (default 900, the SQS maximum). */
  readonly capSeconds: number;
  /** Attempts before the message goes to the DLQ (default 10). */
  readonly maxAttempts: number;
}

/** A related kind and how its objects name the primaries that refer to them. */
export interface RelatedWatch {
  readonly kind: KindRef;
  readonly map: RelatedMapping;
}

/** One periodic task per object of the controller's kind (core/controller/timer.ts). */
export interface TimerSpec<T extends KubeObject = KubeObject> {
  /** A DNS-1123 label, unique among the controller's timers (it names the mark and the ticks). */
  readonly name: string;
  /** Seconds from one run to the next: a whole number from 1 to 604800 (7 days). */
  readonly everySeconds: number;
  /** Runs with the live object; a throw is logged and recorded, and the next tick still comes. */
  run(object: T, ctx: ReconcileContext<T>): Promise<void>;
}

export interface ControllerSpec<T extends KubeObject = KubeObject> extends KindRef {
  /** Reconciles the live object; throw to retry, throw TerminalError to give up. */
  reconcile(object: T, ctx: ReconcileContext<T>): Promise<ReconcileResult>;
  /** Cleanup before deletion; when given, the runtime manages `finalizer` on the object. */
  finalize?(object: T, ctx: ReconcileContext<T>): Promise<ReconcileResult | void>;
  /**
   * Kinds this controller creates with a controller owner reference. Their changes are
   * mapped to the owner's key by the forwarder, like controller-runtime's `Owns()`; the
   * forwarder's watches and RBAC are derived from this list.
   */
  readonly owns?: readonly KindRef[];
  /**
   * Kinds this controller reads but does not own (a ConfigMap, a Secret), and how a change of
   * one maps to the primaries to reconcile (`map`, see contract/related.ts): the forwarder
   * watches them (get/list/watch only) and sends a `Related` message to each primary the
   * mapping names, like controller-runtime's `Watches(..., EnqueueRequestsFromMapFunc)`.
   */
  readonly watches?: readonly RelatedWatch[];
  /** Finalizer name (default `<group>/finalizer`). */
  readonly finalizer?: string;
  /** Field manager for server-side apply (default `operless-<kind lower-case>`). */
  readonly fieldManager?: string;
  readonly retry?: Partial<RetryPolicy>;
  /** How often the scheduled resync lists this kind (core/resync/resync-period.ts; default 600 s). */
  readonly resync?: ResyncPeriod;
  /**
   * Periodic tasks per object, run with no event (core/controller/timer.ts): `{ name, everySeconds, run }`,
   * like Kopf's `@kopf.timer`. Objects of a controller without timers cost nothing.
   */
  readonly timers?: readonly TimerSpec<T>[];
  /**
   * At most `perSecond` reconciles of this kind start per second across every invocation
   * (core/controller/rate-limit.ts); the excess waits in the queue, not counted as a failure.
   */
  readonly rateLimit?: RateLimit;
}
