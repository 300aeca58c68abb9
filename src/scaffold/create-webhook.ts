/**
 * `operless create webhook`: adds admission (defaulting, validation) and conversion webhooks to
 * a kind of a project made by `operless init` / `create api`. Pure: `planCreateWebhook` returns
 * the file changes; `files.ts` applies them.
 *
 * For the kind it creates `src/<kind>/webhook.ts` (a `defineWebhook` with the routes asked for),
 * a test of each route as the forwarder invokes it (`test/<kind>-webhook.test.ts`, no cluster) and, with `--conversion --spoke <version>`, the spoke's resource (`src/<kind>/<version>.ts`,
 * the hub's schema until edited), listed in `src/resources.ts` as an unserved version (a plain
 * install serves the hub only; the chart serves the spoke with the conversion webhook). The
 * project's one webhook function (`functions/webhooks.ts`, created with the first webhook) gains
 * the kind; serverless.yml gets that function, its output, and the forwarder role's
 * `lambda:InvokeFunction` on exactly it (param `forwarderRoleArn`); and
 * `infra/forwarder/webhooks.yaml` — the chart's `settings.webhooks` and `webhooks` values — is
 * regenerated from operless.json.
 */
import { stringify } from 'yaml';
import { compareVersionPriority } from '../crd/version-priority.ts';
import type { FileChange } from './files.ts';
import { camel, checkKind, checkVersion, kebab, ScaffoldError } from './names.ts';
import { PROJECT_FILE, renderProjectFile, type ApiEntry, type ProjectFile, type WebhookEntry } from './project-file.ts';

export interface CreateWebhookOptions {
  readonly kind: string;
  readonly defaulting?: boolean;
  readonly validation?: boolean;
  readonly conversion?: boolean;
  /** The version converted to and from the kind's own (the hub): required with `conversion`. */
  readonly spoke?: string;
  readonly force?: boolean;
}

export const WEBHOOKS_FUNCTION_FILE = 'functions/webhooks.ts';
export const WEBHOOK_VALUES_FILE = 'infra/forwarder/webhooks.yaml';

/**
 * `current`: functions/webhooks.ts (absent before the first webhook) and src/resources.ts as
 * they are now, so running again with --force adds nothing twice.
 */
