/**
 * Operless: Kubernetes operators as serverless functions. The public API for operator
 * authors — define a controller, serve it from an SQS-triggered Lambda function:
 *
 * ```ts
 * import { defineController, toSqsHandler, done, requeueAfter } from 'operless';
 * export const handler = toSqsHandler(defineController({ apiVersion, kind, plural, namespaced, reconcile }));
 * ```
 *
 * Kubernetes helpers are also under `operless/kube`, the message contract under
 * `operless/contract`, the test environment under `operless/testing`, the scheduled resync
 * function under `operless/resync` (its own entry: it loads the SQS client eagerly, which
 * reconcile functions, importing only this one, load on first use).
 */
export { defineController, type Controller } from './core/controller.ts';
export { toSqsHandler, type HandlerOptions, type SqsBatchHandler, type AnyController } from './core/handler.ts';
export { toDelayMoverHandler, type MoverOptions } from './core/mover.ts';
export {
  defineWebhook, toWebhookHandler,
  type Webhook, type WebhookSpec, type AdmissionContext, type Validation, type SpokeConversion, type WebhookHandlerOptions, type WebhookLambdaHandler, type WebhookResult,
} from './core/webhook.ts';
export type { AdmissionRequest, WebhookInvocation, WebhookRoute } from './core/admission.ts';
export { diffJson, type JsonPatchOperation } from './core/json-patch.ts';
export { done, requeueAfter, type ReconcileResult } from './core/result.ts';
export { TerminalError, isTerminalError } from './core/errors.ts';
export { DEFAULT_RETRY_POLICY, MAX_DELAY_SECONDS, backoffSeconds, resolveRetryPolicy } from './core/backoff.ts';
export type { ReconcileContext, RetryPolicy, ControllerSpec, RelatedWatch } from './core/types.ts';
export type { RelatedMapping } from './contract/related.ts';
export type { KubeObject, ObjectMeta, OwnerReference, Condition, KindRef, EventType, EventRecorder, KubeClient } from './kube/types.ts';
export {
  KubeApiError, isKubeApiError, isNotFound, isConflict,
  setCondition, findCondition, isConditionTrue, removeCondition,
  hasFinalizer, ensureFinalizer, removeFinalizer,
  controllerReference, withControllerReference,
  createClientFactory, createKubeClient, createTransport,
} from './kube/index.ts';
export type { MessageSender, OutgoingMessage } from './queue/sender.ts';
export { createLogger, type Logger } from './observability/log.ts';
export { createEmfMetrics, type Metrics } from './core/metrics.ts';
export * from './contract/index.ts';
