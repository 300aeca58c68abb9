/**
 * Scaffolding: `operless init` (a new project that depends on Operless as a package) and
 * `operless create api` (a new kind in it), `operless create webhook` (a kind's webhooks),
 * `operless upgrade` (a newer scaffold merged into the project). The planners are pure;
 * `scaffoldInit`, `scaffoldApi`, `scaffoldWebhook` and `scaffoldUpgrade` read and write the
 * project directory. Each of them records what the scaffold generated (upgrade/record.ts) and
 * the scaffold version in operless.json, so a later `operless upgrade` can merge.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { applyChanges, type AppliedChange } from './files.ts';
import { planInit } from './init/plan.ts';
import { operlessPackage, projectToolVersions } from './own-package.ts';
import { recordScaffold, upgradeProject, type UpgradeOptions, type UpgradeResult } from './upgrade/upgrade.ts';
import { planCreateApi, type CreateApiOptions } from './api/plan.ts';
import { planCreateWebhook, WEBHOOKS_FUNCTION_FILE, type CreateWebhookOptions } from './webhook/plan.ts';
import { checkDomain, checkGroup, checkKind, checkProjectName, checkVersion, ScaffoldError } from './names.ts';
import { parseProjectFile, PROJECT_FILE, type ApiEntry, type ProjectFile } from './project-file.ts';
import { parseNamespaceScope } from '../kube/scope.ts';

export { ScaffoldError } from './names.ts';
export { PROJECT_FILE, type ApiEntry, type ProjectFile } from './project-file.ts';

export { operlessPackage } from './own-package.ts';
export type { UpgradeOptions, UpgradeResult } from './upgrade/upgrade.ts';
export type { FileDecision, Outcome } from './upgrade/decide.ts';

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
  const toolVersions = projectToolVersions();
  let namespaces: string[];
  try {
    namespaces = parseNamespaceScope(options.namespaces, '--namespaces');
  } catch (err) {
    throw new ScaffoldError((err as Error).message);
  }
  const plan = planInit({
    name,
    domain,
    operlessDependency: options.operlessDependency ?? `^${own.version}`,
    toolVersions,
    namespaces,
    scaffoldVersion: own.version,
  });
  const changes = applyChanges(root, plan, { force: options.force ?? false });
  recordScaffold(root, parseProjectFile(readFileSync(join(root, PROJECT_FILE), 'utf8'), join(root, PROJECT_FILE)));
  return { root, name, changes };
}

export function scaffoldApi(root: string, options: CreateApiOptions): { api: ApiEntry; changes: AppliedChange[] } {
  // The names first: a bad --kind gets the naming error wherever it is run.
  checkGroup(options.group);
  checkVersion(options.version);
  checkKind(options.kind);
  const path = join(root, PROJECT_FILE);
  const project = currentScaffold(parseProjectFile(readProjectFile(root, 'create api'), path));
  const watchesPath = join(root, 'infra', 'forwarder', 'watches.yaml');
  const plan = planCreateApi(project, options, existsSync(watchesPath) ? { watches: readFileSync(watchesPath, 'utf8') } : {});
  const changes = applyChanges(root, plan.changes, { force: options.force ?? false });
  recordScaffold(root, plan.project, { api: plan.api.kind });
  return { api: plan.api, changes };
}

/** `operless create webhook` in the project at `root`. */
export function scaffoldWebhook(root: string, options: CreateWebhookOptions): { api: ApiEntry; changes: AppliedChange[] } {
  checkKind(options.kind);
  const project = currentScaffold(parseProjectFile(readProjectFile(root, 'create webhook'), join(root, PROJECT_FILE)));
  const read = (path: string) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined);
  const webhooksFunction = read(WEBHOOKS_FUNCTION_FILE);
  const resources = read('src/resources.ts');
  const plan = planCreateWebhook(project, options, {
    ...(webhooksFunction !== undefined ? { webhooksFunction } : {}),
    ...(resources !== undefined ? { resources } : {}),
  });
  const changes = applyChanges(root, plan.changes, { force: options.force ?? false });
  recordScaffold(root, plan.project, { webhook: plan.api.kind });
  return { api: plan.api, changes };
}

/** `operless upgrade` in the project at `root`. */
export function scaffoldUpgrade(root: string, options: UpgradeOptions = {}): UpgradeResult {
  const project = parseProjectFile(readProjectFile(root, 'upgrade'), join(root, PROJECT_FILE));
  return upgradeProject(root, project, options);
}

/** The project as this scaffold writes it: operless.json records this Operless version. */
function currentScaffold(project: ProjectFile): ProjectFile {
  return { ...project, scaffoldVersion: operlessPackage().version };
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