export function planCreateWebhook(project: ProjectFile, options: CreateWebhookOptions, current: { webhooksFunction?: string; resources?: string } = {}): { api: ApiEntry; project: ProjectFile; changes: FileChange[] } {
  const kind = checkKind(options.kind);
  const api = project.apis.find((a) => a.kind === kind);
  if (!api) throw new ScaffoldError(`this project has no kind ${kind}${project.apis.length ? ` (it has ${project.apis.map((a) => a.kind).join(', ')})` : ''}; add it with \`operless create api\` first`);
  if (!options.defaulting && !options.validation && !options.conversion) throw new ScaffoldError('give at least one of --defaulting, --validation, --conversion');
  let spoke: string | undefined;
  if (options.conversion) {
    if (!options.spoke) throw new ScaffoldError(`--conversion needs --spoke <version>: the older version converted to and from ${api.version} (the hub and storage version, which should be the newest), e.g. --spoke v1beta1`);
    spoke = checkVersion(options.spoke);
    if (spoke === api.version) throw new ScaffoldError(`--spoke ${spoke} is ${kind}'s own version (the hub); name the other version`);
    if (compareVersionPriority(spoke, api.version) > 0) {
      throw new ScaffoldError(`--spoke ${spoke} outranks ${kind}'s own version ${api.version} (the hub, the storage version) in Kubernetes version priority: served, it would be the preferred version, so plain \`kubectl get\`, the garbage collector and the namespace controller would read through the conversion webhook and an outage of it would hang namespace deletion. `
        + `Make the newest version the hub: move ${kind} to ${spoke} (its version in operless.json and its types) and give the older version as the spoke, --spoke ${api.version} (docs/architecture.md, "Conversion")`);
    }
  } else if (options.spoke) {
    throw new ScaffoldError('--spoke is the conversion webhook\'s other version: give it with --conversion');
  }
  if (api.webhook && !options.force) throw new ScaffoldError(`${kind} has webhooks already (src/${kebab(kind)}/webhook.ts); pass --force to regenerate them`);
  const webhook: WebhookEntry = { defaulting: options.defaulting === true, validation: options.validation === true, ...(spoke ? { spoke } : {}) };
  const next: ProjectFile = { ...project, apis: project.apis.map((a) => (a.kind === kind ? { ...a, webhook } : a)) };
  const file = kebab(kind);
  const changes: FileChange[] = [
    { type: 'create', path: `src/${file}/webhook.ts`, content: webhookModule(api, webhook) },
    { type: 'create', path: `test/${file}-webhook.test.ts`, content: webhookTest(api, webhook) },
    { type: 'generated', path: PROJECT_FILE, content: renderProjectFile(next) },
    { type: 'generated', path: WEBHOOK_VALUES_FILE, content: webhookValues(next) },
  ];
  if (spoke) {
    const spokeImport = `import { ${spokeResource(kind, spoke)} } from './${file}/${spoke}.ts';`;
    changes.push({ type: 'create', path: `src/${file}/${spoke}.ts`, content: spokeModule(api, spoke) });
    if (!current.resources?.includes(spokeImport)) changes.push({ type: 'insert', path: 'src/resources.ts', marker: 'resource-imports', content: spokeImport });
    changes.push(
      {
        type: 'replace', path: 'src/resources.ts',
        find: `{ definition: ${kind}Resource, source: 'src/${file}/types.ts' },`,
        content: `{ definition: ${kind}Resource, source: 'src/${file}/types.ts', unservedVersions: [${spokeResource(kind, spoke)}] },`,
        hint: `add \`unservedVersions: [${spokeResource(kind, spoke)}]\` to ${kind}'s entry`,
      },
    );
  }
  const importLine = `import { ${camel(kind)}Webhook } from '../src/${file}/webhook.ts';`;
  if (current.webhooksFunction === undefined) {
    changes.push(
      { type: 'create', path: WEBHOOKS_FUNCTION_FILE, content: WEBHOOKS_FUNCTION },
      { type: 'insert', path: 'serverless.yml', marker: 'params', content: FORWARDER_ROLE_PARAM },
      { type: 'insert', path: 'serverless.yml', marker: 'functions', content: WEBHOOKS_SERVERLESS_FUNCTION },
      { type: 'insert', path: 'serverless.yml', marker: 'resources', content: WEBHOOKS_INVOKE_PERMISSION },
      { type: 'insert', path: 'serverless.yml', marker: 'outputs', content: WEBHOOKS_OUTPUT },
    );
  }
  if (!current.webhooksFunction?.includes(importLine)) {
    changes.push(
      { type: 'insert', path: WEBHOOKS_FUNCTION_FILE, marker: 'webhook-imports', content: importLine },
      { type: 'insert', path: WEBHOOKS_FUNCTION_FILE, marker: 'webhooks', content: `${camel(kind)}Webhook,` },
    );
  }
  return { api: { ...api, webhook }, project: next, changes };
}

function spokeResource(kind: string, version: string): string {
  return `${kind}${version.charAt(0).toUpperCase()}${version.slice(1)}Resource`;
}

function webhookModule(api: ApiEntry, webhook: WebhookEntry): string {
  const k = api.kind;
  const v = camel(k);
  const parts: string[] = [];
  if (webhook.defaulting) {
    parts.push(`  // Defaulting: return the object with the fields you fill in (the runtime computes the JSON
  // patch; only spec, labels and annotations may change). Called on CREATE and UPDATE.
  default: (object) => {
    // TODO: fill in what the user left out, e.g. a default that depends on more than the object.
    if (object.spec.message === undefined) object.spec.message = 'hello';
    return object;
  },`);
  }
  if (webhook.validation) {
    parts.push(`  // Validation: allowed, or denied with a message kubectl prints. ctx.client reads the cluster
  // (what CEL rules in the schema cannot do); give the function's identity those reads.
  validate: (object, ctx) => {
    // TODO: your checks. An update that leaves the spec as it was should pass (finalizer writes).
    if (ctx.oldObject && JSON.stringify(ctx.oldObject.spec) === JSON.stringify(object.spec)) return { allowed: true };
    if (object.spec.message?.trim() === '') return { allowed: false, message: 'spec.message must not be blank' };
    return { allowed: true };
  },`);
  }
  if (webhook.spoke) {
    parts.push(`  // Conversion between the hub (${api.version}, the storage version) and ${webhook.spoke}: both ways, keeping
  // metadata. The handlers above only ever see the hub.
  conversion: {
    spokes: {
      '${api.group}/${webhook.spoke}': {
        // TODO: map the fields that differ between the versions (they are the same until you edit ${webhook.spoke}.ts).
        toHub: (spoke) => ({ ...spoke }) as ${k},
        fromHub: (hub) => ({ ...hub }),
      },
    },
  },`);
  }
  return `/**
 * The ${k} webhooks, served by functions/webhooks.ts through the forwarder's webhook endpoint
 * (the chart renders the webhook configurations from infra/forwarder/webhooks.yaml): ${[webhook.defaulting && 'defaulting', webhook.validation && 'validation', webhook.spoke && `conversion ${api.version} ↔ ${webhook.spoke}`].filter(Boolean).join(', ')}.
 * A handler that throws or runs past its deadline denies the write, naming the webhook and the cause.
 */
import { defineWebhook } from 'operless';
import { ${k}Resource, type ${k} } from './types.ts';

export const ${v}Webhook = defineWebhook<${k}>({
  apiVersion: ${k}Resource.kindRef.apiVersion,
  kind: '${k}',
${parts.join('\n')}
});
`;
}

