/**
 * `operless/testing`: a real local test environment for operators — envtest for TypeScript.
 * `startControlPlane()` runs etcd + kube-apiserver (+ kube-controller-manager) from pinned,
 * locally built binaries; `startBroker()` runs ElasticMQ, an SQS-compatible broker. Both
 * clean up after themselves, even when the test process is killed. `reconcileTester()` runs one
 * reconcile of a controller against the control plane under its function's RBAC and reports the
 * result, the follow-up, the writes and the Events. `testCrd()` builds a schemaless test kind's CRD.
 * See docs/testenv.md.
 */
export { startControlPlane } from './control-plane.ts';
export { ComponentNotReadyError } from './readiness.ts';
export type { ControlPlane } from './control-plane.ts';
export type { ControlPlaneOptions } from './control-plane-setup.ts';
export type { Identity } from './identities.ts';
export type { KubectlOptions, KubectlResult } from './kubectl.ts';
export { DEFAULT_CONTROLLERS, WORKLOAD_CONTROLLERS, DEFAULT_QUEUES } from './config.ts';
export type { QueueSpec } from './config.ts';
export { provision, ProvisionError } from './provision.ts';
export type { ProvisionOptions, ProvisionResult, ProvisionTarget, TestBinaries } from './provision.ts';
export { PortInUseError, closedPort, freePorts } from './ports.ts';
export { startBroker } from './broker.ts';
export type { Broker, BrokerOptions } from './broker.ts';
export { waitUntil, type WaitOptions } from './wait.ts';
export { testCrd } from './test-crd.ts';
export type { TestCrd, TestCrdOptions, TestCrdSchema, TestCrdVersion } from './test-crd.ts';
export { reconcileTester } from './reconcile.ts';
export type { RecordedWrite } from '../kube/recording-transport.ts';
export type {
  ReconcileFollowUp,
  ReconcileRequest,
  ReconcileRun,
  ReconcileRunResult,
  ReconcileTester,
  ReconcileTesterOptions,
  TimerRequest,
  TimerRun,
  TimerRunResult,
} from './reconcile.ts';
