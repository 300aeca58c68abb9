/**
 * `operless rbac --namespaces <list>`: the project's RBAC (every file of `infra/rbac/`: the
 * functions' ClusterRoles and, in a scaffolded project, the forwarder's) rewritten for
 * namespace-scoped operation — a Role and RoleBinding per namespace instead of each
 * ClusterRole and ClusterRoleBinding (kube/rbac-scope.ts). Rules on cluster-scoped resources
 * (built-in ones, and the project's own cluster-scoped kinds from `infra/crds/`) stay in a
 * ClusterRole of their own, which the output points out. Prints YAML for `kubectl apply -f -`.
 *
 * Guarantees: the rule files are the one source (nothing is written twice); an invalid
 * namespace name is refused naming `--namespaces`; without `--namespaces` the RBAC is printed
 * as it is (cluster-wide).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { clusterScopedOf, namespacedRbac, type RbacObject } from '../../kube/rbac-scope.ts';
import { NamespaceScopeError, parseNamespaceScope } from '../../kube/scope.ts';
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { PROJECT_OPTION, projectDir, projectKinds } from '../project-dir.ts';
import type { CommandResult } from './command.ts';

export const rbacSpec: CommandSpec = {
  name: 'rbac',
  summary: "print the project's RBAC, per namespace with --namespaces (namespace-scoped operation)",
  usage: '[--namespaces <a,b,...>]',
  details:
    'Reads every YAML file of <project>/infra/rbac and prints it for `kubectl apply -f -`.\n' +
    'With --namespaces, each ClusterRole and its ClusterRoleBinding become a Role and a\n' +
    'RoleBinding in each listed namespace (the same rules and subjects): the identities reach\n' +
    'nothing outside those namespaces. Rules on cluster-scoped resources stay in a ClusterRole\n' +
    'holding only them. Use the same list for the forwarder (`namespaces`) and the functions\n' +
    '(the `namespaces` param). See docs/security.md, "Namespace-scoped operation".',
  options: {
    ...PROJECT_OPTION,
    namespaces: { type: 'string', description: 'Comma-separated namespaces the operator runs for (empty: cluster-wide)', placeholder: 'a,b' },
  },
  examples: ['operless rbac --namespaces team-a,team-b | kubectl apply -f -', 'operless rbac'],
};

/** The RBAC objects of the files in `dir` (`.yaml`/`.yml`, in name order). */
export function readRbacObjects(dir: string): { objects: RbacObject[]; files: string[] } {
  if (!existsSync(dir)) return { objects: [], files: [] };
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  const objects = files
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as RbacObject | null))
    .filter((o): o is RbacObject => o !== null && typeof o === 'object');
  return { objects, files };
}

export async function rbac(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(rbacSpec, argv);
  if (args.values.help) return { output: helpText(rbacSpec) };
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"; pass the namespaces with --namespaces a,b`);
  let scope: string[];
  try {
    scope = parseNamespaceScope(stringOption(args.values, 'namespaces'), '--namespaces');
  } catch (err) {
    if (err instanceof NamespaceScopeError) throw new UsageError(err.message);
    throw err;
  }
  const root = projectDir(args);
  const dir = join(root, 'infra', 'rbac');
  const { objects, files } = readRbacObjects(dir);
  if (objects.length === 0)
    throw new UsageError(`no RBAC in ${relative(process.cwd(), dir) || dir}: run this in an Operless project (its infra/rbac/*.yaml), or pass --project <dir>`);
  const clusterKinds = projectKinds(root)
    .filter((k) => !k.namespaced)
    .map((k) => ({ group: k.group, plural: k.plural }));
  const out = namespacedRbac(objects, scope, clusterScopedOf(clusterKinds));
  const kept = scope.length > 0 ? out.filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata?.name ?? '') : [];
  const header = [
    `# ${scope.length > 0 ? `Namespace-scoped (${scope.join(', ')})` : 'Cluster-wide'} RBAC from ${files.map((f) => `infra/rbac/${f}`).join(', ')} (operless rbac${scope.length > 0 ? ` --namespaces ${scope.join(',')}` : ''}).`,
    ...(kept.length > 0 ? [`# Kept cluster-wide (rules on cluster-scoped resources only): ClusterRole ${kept.join(', ')}.`] : []),
  ];
  return { output: `${header.join('\n')}\n${out.map((o) => `---\n${stringify(o)}`).join('')}` };
}
