/**
 * `operless create api`: adds a kind to a project made by `operless init`. Pure: `planCreateApi`
 * returns the file changes (`files.ts` applies them), each rendered by the template of that
 * file (api/templates/, api/serverless.ts, api/forwarder.ts, api/rbac.ts).
 *
 * For a kind it creates: the schema (`src/<kind>/types.ts`, spec + status with conditions),
 * a controller stub that sets a `Ready` condition (`src/<kind>/controller.ts`), the Lambda
 * entry (`functions/<kind>.ts`), the function RBAC, a sample, a sample SQS event, the CRD and
 * an integration test against a real control plane; it inserts the function, its work queue,
 * DLQ, event sources and (unordered) bulk queue into serverless.yml, the resource into src/resources.ts, and the kind
 * into the scheduled resync function (functions/resync.ts, and its queue URL variable in
 * serverless.yml); and it regenerates everything derived from all kinds together (operless.json, forwarder watches
 * and the forwarder's RBAC). With `namespaces` (namespace-scoped mode, stored in operless.json)
 * the watches carry the top-level `namespaces` and the RBAC it writes is a Role and
 * RoleBinding per namespace (`operless rbac --namespaces` rewrites files written before).
 */
import type { KindRef } from '../../kube/types.ts';
import type { FileChange } from '../files.ts';
import { resolveOwned, resolveRelated } from '../known-kinds.ts';
import { checkKind, checkVersion, constant, fullGroup, kebab, pluralOf, ScaffoldError } from '../names.ts';
import { kindRefOf, orderingOf, PROJECT_FILE, renderProjectFile, type ApiEntry, type ProjectFile } from '../project-file.ts';
import { parseNamespaceScope } from '../../kube/scope.ts';
import { ORDERINGS, type Ordering } from '../../contract/ordering.ts';
import { typesModule } from './templates/types.ts';
import { controllerModule } from './templates/controller.ts';
import { functionModule } from './templates/function.ts';
import { crdYaml } from './templates/crd.ts';
import { sample, sampleEvent, sampleNamespace } from './templates/sample.ts';
import { integrationTest } from './templates/test.ts';
import { resyncBulkQueueVariable, resyncQueueVariable, resyncQueueVariables, serverlessFunction, serverlessOutputs, serverlessQueues } from './serverless.ts';
import { forwarderRbac, forwarderWatches } from './forwarder.ts';
import { functionRbac } from './rbac.ts';

export interface CreateApiOptions {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** Comma-separated kinds, e.g. `Deployment,Service`. */
  readonly owns?: string;
  /** Comma-separated related kinds, e.g. `ConfigMap,Secret`: each gets `spec.<kind>Ref` and a related watch. */
  readonly watches?: string;
  /** Replace an existing API of the same kind (with --force). */
  readonly force?: boolean;
  /** `per-key`: a FIFO work queue by object key plus a delay queue (docs/architecture.md); default `unordered`. */
  readonly ordering?: Ordering;
  /**
   * Namespace-scoped mode: the namespaces the operator runs for (comma-separated; "" = back to
   * cluster-wide). Stored in operless.json; absent = the project's current setting.
   */
  readonly namespaces?: string;
}

export interface ApiPlan {
  readonly api: ApiEntry;
  readonly project: ProjectFile;
  readonly changes: FileChange[];
}

/**
 * `current.watches`: the project's infra/forwarder/watches.yaml as it is now, so the queue
 * URLs the user set on its primaries survive regeneration.
 */
export function planCreateApi(project: ProjectFile, options: CreateApiOptions, current: { watches?: string } = {}): ApiPlan {
  const kind = checkKind(options.kind);
  const existing = project.apis.find((a) => a.kind === kind);
  const ordering = options.ordering ?? (existing ? orderingOf(existing) : 'unordered');
  if (!ORDERINGS.includes(ordering)) throw new ScaffoldError(`--ordering must be ${ORDERINGS.join(' or ')}, got ${JSON.stringify(ordering)}`);
  if (existing && orderingOf(existing) !== ordering) {
    throw new ScaffoldError(
      `--ordering ${ordering}: ${kind} was created with --ordering ${orderingOf(existing)}, and --force does not rewrite its queues in serverless.yml; ` +
        'change the queues there by hand (see docs/scaffolding.md) and the "ordering" of the kind in operless.json, or keep the ordering',
    );
  }
  const version = checkVersion(options.version);
  const group = fullGroup(options.group, project.domain);
  const projectKinds = project.apis.map(kindRefOf);
  const owns = options.owns ? resolveOwned(options.owns, options.namespaced, projectKinds) : [];
  const related = options.watches ? resolveRelated(options.watches, options.namespaced, projectKinds) : [];
  const api: ApiEntry = {
    group,
    version,
    kind,
    plural: pluralOf(kind),
    namespaced: options.namespaced,
    owns,
    ...(related.length > 0 ? { watches: related } : {}),
    ...(ordering === 'per-key' ? { ordering } : {}),
  };
  checkWatchedOnce(project, api);
  if (existing && !options.force) {
    throw new ScaffoldError(`this project already has kind ${kind} (${existing.group}/${existing.version}); pass --force to regenerate its files`);
  }
  const apis = existing ? project.apis.map((a) => (a.kind === kind ? api : a)) : [...project.apis, api];
  const next: ProjectFile = withScope({ ...project, apis }, options.namespaces);
  return {
    api,
    project: next,
    changes: apiChanges(next, api, { firstTime: !existing, ...(current.watches !== undefined ? { watches: current.watches } : {}) }),
  };
}

