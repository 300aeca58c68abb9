/**
 * Webhooks in the local loop (`npm start`): the project's webhook functions (serverless.yml
 * functions without an SQS event whose module builds a `toWebhookHandler`, project.ts) served the way the
 * cluster reaches them in production — the API server calls the forwarder's HTTPS endpoint,
 * which invokes the function through the AWS SDK's Lambda client — with two local stand-ins: a
 * test CA (its serving certificate for 127.0.0.1 in `.operless/webhook-tls/`) and the local
 * Lambda Invoke API (src/local/lambda-invoke-server.ts) running the function modules in process.
 *
 * Registration: per webhook, the configurations `generateWebhookConfigurations` makes (the
 * chart renders the same; documented defaults) with the forwarder's URL and the test CA as
 * `caBundle`, and for a conversion webhook the project's CRD with every version served and its
 * conversion stanza. Guarantees: a webhook whose kind has no CRD file fails start-up naming the
 * kind; `unregister()` deletes the configurations and re-applies the CRD files as they are (a
 * cluster reached with --context is left as it was found). `startWebhookFunctions` serves
 * them only with the loop's own control plane unless asked (a cluster reached with --context
 * usually cannot call back into this machine), and registers the Invoke API in `started`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Webhook } from '../core/webhook/webhook.ts';
import { generateWebhookConfigurations, type WebhookResource } from '../crd/webhooks.ts';
import type { BoundKubeClient } from '../kube/client.ts';
import { CUSTOMRESOURCEDEFINITIONS, MUTATINGWEBHOOKCONFIGURATIONS, VALIDATINGWEBHOOKCONFIGURATIONS } from '../kube/kinds.ts';
import type { KindRef, KubeObject } from '../kube/types.ts';
import { startLambdaInvokeServer, type InvokeHandler, type LambdaInvokeServer } from '../local/lambda-invoke-server.ts';
import type { WebhooksConfig } from '../forwarder/config/config.ts';
import type { FunctionEntry, ProjectLayout } from './project.ts';
import type { Stoppable } from './started-parts.ts';

export interface WebhookFunction {
  readonly entry: FunctionEntry;
  /** The path alias on the forwarder's endpoint: the function name as a DNS label. */
  readonly alias: string;
  readonly handler: InvokeHandler;
  readonly webhooks: readonly Webhook<KubeObject>[];
}

/** The alias of a function on the webhook endpoint (a lower-case DNS label). Pure. */
export function webhookAlias(functionName: string): string {
  return (
    functionName
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 63) || 'webhooks'
  );
}

/** Imports a webhook function module; it must export its handler and `webhooks` (what the handler serves). */
export async function importWebhookFunction(root: string, entry: FunctionEntry): Promise<WebhookFunction> {
  const mod = (await import(resolve(root, entry.module))) as Record<string, unknown>;
  const handler = mod[entry.exportName];
  if (typeof handler !== 'function')
    throw new Error(`${entry.module} does not export a function named "${entry.exportName}" (serverless.yml handler of "${entry.name}")`);
  const webhooks = mod.webhooks;
  if (!Array.isArray(webhooks) || webhooks.length === 0 || webhooks.some((w) => !Array.isArray((w as Webhook)?.routes))) {
    throw new Error(`${entry.module} must also export \`webhooks\` (the defineWebhook(...) values its handler serves) so the local loop can register them`);
  }
  return { entry, alias: webhookAlias(entry.name), handler: handler as InvokeHandler, webhooks: webhooks as Webhook<KubeObject>[] };
}

export interface DevWebhookTls {
  readonly certFile: string;
  readonly keyFile: string;
  /** Base64 PEM of the test CA: the configurations' caBundle. */
  readonly caBundle: string;
  readonly caFile: string;
}

/** A test CA and a serving certificate for 127.0.0.1, written under `dir`. */
export async function writeTestTls(dir: string): Promise<DevWebhookTls> {
  const { createCertificateAuthority, issueCertificate } = await import('../testing/x509.ts');
  const ca = await createCertificateAuthority('operless-dev-webhook-ca');
  const serving = await issueCertificate(ca, { commonName: 'operless-dev-webhooks', hosts: ['127.0.0.1'], usage: 'server' });
  mkdirSync(dir, { recursive: true });
  const file = (name: string, text: string, mode = 0o644) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode });
    return path;
  };
  return {
    caFile: file('ca.crt', ca.certPem),
    certFile: file('tls.crt', serving.certPem),
    keyFile: file('tls.key', serving.keyPem, 0o600),
    caBundle: Buffer.from(ca.certPem).toString('base64'),
  };
}

/** The local Lambda Invoke API serving the webhook functions by their serverless.yml names. */
export function startWebhookInvokeApi(functions: readonly WebhookFunction[], timeoutSeconds: number): Promise<LambdaInvokeServer> {
  return startLambdaInvokeServer({ functions: Object.fromEntries(functions.map((f) => [f.entry.name, f.handler])), timeoutMs: timeoutSeconds * 1000 });
}

const CRD = CUSTOMRESOURCEDEFINITIONS;
const CONFIGURATION_KINDS: Record<string, KindRef> = Object.fromEntries(
  [MUTATINGWEBHOOKCONFIGURATIONS, VALIDATINGWEBHOOKCONFIGURATIONS].map((k) => [k.kind, k]),
);

