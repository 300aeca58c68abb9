/**
 * `operless create webhook`: adds admission (defaulting, validation) and conversion webhooks to
 * a kind of a project made by `operless init` / `create api`. Pure: `planCreateWebhook` returns
 * the file changes (`files.ts` applies them), each rendered by the template of that file
 * (webhook/templates/, webhook/serverless.ts, webhook/values.ts).
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
import { compareVersionPriority } from '../../crd/version-priority.ts';
import type { FileChange } from '../files.ts';
import { camel, checkKind, checkVersion, kebab, ScaffoldError } from '../names.ts';
import { PROJECT_FILE, renderProjectFile, type ApiEntry, type ProjectFile, type WebhookEntry } from '../project-file.ts';
import { spokeModule, spokeResource } from './templates/spoke.ts';
import { webhookModule } from './templates/webhook.ts';
import { webhookTest } from './templates/test.ts';
import { WEBHOOKS_FUNCTION } from './templates/function.ts';
import { FORWARDER_ROLE_PARAM, WEBHOOKS_INVOKE_PERMISSION, WEBHOOKS_OUTPUT, WEBHOOKS_SERVERLESS_FUNCTION } from './serverless.ts';
import { webhookValues, WEBHOOK_VALUES_FILE } from './values.ts';

export { WEBHOOK_VALUES_FILE } from './values.ts';

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

/**
 * `current`: functions/webhooks.ts (absent before the first webhook) and src/resources.ts as
 * they are now, so running again with --force adds nothing twice.
 */
export function planCreateWebhook(
  project: ProjectFile,
  options: CreateWebhookOptions,
  current: { webhooksFunction?: string; resources?: string } = {},
): { api: ApiEntry; project: ProjectFile; changes: FileChange[] } {
  const kind = checkKind(options.kind);
  const api = project.apis.find((a) => a.kind === kind);
  if (!api)
    throw new ScaffoldError(
      `this project has no kind ${kind}${project.apis.length ? ` (it has ${project.apis.map((a) => a.kind).join(', ')})` : ''}; add it with \`operless create api\` first`,
    );
  if (!options.defaulting && !options.validation && !options.conversion)
    throw new ScaffoldError('give at least one of --defaulting, --validation, --conversion');
  let spoke: string | undefined;
  if (options.conversion) {
    if (!options.spoke)
      throw new ScaffoldError(
        `--conversion needs --spoke <version>: the older version converted to and from ${api.version} (the hub and storage version, which should be the newest), e.g. --spoke v1beta1`,
      );
    spoke = checkVersion(options.spoke);
    if (spoke === api.version) throw new ScaffoldError(`--spoke ${spoke} is ${kind}'s own version (the hub); name the other version`);
    if (compareVersionPriority(spoke, api.version) > 0) {
      throw new ScaffoldError(
        `--spoke ${spoke} outranks ${kind}'s own version ${api.version} (the hub, the storage version) in Kubernetes version priority: served, it would be the preferred version, so plain \`kubectl get\`, the garbage collector and the namespace controller would read through the conversion webhook and an outage of it would hang namespace deletion. ` +
          `Make the newest version the hub: move ${kind} to ${spoke} (its version in operless.json and its types) and give the older version as the spoke, --spoke ${api.version} (docs/architecture.md, "Conversion")`,
      );
    }
  } else if (options.spoke) {
    throw new ScaffoldError("--spoke is the conversion webhook's other version: give it with --conversion");
  }
  if (api.webhook && !options.force) throw new ScaffoldError(`${kind} has webhooks already (src/${kebab(kind)}/webhook.ts); pass --force to regenerate them`);
  const webhook: WebhookEntry = { defaulting: options.defaulting === true, validation: options.validation === true, ...(spoke ? { spoke } : {}) };
  const next: ProjectFile = { ...project, apis: project.apis.map((a) => (a.kind === kind ? { ...a, webhook } : a)) };
  return { api: { ...api, webhook }, project: next, changes: webhookChanges(next, api, webhook, current) };
}

/**
 * The files of `api`'s webhooks in project `next` (which records them), given the files the
 * markers are in as they are now (`current`). Pure; also how `operless upgrade` replays the
 * scaffold (upgrade/render.ts).
 */
export function webhookChanges(
  next: ProjectFile,
  api: ApiEntry,
  webhook: WebhookEntry,
  current: { webhooksFunction?: string; resources?: string },
): FileChange[] {
  const { kind } = api;
  const { spoke } = webhook;
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
    changes.push({
      type: 'replace',
      path: 'src/resources.ts',
      find: `{ definition: ${kind}Resource, source: 'src/${file}/types.ts' },`,
      content: `{ definition: ${kind}Resource, source: 'src/${file}/types.ts', unservedVersions: [${spokeResource(kind, spoke)}] },`,
      hint: `add \`unservedVersions: [${spokeResource(kind, spoke)}]\` to ${kind}'s entry`,
    });
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
  return changes;
}
