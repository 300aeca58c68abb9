/**
 * `operless.json`: what a scaffolded project is made of — its name, domain, and every kind
 * `operless create api` added (group, version, scope, owned and related kinds, ordering) — like kubebuilder's
 * PROJECT file. `create api` reads it to refuse a kind twice and to regenerate the files
 * derived from all kinds together (forwarder watches, forwarder RBAC).
 *
 * Guarantee: `parseProjectFile` accepts only what `renderProjectFile` writes and says what
 * is wrong otherwise; rendering is deterministic.
 */
import type { KindRef } from '../kube/types.ts';
import { namespaceProblem } from '../kube/scope.ts';
import { ScaffoldError } from './names.ts';
import { asOrdering, ORDERINGS, type Ordering } from '../contract/ordering.ts';

export const PROJECT_FILE = 'operless.json';

export interface ApiEntry {
  /** Full API group, e.g. `tenancy.example.com`. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly owns: readonly KindRef[];
  /** Related kinds (`--watches`): read, not owned; each named by `spec.<kind>Ref.name`. Absent in older project files. */
  readonly watches?: readonly KindRef[];
  /** The kind's webhooks (`operless create webhook`). Absent: none. */
  readonly webhook?: WebhookEntry;
  /** `per-key` when the kind's queues are FIFO by key (`--ordering per-key`); absent means `unordered`. */
  readonly ordering?: Ordering;
}

/** A kind's ordering: `unordered` unless its entry says otherwise. */
export function orderingOf(api: ApiEntry): Ordering {
  return api.ordering ?? 'unordered';
}

/** Which webhooks a kind has; `spoke`: the version its conversion webhook converts to and from. */
export interface WebhookEntry {
  readonly defaulting: boolean;
  readonly validation: boolean;
  readonly spoke?: string;
}

export interface ProjectFile {
  readonly name: string;
  readonly domain: string;
  readonly apis: readonly ApiEntry[];
  /**
   * The namespaces the operator runs for (namespace-scoped mode, kube/scope.ts); absent or
   * empty = cluster-wide. The forwarder watches, the forwarder RBAC and each new kind's
   * function RBAC are generated for it.
   */
  readonly namespaces?: readonly string[];
  /**
   * The Operless version whose scaffold last wrote the project (init, create api, create
   * webhook, upgrade); absent in project files older than `operless upgrade`.
   */
  readonly scaffoldVersion?: string;
}

export function renderProjectFile(project: ProjectFile): string {
  const scope = project.namespaces?.length ? { namespaces: project.namespaces } : {};
  const version = project.scaffoldVersion ? { scaffoldVersion: project.scaffoldVersion } : {};
  return `${JSON.stringify({ name: project.name, domain: project.domain, ...version, ...scope, apis: project.apis }, null, 2)}\n`;
}

export function parseProjectFile(text: string, where: string = PROJECT_FILE): ProjectFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ScaffoldError(`${where} is not valid JSON (${(err as Error).message}); fix it or run \`operless init\` again with --force`);
  }
  const doc = raw as Partial<ProjectFile> | null;
  if (!doc || typeof doc.name !== 'string' || typeof doc.domain !== 'string' || !Array.isArray(doc.apis)) {
    throw new ScaffoldError(`${where} must have "name", "domain" and "apis"; it was written by \`operless init\``);
  }
  for (const api of doc.apis) {
    if (
      !api ||
      typeof api.kind !== 'string' ||
      typeof api.group !== 'string' ||
      typeof api.version !== 'string' ||
      typeof api.plural !== 'string' ||
      typeof api.namespaced !== 'boolean' ||
      !Array.isArray(api.owns)
    ) {
      throw new ScaffoldError(`${where}: every entry of "apis" needs group, version, kind, plural, namespaced and owns`);
    }
    const ordering: unknown = (api as { ordering?: unknown }).ordering;
    if (ordering !== undefined && !asOrdering(ordering)) {
      throw new ScaffoldError(
        `${where}: apis[${doc.apis.indexOf(api)}] (${api.kind}): "ordering" must be ${ORDERINGS.join(' or ')}, got ${JSON.stringify(ordering)}`,
      );
    }
  }
  const namespaces = (doc as { namespaces?: unknown }).namespaces;
  if (namespaces !== undefined) {
    const problem = Array.isArray(namespaces) ? namespaces.map(namespaceProblem).find((p) => p !== undefined) : 'must be a list of namespace names';
    if (problem) throw new ScaffoldError(`${where}: "namespaces" ${problem}`);
  }
  const scaffoldVersion = (doc as { scaffoldVersion?: unknown }).scaffoldVersion;
  if (scaffoldVersion !== undefined && (typeof scaffoldVersion !== 'string' || scaffoldVersion === '')) {
    throw new ScaffoldError(
      `${where}: "scaffoldVersion" must be the Operless version that wrote the project, e.g. "0.1.0", got ${JSON.stringify(scaffoldVersion)}`,
    );
  }
  return {
    name: doc.name,
    domain: doc.domain,
    apis: doc.apis,
    ...(typeof scaffoldVersion === 'string' ? { scaffoldVersion } : {}),
    ...(Array.isArray(namespaces) && namespaces.length > 0 ? { namespaces: namespaces as string[] } : {}),
  };
}

/** The KindRef of a project API. */
export function kindRefOf(api: ApiEntry): KindRef {
  return { apiVersion: `${api.group}/${api.version}`, kind: api.kind, plural: api.plural, namespaced: api.namespaced };
}
