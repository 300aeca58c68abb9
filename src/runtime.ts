/**
 * `operless/runtime`: the parts of a function's handler, for building or testing one by hand
 * (the root entry's `toSqsHandler` and `toWebhookHandler` use them with their defaults): the
 * handler's options and types, the message sender port, the metrics, the retry policy, the
 * per-key delay mover, and the admission request types. Operator authors rarely need it: a
 * controller and its test need only `operless`, `operless/kinds` and `operless/testing`.
 */
export { type HandlerOptions, type SqsBatchHandler, type AnyController } from './core/handler.ts';
export { toDelayMoverHandler, type MoverOptions } from './core/mover.ts';
export { type Webhook, type WebhookHandlerOptions, type WebhookLambdaHandler } from './core/webhook.ts';
export type { AdmissionRequest, WebhookInvocation, WebhookRoute } from './core/admission.ts';
export { diffJson, type JsonPatchOperation } from './core/json-patch.ts';
export { isTerminalError } from './core/errors.ts';
export { DEFAULT_RETRY_POLICY, MAX_DELAY_SECONDS, backoffSeconds, resolveRetryPolicy } from './core/backoff.ts';
export type { MessageSender, OutgoingMessage } from './queue/sender.ts';
export { createEmfMetrics, type Metrics } from './core/metrics.ts';
