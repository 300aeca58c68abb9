/**
 * The public shapes of the reconcile runtime: what an operator author writes against.
 *
 * A controller is defined once with `defineController(spec)` (controller.ts) and served by
 * `toSqsHandler(controller)` (handler.ts). The runtime calls `reconcile(object, ctx)` with the
 * *live* object read from the API server for the key named by a queue message.
 */
import type { Logger } from '../observability/log.ts';
import type { ReconcileMessage } from '../contract/message.ts';
import type { ReconcileResult } from './result.ts';

/** The common part of every Kubernetes object. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  [field: string]: unknown;
}

/** `metav1.Condition`. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** Which kind a controller reconciles, and how to address it over REST. */
export interface KindRef {
  readonly apiVersion: string;
  readonly kind: string;
  /** Lower-case plural used in REST paths, e.g. `memcacheds`. */
  readonly plural: string;
  readonly namespaced: boolean;
}

export type EventType = 'Normal' | 'Warning';

/** Records `events.k8s.io/v1` Events on an object; identical repeats are aggregated. */
export interface EventRecorder {
  record(
    regarding: KubeObject,
    event: { type: EventType; reason: string; action: string; note: string },
  ): Promise<void>;
}

/**
 * The Kubernetes operations a reconcile needs, addressed by kind. Every method maps to one
 * API request; nothing is cached, so a reconcile always sees the live state.
 */
export interface KubeClient {
  get<T extends KubeObject = KubeObject>(kind: KindRef, name: string, namespace?: string): Promise<T | undefined>;
  list<T extends KubeObject = KubeObject>(
    kind: KindRef,
    options?: { namespace?: string; labelSelector?: string; limit?: number; continue?: string },
  ): Promise<{ items: T[]; continue?: string; resourceVersion: string }>;
  /** Server-side apply (application/apply-patch+yaml) with the client's field manager. */
  apply<T extends KubeObject = KubeObject>(kind: KindRef, object: KubeObject, options?: { force?: boolean }): Promise<T>;
  /** Server-side apply of the status subresource. */
  applyStatus<T extends KubeObject = KubeObject>(kind: KindRef, object: KubeObject): Promise<T>;
  /** JSON merge patch (used for finalizers, guarded by resourceVersion when given). */
  mergePatch<T extends KubeObject = KubeObject>(kind: KindRef, name: string, namespace: string | undefined, patch: object): Promise<T>;
  delete(kind: KindRef, name: string, namespace?: string): Promise<void>;
  create<T extends KubeObject = KubeObject>(kind: KindRef, object: KubeObject): Promise<T>;
}

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
  /** Server-side applies a child with a controller owner reference to the primary. */
  applyOwned<C extends KubeObject>(kind: KindRef, child: C): Promise<C>;
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
  /** Finalizer name (default `<group>/finalizer`). */
  readonly finalizer?: string;
  /** Field manager for server-side apply (default `operless-<kind lower-case>`). */
  readonly fieldManager?: string;
  readonly retry?: Partial<RetryPolicy>;
}