/**
 * The files of kind `api` of project `next` (which lists it): its own files, what is derived
 * from all kinds, and — `firstTime` — its entries inserted at the markers. Pure; also how
 * `operless upgrade` replays the scaffold (upgrade/render.ts).
 */
export function apiChanges(next: ProjectFile, api: ApiEntry, options: { firstTime: boolean; watches?: string }): FileChange[] {
  const { kind } = api;
  const ordering = orderingOf(api);
  const create = (path: string, content: string): FileChange => ({ type: 'create', path, content });
  const generated = (path: string, content: string): FileChange => ({ type: 'generated', path, content });
  const file = kebab(kind);
  const changes: FileChange[] = [
    create(`src/${file}/types.ts`, typesModule(api)),
    create(`src/${file}/controller.ts`, controllerModule(api)),
    create(`functions/${file}.ts`, functionModule(api)),
    create(`infra/crds/${api.plural}.${api.group}.yaml`, crdYaml(api)),
    create(`infra/rbac/${file}-function.yaml`, functionRbac(next, api)),
    create(`infra/samples/${file}.yaml`, sample(api, sampleNamespace(next))),
    create(`events/${file}-added.json`, sampleEvent(next.name, api, sampleNamespace(next))),
    create(`test/${file}.test.ts`, integrationTest(next, api)),
    generated(PROJECT_FILE, renderProjectFile(next)),
    generated('infra/forwarder/watches.yaml', forwarderWatches(next, options.watches)),
    generated('infra/rbac/forwarder.yaml', forwarderRbac(next)),
  ];
  if (options.firstTime) {
    changes.push(
      { type: 'insert', path: 'serverless.yml', marker: 'functions', content: serverlessFunction(api, ordering) },
      { type: 'insert', path: 'serverless.yml', marker: 'resources', content: serverlessQueues(api, ordering) },
      { type: 'insert', path: 'serverless.yml', marker: 'outputs', content: serverlessOutputs(api, ordering) },
      { type: 'insert', path: 'src/resources.ts', marker: 'resource-imports', content: `import { ${kind}Resource } from './${file}/types.ts';` },
      { type: 'insert', path: 'src/resources.ts', marker: 'resources', content: `{ definition: ${kind}Resource, source: 'src/${file}/types.ts' },` },
      { type: 'insert', path: 'serverless.yml', marker: 'resync-queues', content: resyncQueueVariables(api, ordering) },
      { type: 'insert', path: 'functions/resync.ts', marker: 'resync-imports', content: `import { ${constant(kind)} } from '../src/${file}/types.ts';` },
      { type: 'insert', path: 'functions/resync.ts', marker: 'resync-kinds', content: resyncTarget(kind, ordering) },
    );
  }
  return changes;
}

/** The kind's entry in functions/resync.ts: its work queue's variable and, unordered, its bulk queue's (where the resync sends). */
function resyncTarget(kind: string, ordering: Ordering): string {
  const bulk = ordering === 'per-key' ? '' : `, bulkQueueUrlVariable: '${resyncBulkQueueVariable(kind)}'`;
  return `{ kind: ${constant(kind)}, queueUrlVariable: '${resyncQueueVariable(kind)}'${bulk} },`;
}

/** The project with the namespaces of `--namespaces` (unchanged when absent). */
function withScope(project: ProjectFile, namespaces: string | undefined): ProjectFile {
  if (namespaces === undefined) return project;
  let scope: string[];
  try {
    scope = parseNamespaceScope(namespaces, '--namespaces');
  } catch (err) {
    throw new ScaffoldError((err as Error).message);
  }
  const { namespaces: _previous, ...rest } = project;
  return scope.length > 0 ? { ...rest, namespaces: scope } : rest;
}

/** The forwarder watches a kind once, owned or related: a kind the project owns cannot also be related (and the other way round). */
function checkWatchedOnce(project: ProjectFile, api: ApiEntry): void {
  const others = project.apis.filter((a) => a.kind !== api.kind);
  const ownedBy = (k: KindRef) => [api, ...others].find((a) => a.owns.some((o) => o.kind === k.kind && o.apiVersion === k.apiVersion));
  const relatedBy = (k: KindRef) => [api, ...others].find((a) => (a.watches ?? []).some((o) => o.kind === k.kind && o.apiVersion === k.apiVersion));
  for (const k of api.watches ?? []) {
    const owner = ownedBy(k);
    if (owner)
      throw new ScaffoldError(
        `--watches ${k.kind}: ${owner.kind} owns ${k.kind} already, and the forwarder watches a kind once (owned or related); drop it from --watches or --owns`,
      );
  }
  for (const k of api.owns) {
    const reader = relatedBy(k);
    if (reader)
      throw new ScaffoldError(
        `--owns ${k.kind}: ${reader.kind} watches ${k.kind} as a related kind already, and the forwarder watches a kind once (owned or related)`,
      );
  }
}
