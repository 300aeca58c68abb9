/**
 * `operless/kube`: Kubernetes access and the helpers a reconcile uses — a small REST client
 * over `node:https` with `KubeConfig` (or EKS) auth, the per-cluster client factory (kubeconfig, SSM, EKS,
 * in-cluster), conditions, finalizers, owned children, status, Events; raw-path requests and
 * watches, Leases — and the object model they are written in (types.ts).
 */
export type { KubeObject, ObjectMeta, OwnerReference, Condition, KindRef, EventType, EventRecorder, KubeClient } from './types.ts';
export { createKubeClient, APPLY_PATCH, MERGE_PATCH, type BoundKubeClient, type ClientOptions } from './client.ts';
export { createTransport, type KubeTransport, type KubeRequest, type KubeResponse, type TransportOptions, type EndpointAuth, type EndpointCredentials,
  type WatchEvent, type WatchEventType, type WatchRequest, type WatchHandle } from './transport.ts';
export { kubeConfigAuth, loadKubeConfig } from './kubeconfig.ts';
export { KubeApiError, isKubeApiError, isNotFound, isConflict, parseKubeError, parseRetryAfter } from './errors.ts';
export { resourcePath, collectionPath, groupVersionPrefix, apiGroup, type CollectionCoordinates } from './paths.ts';
export { createKubeApi, kubeApiOf, type KubeApi, type RequestOptions } from './api.ts';
export { leaseClient, leasePath, type Lease, type LeaseSpec, type LeaseClient, type LeaseRequestOptions } from './lease.ts';
export {
  createClientFactory, sourceFromEnv, loadSsmParameter, KubeAccessError, UnknownClusterError,
  type ClientFactory, type ClientSource, type FactoryOptions,
} from './factory.ts';
export { eksToken, eksAccess, eksEndpoint, describeCluster, cachedToken, TOKEN_PREFIX } from './eks.ts';
export { setCondition, findCondition, isConditionTrue, removeCondition, kubeTime, type ConditionInput } from './conditions.ts';
export { hasFinalizer, ensureFinalizer, removeFinalizer, finalizersPatch } from './finalizers.ts';
export { controllerReference, withControllerReference, applyOwned, applyOwnedIfChanged, type ChildFence, applyReason, appliedHash, withAppliedHash, isSubsetOf, APPLIED_HASH_ANNOTATION, OWNER_GENERATION_ANNOTATION } from './owned.ts';
export type { ApplyReason } from './owned.ts';
export { updateStatus, desiredStatus, jsonEqual } from './status.ts';
export { createEventRecorder, buildEvent, eventName, microTime, type RecorderOptions } from './events.ts';
