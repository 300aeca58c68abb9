/**
 * The Kubernetes object model Operless works with: the common shape of every object
 * (`KubeObject`, `ObjectMeta`, `OwnerReference`), `metav1.Condition`, how a kind is addressed
 * over REST (`KindRef`), and the two ports a reconcile talks to the API server through —
 * `KubeClient` (one request per operation) and `EventRecorder`.
 *
 * Types only: the implementations are client.ts and events.ts. Everything above this folder
 * (the runtime, the forwarder, the CRD DSL, the CLI) names Kubernetes objects with these.
 */
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
export interface KindRef<T extends KubeObject = KubeObject> {
  readonly apiVersion: string;
  readonly kind: string;
  /** Lower-case plural used in REST paths, e.g. `memcacheds`. */
  readonly plural: string;
  readonly namespaced: boolean;
  /**
   * The type of this kind's objects, for the type checker only (never set at run time): a
   * `KindRef<Deployment>` (kinds.ts) makes `client.get` return a `Deployment` and
   * `ctx.applyOwned` check the child against the Deployment model.
   */
  readonly objectType?: T;
}

/**
 * A kind whose objects are `T`: a typed `KindRef<T>`, or an untyped `KindRef` with `T` named
 * by the caller (`client.get<Memcached>(MEMCACHED, …)`).
 */
export type KindFor<T extends KubeObject> = KindRef<T> | KindRef;

export type EventType = 'Normal' | 'Warning';

/** Records `events.k8s.io/v1` Events on an object; identical repeats are aggregated. */
export interface EventRecorder {
  record(regarding: KubeObject, event: { type: EventType; reason: string; action: string; note: string }): Promise<void>;
}

/**
 * The Kubernetes operations a reconcile needs, addressed by kind. Every method maps to one
 * API request; nothing is cached, so a reconcile always sees the live state.
 */
export interface KubeClient {
  get<T extends KubeObject = KubeObject>(kind: KindFor<T>, name: string, namespace?: string): Promise<T | undefined>;
  list<T extends KubeObject = KubeObject>(
    kind: KindFor<T>,
    options?: { namespace?: string; labelSelector?: string; limit?: number; continue?: string },
  ): Promise<{ items: T[]; continue?: string; resourceVersion: string }>;
  /** Server-side apply (application/apply-patch+yaml) with the client's field manager. */
  apply<T extends KubeObject = KubeObject>(kind: KindFor<T>, object: KubeObject, options?: { force?: boolean }): Promise<T>;
  /** Server-side apply of the status subresource. */
  applyStatus<T extends KubeObject = KubeObject>(kind: KindFor<T>, object: KubeObject): Promise<T>;
  /** JSON merge patch (used for finalizers, guarded by resourceVersion when given). */
  mergePatch<T extends KubeObject = KubeObject>(kind: KindFor<T>, name: string, namespace: string | undefined, patch: object): Promise<T>;
  delete(kind: KindRef, name: string, namespace?: string): Promise<void>;
  create<T extends KubeObject = KubeObject>(kind: KindFor<T>, object: KubeObject): Promise<T>;
}
