/**
 * `operless init <dir> --domain example.com [--name my-operator] [--namespaces a,b] [--force]`: a new operator
 * project that depends on Operless as a package. Refuses to overwrite existing files unless
 * --force; prints what it created and what to do next.
 */
import { relative } from 'node:path';
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { scaffoldInit } from '../../scaffold/index.ts';
import type { CommandResult } from './command.ts';
import { JSON_RESULT_OPTION, runScaffold, scaffoldReport } from './scaffold-output.ts';

export const initSpec: CommandSpec = {
  name: 'init',
  summary: 'create a new operator project that depends on Operless',
  usage: '<dir> --domain <domain> [options]',
  options: {
    domain: { type: 'string', placeholder: 'domain', description: "Domain of the project's API groups, e.g. example.com (required)" },
    name: { type: 'string', placeholder: 'name', description: 'Project name: npm package and serverless service (default: the directory name)' },
    'operless-version': {
      type: 'string',
      placeholder: 'spec',
      description: 'The operless dependency in package.json, e.g. ^0.1.0 or file:../operless (default: ^<this version>)',
    },
    namespaces: {
      type: 'string',
      placeholder: 'a,b',
      description: 'Namespace-scoped mode: the namespaces the operator runs for (default: all); its watches and RBAC are generated for those only',
    },
    force: { type: 'boolean', description: 'Overwrite existing files' },
    ...JSON_RESULT_OPTION,
  },
  examples: ['operless init my-operator --domain example.com', 'operless init . --domain acme.io --name cache-operator'],
  details: "Then add a kind with `operless create api`. The project's `npm install && npm test` runs its tests against a real local control plane.",
};

export async function init(argv: string[]): Promise<CommandResult> {
  const { values, positionals } = parseCommandArgs(initSpec, argv);
  if (values.help) return { output: helpText(initSpec) };
  const dir = positionals[0];
  if (!dir || positionals.length > 1) throw new UsageError('give exactly one directory, e.g. `operless init my-operator --domain example.com`');
  const domain = stringOption(values, 'domain');
  if (!domain) throw new UsageError('--domain is required, e.g. --domain example.com (API groups become <group>.example.com)');
  const name = stringOption(values, 'name');
  const dependency = stringOption(values, 'operless-version');
  const namespaces = stringOption(values, 'namespaces');
  const result = runScaffold(() =>
    scaffoldInit({
      dir,
      domain,
      ...(name ? { name } : {}),
      ...(dependency ? { operlessDependency: dependency } : {}),
      ...(namespaces ? { namespaces } : {}),
      force: values.force === true,
    }),
  );
  if (values.json) return { output: `${JSON.stringify({ root: result.root, name: result.name, files: result.changes }, null, 2)}\n` };
  const shown = relative(process.cwd(), result.root) || '.';
  return {
    output: scaffoldReport(`Created operator project ${result.name} in ${shown}:`, result.changes, [
      ...(shown === '.' ? [] : [`  cd ${shown}`]),
      '  npx operless create api --group <group> --version v1alpha1 --kind <Kind>   # or after npm install',
      '  npm install && npm test',
    ]),
  };
}