function webhookTest(api: ApiEntry, webhook: WebhookEntry): string {
  const k = api.kind;
  const hub = `${api.group}/${api.version}`;
  const namespace = api.namespaced ? ", namespace: 'default'" : '';
  const cases: string[] = [];
  if (webhook.defaulting) {
    cases.push(`test('${k} defaulting: a missing spec.message is filled in (a JSON patch)', async () => {
  const response = responseOf(await handler({ route: 'default', review: admission({}) }));
  assert.equal(response.allowed, true);
  assert.deepEqual(JSON.parse(Buffer.from(String(response.patch), 'base64').toString('utf8')), [{ op: 'add', path: '/spec/message', value: 'hello' }]);
});`);
  }
  if (webhook.validation) {
    cases.push(`test('${k} validation: a blank spec.message is denied with the message kubectl prints', async () => {
  const response = responseOf(await handler({ route: 'validate', review: admission({ message: ' ' }) }));
  assert.equal(response.allowed, false);
  assert.match(String((response.status as { message?: string }).message), /spec\\.message must not be blank/);
  assert.equal(responseOf(await handler({ route: 'validate', review: admission({ message: 'hi' }) })).allowed, true);
});`);
  }
  if (webhook.spoke) {
    cases.push(`test('${k} conversion: ${webhook.spoke} to the hub and back keeps the object', async () => {
  const spoke = { ...object({ message: 'hi' }), apiVersion: '${api.group}/${webhook.spoke}' };
  const review = (desiredAPIVersion: string, objects: unknown[]) => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'test-uid', desiredAPIVersion, objects } });
  const toHub = responseOf(await handler({ route: 'convert', review: review('${hub}', [spoke]) }));
  const [hub] = toHub.convertedObjects as { apiVersion: string }[];
  assert.equal(hub?.apiVersion, '${hub}');
  const back = responseOf(await handler({ route: 'convert', review: review('${api.group}/${webhook.spoke}', [hub]) }));
  assert.deepEqual(back.convertedObjects, [spoke]);
});`);
  }
  return `/**
 * The ${k} webhooks as the forwarder invokes them (src/${kebab(k)}/webhook.ts): an AdmissionReview or
 * ConversionReview in, the review the API server gets out. No cluster needed; change these cases
 * with your handlers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toWebhookHandler, type WebhookResult } from 'operless';
import { ${camel(k)}Webhook } from '../src/${kebab(k)}/webhook.ts';

// No cluster in these tests: a handler that reads through ctx.client is denied with this
// message (give it a control plane instead: startControlPlane from operless/testing).
const handler = toWebhookHandler(${camel(k)}Webhook, { clients: async () => { throw new Error('no cluster in these tests'); } });
const object = (spec: Record<string, unknown>) => ({ apiVersion: '${hub}', kind: '${k}', metadata: { name: 'sample'${namespace} }, spec });
const admission = (spec: Record<string, unknown>) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid: 'test-uid', kind: { group: '${api.group}', version: '${api.version}', kind: '${k}' }, operation: 'CREATE', name: 'sample'${namespace}, object: object(spec), userInfo: {} },
});
function responseOf(result: WebhookResult): Record<string, unknown> {
  assert.ok('review' in result, \`no review: \${JSON.stringify(result)}\`);
  return (result.review as { response: Record<string, unknown> }).response;
}

${cases.join('\n\n')}
`;
}

