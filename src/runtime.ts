/**
 * `operless/runtime`: the parts of a function's handler, for building or testing one by hand
 * (the root entry's `toSqsHandler` and `toWebhookHandler` use them with their defaults): the
 * handler's options and types, the message sender port, the metrics, the retry policy, the
 * per-key delay mover, and the admission request types. Operator authors rarely need it: a
 * controller and its test need only `operless`, `operless/kinds` and `operless/testing`.
 */
export { type HandlerOptions, type SqsBatchHandler, type AnyController } from './core/handler/handler.ts';
export { toDelayMoverHandler, type MoverOptions } from './core/per-key/mover.ts';
export { type Webhook, type WebhookHandlerOptions, type WebhookLambdaHandler } from './core/webhook/webhook.ts';
export type { AdmissionOperation, AdmissionRequest, AdmissionUser, WebhookInvocation, WebhookRoute } from './core/webhook/admission.ts';
export { diffJson, type JsonPatchOperation } from './core/webhook/json-patch.ts';
export { isTerminalError } from './core/controller/errors.ts';
export { DEFAULT_RETRY_POLICY, MAX_DELAY_SECONDS, backoffSeconds, resolveRetryPolicy } from './core/controller/retry-policy.ts';
export type { MessageSender, OutgoingMessage } from './queue/sender.ts';
export type { VisibilityChange } from './queue/port.ts';
export { createEmfMetrics, type Metrics, type MetricsOptions, type ReconcileSample } from './core/reconcile/metrics.ts';
export type { OutcomeLabel } from './core/reconcile/followup.ts';
export type { Tracing } from './observability/otel-start.ts';
export type { LogFields, LogFormat, LoggerOptions, LogLevel } from './observability/log.ts';
export type { TimerSpec } from './core/controller/types.ts';
export type { RateLimit, ResolvedRateLimit } from './core/controller/rate-limit.ts';