interface CrdDocument extends KubeObject {
  spec: {
    group: string;
    names: { kind: string; plural: string };
    scope: 'Namespaced' | 'Cluster';
    versions: { name: string; served: boolean; storage: boolean }[];
    conversion?: unknown;
  };
}

/** The CRD (from the project's files) of a webhook's kind. */
function crdOf(crdFiles: readonly string[], webhook: Webhook<KubeObject>): CrdDocument {
  const group = webhook.spec.apiVersion.split('/')[0];
  for (const file of crdFiles) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const crd = doc.toJS() as CrdDocument | null;
      if (crd?.kind === 'CustomResourceDefinition' && crd.spec?.group === group && crd.spec.names?.kind === webhook.spec.kind) return crd;
    }
  }
  throw new Error(`the webhook of ${webhook.spec.kind} (${webhook.spec.apiVersion}) has no CRD in infra/crds/: run \`operless crd\``);
}

/** The objects that make the API server call the loop's webhooks: configurations, and CRDs with a conversion stanza. Pure. */
export function webhookObjects(
  functions: readonly WebhookFunction[],
  crdFiles: readonly string[],
  endpointUrl: string,
  caBundle: string,
  operatorNamespace: string,
): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const fn of functions) {
    for (const webhook of fn.webhooks) {
      const crd = crdOf(crdFiles, webhook);
      const version = webhook.spec.apiVersion.split('/')[1] ?? '';
      const resource: WebhookResource = { crdName: crd.metadata.name, group: crd.spec.group, version, plural: crd.spec.names.plural, scope: crd.spec.scope };
      const url = (route: string) => ({ url: `${endpointUrl}/${fn.alias}/${route}`, caBundle });
      objects.push(
        ...(generateWebhookConfigurations({
          resource,
          operatorNamespace,
          clientConfig: url,
          ...(webhook.routes.includes('default') ? { default: {} } : {}),
          ...(webhook.routes.includes('validate') ? { validate: {} } : {}),
        }) as KubeObject[]),
      );
      if (webhook.routes.includes('convert')) {
        const served = structuredClone(crd);
        for (const v of served.spec.versions) v.served = true;
        served.spec.conversion = { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: url('convert') } };
        objects.push(served);
      }
    }
  }
  return objects;
}

/** Applies the objects; `unregister` deletes the configurations and re-applies the CRD files as they are. */
export async function registerWebhooks(
  client: BoundKubeClient,
  objects: readonly KubeObject[],
  crdFiles: readonly string[],
): Promise<{ unregister(): Promise<void> }> {
  for (const object of objects) await client.apply(CONFIGURATION_KINDS[object.kind] ?? CRD, object);
  return {
    unregister: async () => {
      for (const object of objects) {
        const kind = CONFIGURATION_KINDS[object.kind];
        if (kind) await client.delete(kind, object.metadata.name);
      }
      if (!objects.some((o) => o.kind === 'CustomResourceDefinition')) return;
      for (const file of crdFiles) {
        for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
          const crd = doc.toJS() as KubeObject | null;
          if (crd?.kind === 'CustomResourceDefinition') await client.apply(CRD, crd);
        }
      }
    },
  };
}

/** What serving the webhook functions reads of the loop's options. */
export interface WebhookServingOptions {
  readonly root: string;
  /** Serve them (default: only with the loop's own control plane). */
  readonly webhooks?: boolean;
}

/** The webhooks' function timeout locally: serverless.yml's 9 s (below the webhooks' timeoutSeconds 10). */
const WEBHOOK_TIMEOUT_SECONDS = 9;

export interface DevWebhooks {
  readonly functions: readonly WebhookFunction[];
  readonly config: Partial<WebhooksConfig>;
  readonly caBundle: string;
  readonly caFile: string;
}

/** Imports the webhook functions and serves them on the local Invoke API; undefined when there are none or they are off. */
export async function startWebhookFunctions(
  options: WebhookServingOptions,
  layout: ProjectLayout,
  local: boolean,
  stateDir: string,
  started: Stoppable[],
  say: (line: string) => void,
): Promise<DevWebhooks | undefined> {
  if (layout.webhookFunctions.length === 0) return undefined;
  if (!(options.webhooks ?? local)) {
    say(`webhook functions (${layout.webhookFunctions.map((f) => f.name).join(', ')}) not served: the cluster of --context cannot call back into this machine`);
    return undefined;
  }
  const functions: WebhookFunction[] = [];
  for (const entry of layout.webhookFunctions) functions.push(await importWebhookFunction(options.root, entry));
  const tls = await writeTestTls(join(stateDir, 'webhook-tls'));
  const invokeApi = await startWebhookInvokeApi(functions, WEBHOOK_TIMEOUT_SECONDS);
  started.push({ name: 'local Lambda Invoke API', stop: () => invokeApi.close() });
  return {
    functions,
    caBundle: tls.caBundle,
    caFile: tls.caFile,
    config: {
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      certFile: tls.certFile,
      keyFile: tls.keyFile,
      lambdaEndpoint: invokeApi.endpoint,
      functions: Object.fromEntries(functions.map((f) => [f.alias, f.entry.name])),
    },
  };
}
