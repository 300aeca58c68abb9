/**
 * `operless create webhook --kind <Kind> [--defaulting] [--validation] [--conversion --spoke
 * <version>] [--force]`: adds webhooks to a kind of a project (src/scaffold/create-webhook.ts).
 * Refuses a kind the project does not have, no webhook asked for, a conversion without its other
 * version; prints what it created and what to do next.
 */
import { relative, resolve } from 'node:path';
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { scaffoldWebhook } from '../../scaffold/index.ts';
import { kebab } from '../../scaffold/names.ts';
import { WEBHOOK_VALUES_FILE } from '../../scaffold/webhook/plan.ts';
import type { CommandResult } from './command.ts';
import { JSON_RESULT_OPTION, runScaffold, scaffoldReport } from './scaffold-output.ts';

export const createWebhookSpec: CommandSpec = {
  name: 'create webhook',
  summary: 'add admission (defaulting, validation) and conversion webhooks to a kind',
  usage: '--kind <Kind> [--defaulting] [--validation] [--conversion --spoke <version>] [options]',
  options: {
    kind: { type: 'string', placeholder: 'Kind', description: 'A kind of this project (operless.json), e.g. Memcached' },
    defaulting: { type: 'boolean', description: 'A mutating webhook: fill in fields on CREATE and UPDATE' },
    validation: { type: 'boolean', description: 'A validating webhook: allow or deny writes with a message' },
    conversion: { type: 'boolean', description: "A conversion webhook between the kind's version (the hub) and --spoke" },
    spoke: { type: 'string', placeholder: 'version', description: 'With --conversion: the other version, e.g. v1beta1 (gets src/<kind>/<version>.ts)' },
    project: { type: 'string', placeholder: 'dir', description: 'Project directory', default: '.' },
    force: { type: 'boolean', description: "Overwrite the kind's webhook files if they exist" },
    ...JSON_RESULT_OPTION,
  },
  examples: [
    'operless create webhook --kind Memcached --defaulting --validation',
    'operless create webhook --kind Memcached --defaulting --validation --conversion --spoke v1beta1',
  ],
};

export async function createWebhook(argv: string[]): Promise<CommandResult> {
  const { values, positionals } = parseCommandArgs(createWebhookSpec, argv);
  if (values.help) return { output: helpText(createWebhookSpec) };
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}; every input is an option (see --help)`);
  const kind = stringOption(values, 'kind');
  if (!kind) throw new UsageError('--kind required, e.g. --kind Memcached --defaulting --validation');
  const root = resolve(stringOption(values, 'project') ?? '.');
  const spoke = stringOption(values, 'spoke');
  const result = runScaffold(() =>
    scaffoldWebhook(root, {
      kind,
      defaulting: values.defaulting === true,
      validation: values.validation === true,
      conversion: values.conversion === true,
      ...(spoke ? { spoke } : {}),
      force: values.force === true,
    }),
  );
  if (values.json) return { output: `${JSON.stringify({ api: result.api, files: result.changes }, null, 2)}\n` };
  const { api } = result;
  const hooks = api.webhook;
  const what = [hooks?.defaulting && 'defaulting', hooks?.validation && 'validation', hooks?.spoke && `conversion ${api.version} ↔ ${hooks.spoke}`]
    .filter(Boolean)
    .join(', ');
  const where = relative(process.cwd(), root);
  return {
    output: scaffoldReport(`Added webhooks to ${api.kind} (${what}):`, result.changes, [
      ...(where ? [`  cd ${where}`] : []),
      `  edit src/${kebab(api.kind)}/webhook.ts${hooks?.spoke ? ` and src/${kebab(api.kind)}/${hooks.spoke}.ts` : ''}`,
      ...(hooks?.spoke ? ['  npm run crd      # the CRD lists the new version (not served until the chart adds the conversion webhook)'] : []),
      '  npm test',
      `  deploy with --param="forwarderRoleArn=<the forwarder's role ARN>"; install the chart with ${WEBHOOK_VALUES_FILE}`,
    ]),
  };
}
