/**
 * Scaffolding: `operless init` (a new project that depends on Operless as a package) and
 * `operless create api` (a new kind in it), `operless create webhook` (a kind's webhooks). The
 * planners are pure; `scaffoldInit`, `scaffoldApi` and `scaffoldWebhook` read and write the
 * project directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { applyChanges, type AppliedChange } from './files.ts';
import { planInit, PROJECT_DEV_TOOLS } from './init.ts';
import { planCreateApi, type CreateApiOptions } from './create-api.ts';
import { planCreateWebhook, WEBHOOKS_FUNCTION_FILE, type CreateWebhookOptions } from './create-webhook.ts';
import { checkDomain, checkGroup, checkKind, checkProjectName, checkVersion, ScaffoldError } from './names.ts';
import { parseProjectFile, PROJECT_FILE, type ApiEntry } from './project-file.ts';
import { parseNamespaceScope } from '../kube/scope.ts';

export { ScaffoldError } from './names.ts';
export { PROJECT_FILE, type ApiEntry, type ProjectFile } from './project-file.ts';

/** Operless's own package.json (name, version, and the tool versions it is tested with). */
export function operlessPackage(): { version: string; devDependencies: Record<string, string> } {
  return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; devDependencies: Record<string, string> };
}

export interface ScaffoldInitOptions {
  readonly dir: string;
  readonly domain: string;
  readonly name?: string;
  /** Default: `^<this Operless version>`. */
  readonly operlessDependency?: string;
  readonly force?: boolean;
  /** Namespace-scoped mode: comma-separated namespaces (`--namespaces`); empty = cluster-wide. */
  readonly namespaces?: string;
}

export function scaffoldInit(options: ScaffoldInitOptions): { root: string; name: string; changes: AppliedChange[] } {
  const root = resolve(options.dir);
  const name = checkProjectName(options.name ?? basename(root));
  const domain = checkDomain(options.domain);
  const own = operlessPackage();
  const toolVersions: Record<string, string> = {};
  for (const tool of PROJECT_DEV_TOOLS) {
    const version = own.devDependencies[tool];
    if (version) toolVersions[tool] = version;
  }
  let namespaces: string[];
  try {
    namespaces = parseNamespaceScope(options.namespaces, '--namespaces');
  } catch (err) {
    throw new ScaffoldError((err as Error).message);
  }
  const plan = planInit({ name, domain, operlessDependency: options.operlessDependency ?? `^${own.version}`, toolVersions, namespaces });
  return { root, name, changes: applyChanges(root, plan, { force: options.force ?? false }) };
}

export function scaffoldApi(root: string, options: CreateApiOptions): { api: ApiEntry; changes: AppliedChange[] } {
  // The names first: a bad --kind gets the naming error wherever it is run.
  checkGroup(options.group);
  checkVersion(options.version);
  checkKind(options.kind);
  const path = join(root, PROJECT_FILE);
  const project = parseProjectFile(readProjectFile(root, 'create api'), path);
  const watchesPath = join(root, 'infra', 'forwarder', 'watches.yaml');
  const plan = planCreateApi(project, options, existsSync(watchesPath) ? { watches: readFileSync(watchesPath, 'utf8') } : {});
  return { api: plan.api, changes: applyChanges(root, plan.changes, { force: options.force ?? false }) };
}

/** `operless create webhook` in the project at `root`. */
export function scaffoldWebhook(root: string, options: CreateWebhookOptions): { api: ApiEntry; changes: AppliedChange[] } {
  checkKind(options.kind);
  const project = parseProjectFile(readProjectFile(root, 'create webhook'), join(root, PROJECT_FILE));
  const read = (path: string) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined);
  const webhooksFunction = read(WEBHOOKS_FUNCTION_FILE);
  const resources = read('src/resources.ts');
  const plan = planCreateWebhook(project, options, { ...(webhooksFunction !== undefined ? { webhooksFunction } : {}), ...(resources !== undefined ? { resources } : {}) });
  return { api: plan.api, changes: applyChanges(root, plan.changes, { force: options.force ?? false }) };
}

function readProjectFile(root: string, command: string): string {
  const path = join(root, PROJECT_FILE);
  if (!existsSync(path)) {
    throw new ScaffoldError(`no ${PROJECT_FILE} in ${root}: run \`operless ${command}\` in a project made by \`operless init\` (or pass --project <dir>)`);
  }
  return readFileSync(path, 'utf8');
}

/** One line per file: what happened to it. */
export function describeChanges(changes: readonly AppliedChange[]): string[] {
  return changes.map((c) => `  ${c.action.padEnd(11)} ${c.path}`);
}
