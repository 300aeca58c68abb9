/**
 * `operless create api --group <g> --version <v> --kind <Kind> [--namespaced|--cluster-scoped]
 * [--owns Deployment,Service] [--watches ConfigMap,Secret] [--ordering unordered|per-key] [--namespaces a,b] [--force]`: adds a kind to a project made by `operless init`.
 * Validates the names (DNS-1123 group, PascalCase kind, version like v1alpha1), refuses to
 * overwrite files unless --force, prints what it created and what to do next.
 */
import { relative, resolve } from 'node:path';
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { scaffoldApi } from '../../scaffold/index.ts';
import { kebab } from '../../scaffold/names.ts';
import { asOrdering, ORDERINGS } from '../../contract/ordering.ts';
import type { CommandResult } from './command.ts';
import { JSON_RESULT_OPTION, runScaffold, scaffoldReport } from './scaffold-output.ts';

export const createApiSpec: CommandSpec = {
  name: 'create api',
  summary: 'add a kind: schema, controller, function, queues, watches, RBAC, sample, test',
  usage: '--group <group> --version <version> --kind <Kind> [options]',
  options: {
    group: { type: 'string', placeholder: 'group', description: 'API group; without a dot the project domain is appended (cache → cache.example.com)' },
    version: { type: 'string', placeholder: 'version', description: 'API version, e.g. v1alpha1' },
    kind: { type: 'string', placeholder: 'Kind', description: 'Kind in PascalCase, e.g. Memcached' },
    namespaced: { type: 'boolean', description: 'Objects live in namespaces (the default)' },
    'cluster-scoped': { type: 'boolean', description: 'Objects are cluster-scoped' },
    owns: { type: 'string', placeholder: 'kinds', description: 'Kinds the controller creates and owns, comma-separated, e.g. Deployment,Service,ConfigMap' },
    watches: {
      type: 'string',
      placeholder: 'kinds',
      description:
        'Kinds the controller reads but does not own, comma-separated, e.g. ConfigMap,Secret: each gets spec.<kind>Ref and a related watch (a change reconciles every object naming it)',
    },
    project: { type: 'string', placeholder: 'dir', description: 'Project directory', default: '.' },
    force: { type: 'boolean', description: "Overwrite the kind's files if they exist" },
    namespaces: {
      type: 'string',
      placeholder: 'a,b',
      description:
        'Namespace-scoped mode: the namespaces the operator runs for (stored in operless.json; "" = cluster-wide again). The watches and the RBAC written are for those namespaces only',
    },
    ordering: {
      type: 'string',
      placeholder: 'mode',
      description:
        'unordered (default: a standard queue) or per-key (a FIFO queue by object key: one reconcile of a key at a time, requeues merge; plus a delay queue)',
    },
    ...JSON_RESULT_OPTION,
  },
  examples: [
    'operless create api --group cache --version v1alpha1 --kind Memcached --owns Deployment,Service',
    'operless create api --group tenancy --version v1alpha1 --kind Tenant --cluster-scoped --owns Namespace,ResourceQuota',
  ],
};

export async function createApi(argv: string[]): Promise<CommandResult> {
  const { values, positionals } = parseCommandArgs(createApiSpec, argv);
  if (values.help) return { output: helpText(createApiSpec) };
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}; every input is an option (see --help)`);
  const missing = ['group', 'version', 'kind'].filter((o) => !stringOption(values, o));
  if (missing.length > 0) throw new UsageError(`${missing.map((m) => `--${m}`).join(', ')} required, e.g. --group cache --version v1alpha1 --kind Memcached`);
  if (values.namespaced && values['cluster-scoped']) throw new UsageError('--namespaced and --cluster-scoped exclude each other');
  const root = resolve(stringOption(values, 'project') ?? '.');
  const owns = stringOption(values, 'owns');
  const orderingText = stringOption(values, 'ordering');
  const ordering = asOrdering(orderingText);
  if (orderingText !== undefined && !ordering) {
    throw new UsageError(`--ordering must be ${ORDERINGS.join(' or ')}, got ${JSON.stringify(orderingText)}`);
  }
  const related = stringOption(values, 'watches');
  const namespaces = typeof values.namespaces === 'string' ? values.namespaces : undefined;
  const result = runScaffold(() =>
    scaffoldApi(root, {
      group: stringOption(values, 'group')!,
      version: stringOption(values, 'version')!,
      kind: stringOption(values, 'kind')!,
      namespaced: values['cluster-scoped'] !== true,
      ...(owns ? { owns } : {}),
      ...(ordering ? { ordering } : {}),
      ...(related ? { watches: related } : {}),
      ...(namespaces !== undefined ? { namespaces } : {}),
      force: values.force === true,
    }),
  );
  if (values.json) return { output: `${JSON.stringify({ api: result.api, files: result.changes }, null, 2)}\n` };
  const { api } = result;
  const where = relative(process.cwd(), root);
  const headline = `Added ${api.kind} (${api.group}/${api.version}, ${api.namespaced ? 'namespaced' : 'cluster-scoped'}${api.owns.length ? `, owns ${api.owns.map((o) => o.kind).join(', ')}` : ''}${api.watches?.length ? `, watches ${api.watches.map((o) => o.kind).join(', ')}` : ''}${api.ordering === 'per-key' ? ', per-key ordering' : ''}):`;
  return {
    output: scaffoldReport(headline, result.changes, [
      ...(where ? [`  cd ${where}`] : []),
      `  edit src/${kebab(api.kind)}/types.ts (spec, status) and controller.ts (reconcile)`,
      '  npm run crd      # regenerate infra/crds/ after changing the schema',
      '  npm test         # the new integration test runs against a real control plane',
      '  npm start        # the whole loop locally',
    ]),
  };
}
