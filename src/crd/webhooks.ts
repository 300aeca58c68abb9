/**
 * The admission webhook configurations of a resource: a `MutatingWebhookConfiguration`
 * (defaulting) and a `ValidatingWebhookConfiguration` (validation), generated like its CRD.
 *
 * Guarantees (the defaults are documented in docs/architecture.md, "Webhooks are functions
 * behind the forwarder"): `admissionReviewVersions: [v1]`, `sideEffects: None`,
 * `matchPolicy: Equivalent` with the rules naming only the hub (storage) version, so a write
 * through any served version is converted and seen by the handlers in the hub's shape;
 * CREATE and UPDATE only; `failurePolicy` `Fail` and `timeoutSeconds` 10 unless given (1–30
 * checked here); a namespace selector that keeps `kube-system` and the operator's own
 * namespace out, so a broken webhook can never lock out the components that would repair it;
 * with `namespaces` (namespace-scoped mode) only those namespaces are intercepted.
 *
 * `matchConditions` (`WEBHOOK_MATCH_CONDITIONS`, evaluated by the API server, GA since
 * Kubernetes 1.30) keep two kinds of write away from the function, so that an outage of the
 * function, the forwarder or the network path never blocks them:
 * - `not-being-deleted`: `!has(object.metadata.deletionTimestamp)` — an object being deleted
 *   is only updated to remove finalizers (the function itself allowed these unconditionally);
 * - `create-or-spec-change`: a CREATE, or an UPDATE whose `spec` differs from `oldObject`'s —
 *   finalizer adds, labels, annotations (the per-key mark `operless.dev/requeue-at`), owner
 *   references: every metadata-only UPDATE skips both webhooks. The status subresource is not
 *   in the rules at all; a kind without a status subresource writes status through the main
 *   resource, with the spec unchanged, so that write skips them too. An object without a
 *   `spec` (on either side) is always sent. The conditions see the object in the hub version
 *   (after `matchPolicy: Equivalent` converts it), so a write through a spoke still needs the
 *   conversion webhook, and the hub version never does.
 * What a validation handler therefore sees: every CREATE, every UPDATE that changes the spec.
 * A rule on labels or annotations alone is not enforced on a metadata-only UPDATE (docs/architecture.md).
 */
import type { ResourceDefinition } from './resource.ts';

/** What the configurations need of a resource: its hub version's REST coordinates. */
export type WebhookResource = Pick<ResourceDefinition<unknown, unknown>, 'crdName' | 'group' | 'version' | 'plural' | 'scope'>;

export type FailurePolicy = 'Fail' | 'Ignore';

export interface AdmissionWebhookOptions {
  /** Default `Fail`: a write waits for its function; when the function cannot answer, the write is refused. */
  readonly failurePolicy?: FailurePolicy;
  /** Default 10 (the API server's maximum is 30). */
  readonly timeoutSeconds?: number;
}

export interface WebhookConfigurationOptions {
  /** The hub (storage) version of the resource. */
  readonly resource: WebhookResource;
  /** Where the operator (forwarder) runs: excluded, with kube-system. */
  readonly operatorNamespace: string;
  /** Namespace-scoped mode: the namespaces the kind is watched in, the only ones intercepted (default: all). */
  readonly namespaces?: readonly string[];
  /** The client config of one route: `{ url, caBundle }` or `{ service: {…, path}, caBundle }`. */
  readonly clientConfig: (route: 'default' | 'validate') => Record<string, unknown>;
  readonly default?: AdmissionWebhookOptions;
  readonly validate?: AdmissionWebhookOptions;
}

export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10;

/** The API server's conditions for calling a webhook at all (see the header); the chart renders the same. */
export const WEBHOOK_MATCH_CONDITIONS: readonly { readonly name: string; readonly expression: string }[] = Object.freeze([
  { name: 'not-being-deleted', expression: '!has(object.metadata.deletionTimestamp)' },
  { name: 'create-or-spec-change', expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec" },
]);
export const DEFAULT_FAILURE_POLICY: FailurePolicy = 'Fail';

/** The configurations (mutating first) for the routes given in `options`. */
export function generateWebhookConfigurations(options: WebhookConfigurationOptions): Record<string, unknown>[] {
  const def = options.resource;
  const out: Record<string, unknown>[] = [];
  for (const [route, kind] of [
    ['default', 'MutatingWebhookConfiguration'],
    ['validate', 'ValidatingWebhookConfiguration'],
  ] as const) {
    const settings = options[route];
    if (!settings) continue;
    const timeoutSeconds = settings.timeoutSeconds ?? DEFAULT_WEBHOOK_TIMEOUT_SECONDS;
    if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 30) {
      throw new Error(`webhook ${route} of ${def.crdName}: timeoutSeconds must be a whole number from 1 to 30, got ${timeoutSeconds}`);
    }
    const failurePolicy = settings.failurePolicy ?? DEFAULT_FAILURE_POLICY;
    if (failurePolicy !== 'Fail' && failurePolicy !== 'Ignore') throw new Error(`webhook ${route} of ${def.crdName}: failurePolicy must be Fail or Ignore`);
    const webhook: Record<string, unknown> = {
      name: `${route}.${def.crdName}`,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      matchPolicy: 'Equivalent',
      failurePolicy,
      timeoutSeconds,
      clientConfig: options.clientConfig(route),
      rules: [
        {
          apiGroups: [def.group],
          apiVersions: [def.version],
          resources: [def.plural],
          operations: ['CREATE', 'UPDATE'],
          scope: def.scope === 'Namespaced' ? 'Namespaced' : 'Cluster',
        },
      ],
      matchConditions: WEBHOOK_MATCH_CONDITIONS.map((c) => ({ ...c })),
      namespaceSelector: {
        matchExpressions: [
          { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...new Set(['kube-system', options.operatorNamespace])] },
          ...(options.namespaces?.length ? [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [...new Set(options.namespaces)] }] : []),
        ],
      },
    };
    if (route === 'default') webhook.reinvocationPolicy = 'IfNeeded';
    out.push({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name: `${def.crdName}-${route}`, labels: { 'app.kubernetes.io/managed-by': 'operless' } },
      webhooks: [webhook],
    });
  }
  return out;
}
