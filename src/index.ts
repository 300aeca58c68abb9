/**
 * Operless: Kubernetes operators as serverless functions. The root entry is what an operator
 * author writes a controller and its webhooks with — nothing else:
 *
 * ```ts
 * import { defineController, toSqsHandler, done, requeueAfter } from 'operless';
 * import { DEPLOYMENTS } from 'operless/kinds';
 * export const handler = toSqsHandler(defineController({ apiVersion, kind, plural, namespaced, owns: [DEPLOYMENTS], reconcile }));
 * ```
 *
 * The rest sits behind named entries: `operless/kinds` (the built-in kinds, typed),
 * `operless/kube` (the Kubernetes client and helpers), `operless/testing` (a real control plane,
 * `reconcileTester`), `operless/crd` (schemas and CRDs), `operless/contract` (the message
 * contract), `operless/runtime` (a handler's options and parts, for building one by hand),
 * `operless/resync` (the scheduled resync function), `operless/local` (local stand-ins for
 * SQS and Lambda). Each entry's names are recorded in docs/reference/api.md, which `npm test`
 * checks, so the surface changes only on purpose.
 */
export { defineController, type Controller } from './core/controller/controller.ts';
export { toSqsHandler } from './core/handler/handler.ts';
export { done, requeueAfter, type ReconcileResult } from './core/controller/result.ts';
export { TerminalError } from './core/controller/errors.ts';
export type { ControllerSpec, ReconcileContext, RelatedWatch, RetryPolicy } from './core/controller/types.ts';
export type { RelatedMapping } from './contract/related.ts';
export {
  defineWebhook,
  toWebhookHandler,
  type WebhookSpec,
  type AdmissionContext,
  type Validation,
  type SpokeConversion,
  type WebhookResult,
} from './core/webhook/webhook.ts';
export type { Condition, EventRecorder, KindRef, KubeClient, KubeObject, ObjectMeta } from './kube/types.ts';
export { setCondition, findCondition, isConditionTrue } from './kube/conditions.ts';
export { applyOwnedIfChanged } from './kube/owned.ts';
export { isConflict, isNotFound } from './kube/errors.ts';
export { createLogger, type Logger } from './observability/log.ts';
