/**
 * The operator project a command reads its kinds (`infra/crds/`) and the functions' RBAC
 * (`infra/rbac/`) from: `--project <dir>`, else the current folder — like `operless dev`.
 */
import { join, resolve } from 'node:path';
import { stringOption, type OptionSpec, type ParsedArgs } from './args.ts';
import { loadProjectKinds, type ProjectKind } from './kinds.ts';

export const PROJECT_OPTION: OptionSpec = {
  project: { type: 'string', description: 'Project folder with infra/crds and infra/rbac (default: the current folder)', placeholder: 'dir' },
};

export function projectDir(args: ParsedArgs, cwd = process.cwd()): string {
  return resolve(cwd, stringOption(args.values, 'project') ?? '.');
}

export function projectKinds(root: string): ProjectKind[] {
  return loadProjectKinds(join(root, 'infra', 'crds'));
}
