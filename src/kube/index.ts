/**
 * `operless/kube`: Kubernetes access and the helpers a reconcile uses — a small REST client
 * over `node:https` with `KubeConfig` (or EKS) auth, the per-cluster client factory (kubeconfig, SSM, EKS,
 * in-cluster), conditions, finalizers, owned children, status, Events; raw-path requests and
 * watches, Leases — and the object model they are written in (types.ts).
 */
export type { KubeObject, ObjectMeta, OwnerReference, Condition, KindRef, KindFor, EventType, EventRecorder, KubeClient } from './types.ts';
export { createKubeClient, APPLY_PATCH, MERGE_PATCH, type BoundKubeClient, type ClientOptions } from './client.ts';
export {
  createTransport,
  type KubeTransport,
  type KubeRequest,
  type KubeResponse,
  type TransportOptions,
  type EndpointAuth,
  type EndpointCredentials,
  type WatchEvent,
  type WatchEventType,
  type WatchRequest,
  type WatchHandle,
  type ListRequest,
} from './transport.ts';
export { kubeConfigAuth, loadKubeConfig } from './kubeconfig.ts';
export { KubeApiError, isKubeApiError, isNotFound, isConflict, parseKubeError, parseRetryAfter } from './errors.ts';
export { resourcePath, collectionPath, groupVersionPrefix, apiGroup, type CollectionCoordinates, type PathOptions } from './paths.ts';
export { createKubeApi, kubeApiOf, type KubeApi, type RequestOptions, type WatchOptions } from './api.ts';
export { leaseClient, leasePath, type Lease, type LeaseSpec, type LeaseClient, type LeaseRequestOptions } from './lease.ts';
export {
  createClientFactory,
  sourceFromEnv,
  loadSsmParameter,
  KubeAccessError,
  UnknownClusterError,
  type ClientFactory,
  type ClientSource,
  type FactoryOptions,
  type EnvironmentVariables,
} from './factory.ts';
export {
  eksToken,
  eksAccess,
  eksEndpoint,
  describeCluster,
  cachedToken,
  TOKEN_PREFIX,
  type AwsCredentials,
  type ClusterInfo,
  type DescribeClusterOptions,
  type TokenSource,
} from './eks.ts';
export { setCondition, findCondition, isConditionTrue, removeCondition, kubeTime, type ConditionInput } from './conditions.ts';
export { hasFinalizer, ensureFinalizer, removeFinalizer, finalizersPatch } from './finalizers.ts';
export {
  controllerReference,
  withControllerReference,
  applyOwned,
  applyOwnedIfChanged,
  type ChildFence,
  applyReason,
  appliedHash,
  withAppliedHash,
  isSubsetOf,
  APPLIED_HASH_ANNOTATION,
  OWNER_GENERATION_ANNOTATION,
} from './owned.ts';
export type { ApplyReason } from './owned.ts';
export { updateStatus, desiredStatus, jsonEqual } from './status.ts';
export { createEventRecorder, buildEvent, eventName, microTime, type RecorderOptions } from './events.ts';
