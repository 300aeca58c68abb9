/**
 * `operless/crd`: define a custom resource in TypeScript — the schema DSL (`schema.ts`) gives
 * the resource's TypeScript type and its OpenAPI validation from one definition,
 * `defineResource` (`resource.ts`) the names, scope, subresources and printer columns — and
 * render its CustomResourceDefinition YAML (`generate.ts`).
 */
export * from './schema.ts';
export * from './resource.ts';
export {
  generateCrd,
  renderCrd,
  writeCrds,
  staleCrds,
  crdFileName,
  crdPaths,
  DEFAULT_GENERATOR,
  type AnyResource,
  type GeneratedResource,
  type CrdConversionWebhook,
  type CrdVersionOptions,
} from './generate.ts';
export {
  generateWebhookConfigurations,
  DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
  DEFAULT_FAILURE_POLICY,
  type AdmissionWebhookOptions,
  type FailurePolicy,
  type WebhookConfigurationOptions,
  type WebhookResource,
} from './webhooks.ts';
