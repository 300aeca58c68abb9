/**
 * Resolving configured watches to REST coordinates. `plural` and `namespaced` may be given
 * in the configuration (then no request is made); a watch missing either is completed by
 * ONE discovery request per group/version at startup (`GET /apis/<group>/<version>`, which
 * every authenticated identity may read), so users can write just apiVersion + kind.
 *
 * Guarantees: either every watch resolves, or startup fails with a message naming the
 * watch and what to check (CRD installed? apiVersion right?). No discovery at runtime.
 *
 * What a watch reads of its objects is declared here, per watch (`objectFields`): the
 * forwarder's stages read metadata (uid, name, namespace, resourceVersion, generation,
 * labels, annotations, finalizers, owner references, deletionTimestamp, and managedFields
 * for the creation-echo rule), which every watch gets. `objectFields` lists what a watch
 * needs BEYOND metadata, as dotted paths of the object (`status`, or e.g. one field of a
 * spec a reverse index needs); a watch whose list is empty lists and watches as
 * `PartialObjectMetadata` — the API server sends no spec and no status, so neither is parsed
 * nor held (see watcher.ts). A stage that starts reading a non-metadata field adds it in
 * `objectFieldsOf` (or its own watch declares it), and only the watches that need it get
 * whole objects.
 */
import type { KubeApi } from '../../kube/api.ts';
import { apiGroup, groupVersionPrefix } from '../../kube/paths.ts';
import { errorMessage } from '../../observability/log.ts';
import type { RelatedTarget, Trigger, WatchConfig, WatchRole } from '../config/config.ts';

/** A watch with its REST coordinates resolved (plural and scope known). */
export interface ResolvedWatch {
  readonly role: WatchRole;
  readonly apiVersion: string;
  readonly kind: string;
  readonly group: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly namespaces: readonly string[];
  readonly labelSelector?: string;
  readonly triggers: readonly Trigger[];
  /** What this watch reads beyond metadata (dotted paths, `*` = the whole object); empty = metadata only. See the module header. */
  readonly objectFields: readonly string[];
  /** Primaries: the queue of this kind's messages (see queues.ts). */
  readonly queueUrl?: string;
  /** Related watches: the primaries a change maps to. */
  readonly targets?: readonly RelatedTarget[];
  /**
   * The fields related mappings read (withRelatedFields): for a primary the spec paths of the
   * `{ field }` targets naming its kind, for a related watch `label:<key>` of its `{ label }`
   * targets. The snapshot keeps these values and nothing else of the spec; a primary watch
   * without fields needs only the object's metadata.
   */
  readonly fields?: readonly string[];
}

/**
 * Each watch with the fields its snapshots keep for the related mappings: a primary the spec
 * paths of the `field` mappings naming it, a related watch `label:<key>` for its `label`
 * mappings. Pure.
 */
export function withRelatedFields(watches: readonly ResolvedWatch[]): ResolvedWatch[] {
  return watches.map((w) => {
    const fields = new Set<string>();
    if (w.role === 'related') for (const t of w.targets ?? []) if ('label' in t.map) fields.add(`label:${t.map.label}`);
    if (w.role === 'primary') {
      for (const r of watches) {
        for (const t of r.targets ?? []) if (t.kind === w.kind && apiGroup(t.apiVersion) === w.group && 'field' in t.map) fields.add(t.map.field);
      }
    }
    if (fields.size === 0) return w;
    const specPaths = [...fields].filter((f) => !f.startsWith('label:'));
    const objectFields = [...new Set([...w.objectFields, ...specPaths])].sort();
    return { ...w, fields: [...fields].sort(), objectFields };
  });
}

interface ApiResourceList {
  resources?: { name: string; kind: string; namespaced: boolean }[];
}

/**
 * The fields beyond metadata a watch's predicates read. Only `status`, and only when an update
 * must be told apart by it: the triggers name `status` (without `any`, which forwards every
 * change anyway), or they name `generation` for a kind of the core group — the kinds that
 * track no `metadata.generation` (Service, Namespace, PersistentVolumeClaim, ...), where a
 * status-only write is told from a data change by the status alone (predicates.ts). Every
 * other watch — the default primary (custom resources track generation) and the default
 * owned watch (`any`) — is metadata only. A related watch reads the whole object (`*`): its
 * content digest is what tells a data change of a ConfigMap or Secret from a metadata write
 * (snapshot.ts). The spec paths a primary's `field` mappings read are added by
 * `withRelatedFields`. Pure.
 */
