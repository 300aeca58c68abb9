/**
 * The namespace scope a CLI command reads the cluster in: the operator's namespaces
 * (kube/scope.ts), so `operless status` and `operless enqueue --all` of a namespace-scoped
 * install list in those namespaces only — what its RBAC allows — and never cluster-wide.
 *
 * Resolution order, first set wins: `--namespaces a,b` (the flag `operless rbac` takes), the
 * environment variable `OPERLESS_NAMESPACES` (what the forwarder and the functions read), the
 * project's `serverless.yml` `params.default.namespaces` (the value the functions are
 * deployed with). None, or an empty value: cluster-wide.
 *
 * Guarantees: the result is a scope as `parseNamespaceScope` makes it; an invalid entry, or a
 * `params.default.namespaces` the CLI cannot read as a list (a `${…}` variable, not a
 * string), is a `UsageError` naming the flag, variable or file field. Reading is pure but
 * for the one file read.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { NAMESPACES_ENV, NamespaceScopeError, parseNamespaceScope } from '../kube/scope.ts';
import { UsageError, stringOption, type OptionSpec, type ParsedArgs } from './args.ts';

export const SCOPE_OPTION: OptionSpec = {
  namespaces: {
    type: 'string',
    description: `Namespace-scoped install: list in these namespaces only, comma-separated (env ${NAMESPACES_ENV}; else serverless.yml params.default.namespaces)`,
    placeholder: 'a,b',
  },
};

export interface CliScope {
  /** Sorted, distinct namespace names; empty = cluster-wide. */
  readonly namespaces: readonly string[];
  /** Where they came from: `--namespaces`, `OPERLESS_NAMESPACES`, `serverless.yml params.default.namespaces`, or `none`. */
  readonly source: string;
}

/** The params field of the project file the functions are deployed with. */
const PARAM_FIELD = 'serverless.yml params.default.namespaces';

/** The scope for a command run with `args` in project `root` (see the header for the order). */
export function resolveScope(args: ParsedArgs, root: string, env: NodeJS.ProcessEnv = process.env): CliScope {
  const flag = stringOption(args.values, 'namespaces');
  if (flag !== undefined) return { namespaces: scopeOf(flag, '--namespaces'), source: '--namespaces' };
  const fromEnv = env[NAMESPACES_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return { namespaces: scopeOf(fromEnv, NAMESPACES_ENV), source: NAMESPACES_ENV };
  const param = projectNamespacesParam(root);
  if (param !== undefined && param.trim() !== '') return { namespaces: scopeOf(param, PARAM_FIELD), source: PARAM_FIELD };
  return { namespaces: [], source: 'none' };
}

/** `params.default.namespaces` of `<root>/serverless.yml` as written; undefined when there is no such file or field. */
export function projectNamespacesParam(root: string): string | undefined {
  const path = join(root, 'serverless.yml');
  if (!existsSync(path)) return undefined;
  let doc: unknown;
  try {
    doc = parse(readFileSync(path, 'utf8'), { customTags: (tags) => tags, logLevel: 'silent' });
  } catch (err) {
    throw new UsageError(`cannot read ${path} for params.default.namespaces: ${(err as Error).message}; pass --namespaces instead`);
  }
  const value = (doc as { params?: { default?: { namespaces?: unknown } } } | null)?.params?.default?.namespaces;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.includes('${')) {
    throw new UsageError(
      `${PARAM_FIELD} must be a comma-separated list of namespaces the CLI can read, got ${JSON.stringify(value)}; pass --namespaces or set ${NAMESPACES_ENV}`,
    );
  }
  return value;
}

function scopeOf(text: string, field: string): string[] {
  try {
    return parseNamespaceScope(text, field);
  } catch (err) {
    if (err instanceof NamespaceScopeError) throw new UsageError(err.message);
    throw err;
  }
}
