/**
 * The built-in Kubernetes kinds, typed: each `KindRef<T>` names how a kind is addressed over
 * REST and carries the type of its objects, so what a controller writes and reads is checked
 * against the Kubernetes model — `ctx.applyOwned(DEPLOYMENTS, { …, spec: { template: … } })`
 * does not compile with a misspelt field, and `client.get(DEPLOYMENTS, …)` returns a
 * `Deployment`. (Go authors get `appsv1.Deployment`, Pepr authors `a.Deployment`.)
 *
 * The models are `kubernetes-types` (generated from the Kubernetes OpenAPI spec): interfaces
 * only, JSON-shaped (times and quantities are strings, as on the wire), with the literal
 * `apiVersion`/`kind`. They are imported as types: nothing of them
 * reaches a bundle. `@kubernetes/client-node`'s models were weighed and not taken: they are
 * classes whose times are `Date`, which the JSON this client reads never holds.
 *
 * Guarantees: every entry's `apiVersion`, `kind`, REST `plural` and scope are Kubernetes' own
 * (a unit test checks each against the API server's discovery); one catalogue serves the
 * runtime, the scaffold (`--owns`, `--watches`) and the examples.
 */
import type * as admissionregistrationV1 from 'kubernetes-types/admissionregistration/v1.js';
import type * as apiextensionsV1 from 'kubernetes-types/apiextensions/v1.js';
import type * as appsV1 from 'kubernetes-types/apps/v1.js';
import type * as autoscalingV2 from 'kubernetes-types/autoscaling/v2.js';
import type * as batchV1 from 'kubernetes-types/batch/v1.js';
import type * as coordinationV1 from 'kubernetes-types/coordination/v1.js';
import type * as coreV1 from 'kubernetes-types/core/v1.js';
import type * as eventsV1 from 'kubernetes-types/events/v1.js';
import type * as networkingV1 from 'kubernetes-types/networking/v1.js';
import type * as policyV1 from 'kubernetes-types/policy/v1.js';
import type * as rbacV1 from 'kubernetes-types/rbac/v1.js';
import type { KindRef, ObjectMeta } from './types.ts';

/**
 * An object of a built-in kind as Operless reads and writes it: the model's own fields, with
 * `apiVersion` and `kind` required and `metadata` as the rest of Operless names it (`name`
 * required). A type alias, so it is a `KubeObject` wherever one is expected.
 */
export type Builtin<M extends { apiVersion?: string; kind?: string }> = Omit<M, 'apiVersion' | 'kind' | 'metadata'> & {
  apiVersion: NonNullable<M['apiVersion']>;
  kind: NonNullable<M['kind']>;
  metadata: ObjectMeta;
};

/** The parts of a pod an operator most often builds, as the model names them. */
export type { Container, EnvVar, PodSpec, PodTemplateSpec, ResourceRequirements, ServicePort, Volume, VolumeMount } from 'kubernetes-types/core/v1.js';

export type ConfigMap = Builtin<coreV1.ConfigMap>;
export type Secret = Builtin<coreV1.Secret>;
export type Service = Builtin<coreV1.Service>;
export type ServiceAccount = Builtin<coreV1.ServiceAccount>;
export type PersistentVolumeClaim = Builtin<coreV1.PersistentVolumeClaim>;
export type Pod = Builtin<coreV1.Pod>;
export type ResourceQuota = Builtin<coreV1.ResourceQuota>;
export type LimitRange = Builtin<coreV1.LimitRange>;
export type Namespace = Builtin<coreV1.Namespace>;
export type Deployment = Builtin<appsV1.Deployment>;
export type StatefulSet = Builtin<appsV1.StatefulSet>;
export type DaemonSet = Builtin<appsV1.DaemonSet>;
export type ReplicaSet = Builtin<appsV1.ReplicaSet>;
export type Job = Builtin<batchV1.Job>;
export type CronJob = Builtin<batchV1.CronJob>;
export type Ingress = Builtin<networkingV1.Ingress>;
export type NetworkPolicy = Builtin<networkingV1.NetworkPolicy>;
export type PodDisruptionBudget = Builtin<policyV1.PodDisruptionBudget>;
export type HorizontalPodAutoscaler = Builtin<autoscalingV2.HorizontalPodAutoscaler>;
export type Role = Builtin<rbacV1.Role>;
export type RoleBinding = Builtin<rbacV1.RoleBinding>;
export type ClusterRole = Builtin<rbacV1.ClusterRole>;
export type ClusterRoleBinding = Builtin<rbacV1.ClusterRoleBinding>;
export type Lease = Builtin<coordinationV1.Lease>;
export type Event = Builtin<eventsV1.Event>;
export type CustomResourceDefinition = Builtin<apiextensionsV1.CustomResourceDefinition>;
export type ValidatingWebhookConfiguration = Builtin<admissionregistrationV1.ValidatingWebhookConfiguration>;
export type MutatingWebhookConfiguration = Builtin<admissionregistrationV1.MutatingWebhookConfiguration>;

function kind<T extends Builtin<{ apiVersion?: string; kind?: string }>>(
  apiVersion: T['apiVersion'],
  name: T['kind'],
  plural: string,
  namespaced: boolean,
): KindRef<T> {
  return Object.freeze({ apiVersion, kind: name, plural, namespaced });
}