export function objectFieldsOf(watch: Pick<WatchConfig, 'apiVersion' | 'triggers'> & { readonly role?: WatchRole }): string[] {
  if (watch.role === 'related') return ['*'];
  if (watch.triggers.includes('any')) return [];
  const needsStatus = watch.triggers.includes('status') || (watch.triggers.includes('generation') && apiGroup(watch.apiVersion) === '');
  return needsStatus ? ['status'] : [];
}

/**
 * Completes one watch from a discovery document. `scope` is the operator's namespaces
 * (config `namespaces`): a namespaced kind whose watch names none of its own lists and
 * watches in each of them; a cluster-scoped kind is watched cluster-wide whatever the scope
 * (its RBAC then needs a ClusterRole for that kind: docs/security.md). Pure; returns an error
 * string if it cannot.
 */
export function resolveFromDiscovery(watch: WatchConfig, list: ApiResourceList | undefined, scope: readonly string[] = []): ResolvedWatch | string {
  const base = {
    role: watch.role,
    apiVersion: watch.apiVersion,
    kind: watch.kind,
    group: apiGroup(watch.apiVersion),
    namespaces: watch.namespaces,
    triggers: watch.triggers,
    objectFields: objectFieldsOf(watch),
    ...(watch.labelSelector ? { labelSelector: watch.labelSelector } : {}),
    ...(watch.queueUrl ? { queueUrl: watch.queueUrl } : {}),
    ...(watch.targets ? { targets: watch.targets } : {}),
  };
  const scoped = (resolved: ResolvedWatch): ResolvedWatch =>
    resolved.namespaced && resolved.namespaces.length === 0 && scope.length > 0 ? { ...resolved, namespaces: [...scope] } : resolved;
  if (watch.plural !== undefined && watch.namespaced !== undefined) {
    return scoped({ ...base, plural: watch.plural, namespaced: watch.namespaced });
  }
  const found = list?.resources?.find((r) => !r.name.includes('/') && (watch.plural ? r.name === watch.plural : r.kind === watch.kind));
  if (!found) {
    return `${watch.kind} (${watch.apiVersion}) is not served by the API server. Is its CRD installed and the apiVersion right? (or set plural and namespaced in the watch to skip discovery)`;
  }
  const resolved = { ...base, plural: watch.plural ?? found.name, namespaced: watch.namespaced ?? found.namespaced };
  if (!resolved.namespaced && watch.namespaces.length > 0) return `${watch.kind} is cluster-scoped; remove "namespaces" from its watch`;
  return scoped(resolved);
}

/** Every watch resolved (see `resolveFromDiscovery`; `scope`: the operator's namespaces, empty = all). */
export async function resolveWatches(
  api: KubeApi,
  watches: readonly WatchConfig[],
  signal?: AbortSignal,
  scope: readonly string[] = [],
): Promise<ResolvedWatch[]> {
  const documents = new Map<string, ApiResourceList | undefined>();
  const problems: string[] = [];
  const resolved: ResolvedWatch[] = [];
  for (const watch of watches) {
    let list: ApiResourceList | undefined;
    if (watch.plural === undefined || watch.namespaced === undefined) {
      if (!documents.has(watch.apiVersion)) {
        const path = groupVersionPrefix(watch.apiVersion);
        try {
          documents.set(watch.apiVersion, await api.requestJson<ApiResourceList>('GET', path, { timeoutMs: 30_000, ...(signal ? { signal } : {}) }));
        } catch (err) {
          documents.set(watch.apiVersion, undefined);
          problems.push(`discovery of ${watch.apiVersion} (GET ${path}) failed: ${errorMessage(err)}`);
          continue;
        }
      }
      list = documents.get(watch.apiVersion);
    }
    const result = resolveFromDiscovery(watch, list, scope);
    if (typeof result === 'string') problems.push(result);
    else resolved.push(result);
  }
  if (problems.length > 0) throw new Error(`cannot resolve the configured watches:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return withRelatedFields(resolved);
}