function spokeModule(api: ApiEntry, spoke: string): string {
  const k = api.kind;
  return `/**
 * ${k} ${api.group}/${spoke}: a second version of the kind, converted to and from ${api.version} (the hub,
 * the storage version) by the conversion webhook in webhook.ts. It starts with the hub's schema:
 * change its spec here and the conversion there together. src/resources.ts lists it as not
 * served, so a plain install needs no webhook; the chart serves it with the conversion stanza.
 */
import { defineResource } from 'operless/crd';
import { ${camel(k)}Spec, ${camel(k)}Status } from './types.ts';

export const ${spokeResource(k, spoke)} = defineResource({
  group: '${api.group}',
  version: '${spoke}',
  kind: '${k}',
  plural: '${api.plural}',
  scope: '${api.namespaced ? 'Namespaced' : 'Cluster'}',
  description: '${k} is the Schema for the ${api.plural} API (${spoke}).',
  spec: ${camel(k)}Spec,
  status: ${camel(k)}Status,
});
`;
}

/** The chart values of every kind's webhooks (the chart's `settings.webhooks` and `webhooks`). */
function webhookValues(project: ProjectFile): string {
  const apis = project.apis.filter((a) => a.webhook);
  const functionName = `${project.name}-dev-webhooks`;
  const resources = apis.map((a) => ({
    alias: kebab(a.kind),
    apiVersion: `${a.group}/${a.version}`,
    plural: a.plural,
    namespaced: a.namespaced,
    ...(a.webhook?.defaulting ? { default: { failurePolicy: 'Fail', timeoutSeconds: 10 } } : {}),
    ...(a.webhook?.validation ? { validate: { failurePolicy: 'Fail', timeoutSeconds: 10 } } : {}),
  }));
  const setFiles = apis.map((a, i) => (a.webhook?.spoke ? `#   --set-file 'webhooks.resources[${i}].conversion.crd=infra/crds/${a.plural}.${a.group}.yaml' \\\n` : '')).join('');
  const values = {
    settings: { webhooks: { enabled: true, functions: Object.fromEntries(apis.map((a) => [kebab(a.kind), functionName])) } },
    webhooks: { certManager: { enabled: true }, resources },
  };
  return `# GENERATED by \`operless create webhook\` from operless.json: the forwarder chart's webhook values
# (operless docs/forwarder.md, "Webhooks"). Install with the other values files; a kind with a
# conversion webhook also passes its CRD, which the chart renders with every version served:
#
#   helm install ${project.name}-forwarder <chart> -f infra/forwarder/values.yaml \\
#   -f infra/forwarder/watches.yaml -f infra/forwarder/webhooks.yaml \\
${setFiles}#
# The function name is the stage-dev placeholder: use the stack output WebhooksFunctionArn.
# cert-manager issues the serving certificate (set webhooks.caBundle instead, and
# certManager.enabled false, to bring your own).
${stringify(values)}`;
}

const WEBHOOKS_FUNCTION = `/**
 * Lambda entry point: the admission and conversion webhooks of every kind, invoked synchronously
 * by the forwarder's webhook endpoint (serverless.yml: its role alone may invoke this function).
 * \`operless create webhook\` adds kinds at the markers.
 */
import { toWebhookHandler } from 'operless';
// +operless:scaffold:webhook-imports

export const webhooks = [
  // +operless:scaffold:webhooks
];
export const handler = toWebhookHandler(webhooks);
`;

const FORWARDER_ROLE_PARAM = `# IAM role ARN of the forwarder (IRSA / Pod Identity): the only identity allowed to invoke the
# webhooks function. Required to deploy: --param="forwarderRoleArn=arn:aws:iam::<account>:role/<role>".
forwarderRoleArn: ''`;

const WEBHOOKS_SERVERLESS_FUNCTION = `webhooks:
  handler: functions/webhooks.handler
  description: Admission and conversion webhooks, invoked by the forwarder's webhook endpoint
  # Below the webhooks' timeoutSeconds (10) minus the forwarder's margin: a slow call ends as a
  # Lambda timeout the forwarder reports, not as the API server giving up.
  timeout: 9`;

const WEBHOOKS_INVOKE_PERMISSION = `# The forwarder's role may invoke the webhooks function, and nothing else does.
WebhooksInvokePermission:
  Type: AWS::Lambda::Permission
  Properties:
    FunctionName: !GetAtt WebhooksLambdaFunction.Arn
    Action: lambda:InvokeFunction
    Principal: \${param:forwarderRoleArn}`;

const WEBHOOKS_OUTPUT = `WebhooksFunctionArn:
  Description: The forwarder's settings.webhooks.functions target (infra/forwarder/webhooks.yaml)
  Value: !GetAtt WebhooksLambdaFunction.Arn`;