export const CONFIGMAPS = /* @__PURE__ */ kind<ConfigMap>('v1', 'ConfigMap', 'configmaps', true);
export const SECRETS = /* @__PURE__ */ kind<Secret>('v1', 'Secret', 'secrets', true);
export const SERVICES = /* @__PURE__ */ kind<Service>('v1', 'Service', 'services', true);
export const SERVICEACCOUNTS = /* @__PURE__ */ kind<ServiceAccount>('v1', 'ServiceAccount', 'serviceaccounts', true);
export const PERSISTENTVOLUMECLAIMS = /* @__PURE__ */ kind<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true);
export const PODS = /* @__PURE__ */ kind<Pod>('v1', 'Pod', 'pods', true);
export const RESOURCEQUOTAS = /* @__PURE__ */ kind<ResourceQuota>('v1', 'ResourceQuota', 'resourcequotas', true);
export const LIMITRANGES = /* @__PURE__ */ kind<LimitRange>('v1', 'LimitRange', 'limitranges', true);
export const NAMESPACES = /* @__PURE__ */ kind<Namespace>('v1', 'Namespace', 'namespaces', false);
export const DEPLOYMENTS = /* @__PURE__ */ kind<Deployment>('apps/v1', 'Deployment', 'deployments', true);
export const STATEFULSETS = /* @__PURE__ */ kind<StatefulSet>('apps/v1', 'StatefulSet', 'statefulsets', true);
export const DAEMONSETS = /* @__PURE__ */ kind<DaemonSet>('apps/v1', 'DaemonSet', 'daemonsets', true);
export const REPLICASETS = /* @__PURE__ */ kind<ReplicaSet>('apps/v1', 'ReplicaSet', 'replicasets', true);
export const JOBS = /* @__PURE__ */ kind<Job>('batch/v1', 'Job', 'jobs', true);
export const CRONJOBS = /* @__PURE__ */ kind<CronJob>('batch/v1', 'CronJob', 'cronjobs', true);
export const INGRESSES = /* @__PURE__ */ kind<Ingress>('networking.k8s.io/v1', 'Ingress', 'ingresses', true);
export const NETWORKPOLICIES = /* @__PURE__ */ kind<NetworkPolicy>('networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies', true);
export const PODDISRUPTIONBUDGETS = /* @__PURE__ */ kind<PodDisruptionBudget>('policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true);
export const HORIZONTALPODAUTOSCALERS = /* @__PURE__ */ kind<HorizontalPodAutoscaler>(
  'autoscaling/v2',
  'HorizontalPodAutoscaler',
  'horizontalpodautoscalers',
  true,
);
export const ROLES = /* @__PURE__ */ kind<Role>('rbac.authorization.k8s.io/v1', 'Role', 'roles', true);
export const ROLEBINDINGS = /* @__PURE__ */ kind<RoleBinding>('rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings', true);
export const CLUSTERROLES = /* @__PURE__ */ kind<ClusterRole>('rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', false);
export const CLUSTERROLEBINDINGS = /* @__PURE__ */ kind<ClusterRoleBinding>('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'clusterrolebindings', false);
export const LEASES = /* @__PURE__ */ kind<Lease>('coordination.k8s.io/v1', 'Lease', 'leases', true);
export const EVENTS = /* @__PURE__ */ kind<Event>('events.k8s.io/v1', 'Event', 'events', true);
export const CUSTOMRESOURCEDEFINITIONS = /* @__PURE__ */ kind<CustomResourceDefinition>(
  'apiextensions.k8s.io/v1',
  'CustomResourceDefinition',
  'customresourcedefinitions',
  false,
);
export const VALIDATINGWEBHOOKCONFIGURATIONS = /* @__PURE__ */ kind<ValidatingWebhookConfiguration>(
  'admissionregistration.k8s.io/v1',
  'ValidatingWebhookConfiguration',
  'validatingwebhookconfigurations',
  false,
);
export const MUTATINGWEBHOOKCONFIGURATIONS = /* @__PURE__ */ kind<MutatingWebhookConfiguration>(
  'admissionregistration.k8s.io/v1',
  'MutatingWebhookConfiguration',
  'mutatingwebhookconfigurations',
  false,
);

/**
 * The kinds a scaffolded controller may own or watch (`operless create api --owns/--watches`),
 * in the order its errors list them: the workload, configuration, networking, policy and RBAC
 * kinds an operator creates.
 */
export const OWNABLE_KINDS: readonly KindRef[] = [
  CONFIGMAPS,
  SECRETS,
  SERVICES,
  SERVICEACCOUNTS,
  PERSISTENTVOLUMECLAIMS,
  PODS,
  RESOURCEQUOTAS,
  LIMITRANGES,
  NAMESPACES,
  DEPLOYMENTS,
  STATEFULSETS,
  DAEMONSETS,
  JOBS,
  CRONJOBS,
  INGRESSES,
  NETWORKPOLICIES,
  PODDISRUPTIONBUDGETS,
  HORIZONTALPODAUTOSCALERS,
  ROLES,
  ROLEBINDINGS,
  CLUSTERROLES,
  CLUSTERROLEBINDINGS,
];
