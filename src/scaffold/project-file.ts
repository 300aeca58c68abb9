/**
 * `operless.json`: what a scaffolded project is made of — its name, domain, and every kind
 * `operless create api` added (group, version, scope, owned kinds) — like kubebuilder's
 * PROJECT file. `create api` reads it to refuse a kind twice and to regenerate the files
 * derived from all kinds together (forwarder watches, forwarder RBAC).
 *
 * Guarantee: `parseProjectFile` accepts only what `renderProjectFile` writes and says what
 * is wrong otherwise; rendering is deterministic.
 */
import type { KindRef } from '../kube/types.ts';
import { namespaceProblem } from '../kube/scope.ts';
import { ScaffoldError } from './names.ts';

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
}

export function renderProjectFile(project: ProjectFile): string {
  const scope = project.namespaces?.length ? { namespaces: project.namespaces } : {};
  return `${JSON.stringify({ name: project.name, domain: project.domain, ...scope, apis: project.apis }, null, 2)}\n`;
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
    if (!api || typeof api.kind !== 'string' || typeof api.group !== 'string' || typeof api.version !== 'string' ||
      typeof api.plural !== 'string' || typeof api.namespaced !== 'boolean' || !Array.isArray(api.owns)) {
      throw new ScaffoldError(`${where}: every entry of "apis" needs group, version, kind, plural, namespaced and owns`);
    }
  }
  const namespaces = (doc as { namespaces?: unknown }).namespaces;
  if (namespaces !== undefined) {
    const problem = Array.isArray(namespaces) ? namespaces.map(namespaceProblem).find((p) => p !== undefined) : 'must be a list of namespace names';
    if (problem) throw new ScaffoldError(`${where}: "namespaces" ${problem}`);
  }
  return { name: doc.name, domain: doc.domain, apis: doc.apis, ...(Array.isArray(namespaces) && namespaces.length > 0 ? { namespaces: namespaces as string[] } : {}) };
}

/** The KindRef of a project API. */
export function kindRefOf(api: ApiEntry): KindRef {
  return { apiVersion: `${api.group}/${api.version}`, kind: api.kind, plural: api.plural, namespaced: api.namespaced };
}
