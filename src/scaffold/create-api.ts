/**
 * `operless create api`: adds a kind to a project made by `operless init`. Pure: `planCreateApi`
 * returns the file changes; `files.ts` applies them.
 *
 * For a kind it creates: the schema (`src/<kind>/types.ts`, spec + status with conditions),
 * a controller stub that sets a `Ready` condition (`src/<kind>/controller.ts`), the Lambda
 * entry (`functions/<kind>.ts`), the function RBAC, a sample, a sample SQS event, the CRD and
 * an integration test against a real control plane; it inserts the function, its work queue,
 * DLQ and event source into serverless.yml, the resource into src/resources.ts, and the kind
 * into the scheduled resync function (functions/resync.ts, and its queue URL variable in
 * serverless.yml); and it regenerates everything derived from all kinds together (operless.json, forwarder watches
 * and the forwarder's RBAC). With `namespaces` (namespace-scoped mode, stored in operless.json)
 * the watches carry the top-level `namespaces` and the RBAC it writes is a Role and
 * RoleBinding per namespace (`operless rbac --namespaces` rewrites files written before).
 */
import { parse, stringify } from 'yaml';
import type { KindRef } from '../kube/types.ts';
import { apiGroup } from '../kube/paths.ts';
import { renderCrd } from '../crd/generate.ts';
import { conditions, integer, object, required, string } from '../crd/schema.ts';
import { defineResource } from '../crd/resource.ts';
import type { FileChange } from './files.ts';
import { isBuiltinKind, resolveOwned, resolveRelated } from './known-kinds.ts';
import { camel, checkKind, checkVersion, constant, fullGroup, kebab, pluralOf, ScaffoldError } from './names.ts';
import { kindRefOf, orderingOf, PROJECT_FILE, renderProjectFile, type ApiEntry, type ProjectFile } from './project-file.ts';
import { clusterScopedOf, namespacedRbac, type RbacObject } from '../kube/rbac-scope.ts';
import { parseNamespaceScope } from '../kube/scope.ts';
import { ORDERINGS, type Ordering } from '../contract/ordering.ts';

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
    group, version, kind, plural: pluralOf(kind), namespaced: options.namespaced, owns,
    ...(related.length > 0 ? { watches: related } : {}),
    ...(ordering === 'per-key' ? { ordering } : {}),
  };
  checkWatchedOnce(project, api);
  if (existing && !options.force) {
    throw new ScaffoldError(`this project already has kind ${kind} (${existing.group}/${existing.version}); pass --force to regenerate its files`);
  }
  const apis = existing ? project.apis.map((a) => (a.kind === kind ? api : a)) : [...project.apis, api];
  const next: ProjectFile = withScope({ ...project, apis }, options.namespaces);
  const create = (path: string, content: string): FileChange => ({ type: 'create', path, content });
  const generated = (path: string, content: string): FileChange => ({ type: 'generated', path, content });
  const file = kebab(kind);
  const changes: FileChange[] = [
    create(`src/${file}/types.ts`, typesModule(api)),
    create(`src/${file}/controller.ts`, controllerModule(api)),
    create(`functions/${file}.ts`, functionModule(api)),
    create(`infra/crds/${api.plural}.${group}.yaml`, crdYaml(api)),
    create(`infra/rbac/${file}-function.yaml`, functionRbac(next, api)),
    create(`infra/samples/${file}.yaml`, sample(api, sampleNamespace(next))),
    create(`events/${file}-added.json`, sampleEvent(project.name, api, sampleNamespace(next))),
    create(`test/${file}.test.ts`, integrationTest(next, api)),
    generated(PROJECT_FILE, renderProjectFile(next)),
    generated('infra/forwarder/watches.yaml', forwarderWatches(next, current.watches)),
    generated('infra/rbac/forwarder.yaml', forwarderRbac(next)),
  ];
  if (!existing) {
    changes.push(
      { type: 'insert', path: 'serverless.yml', marker: 'functions', content: serverlessFunction(api, ordering) },
      { type: 'insert', path: 'serverless.yml', marker: 'resources', content: serverlessQueues(api, ordering) },
      { type: 'insert', path: 'serverless.yml', marker: 'outputs', content: serverlessOutputs(api) },
      { type: 'insert', path: 'src/resources.ts', marker: 'resource-imports', content: `import { ${kind}Resource } from './${file}/types.ts';` },
      { type: 'insert', path: 'src/resources.ts', marker: 'resources', content: `{ definition: ${kind}Resource, source: 'src/${file}/types.ts' },` },
      { type: 'insert', path: 'serverless.yml', marker: 'resync-queues', content: `${resyncQueueVariable(kind)}: !Ref ${kind}WorkQueue` },
      { type: 'insert', path: 'functions/resync.ts', marker: 'resync-imports', content: `import { ${constant(kind)} } from '../src/${file}/types.ts';` },
      { type: 'insert', path: 'functions/resync.ts', marker: 'resync-kinds', content: `{ kind: ${constant(kind)}, queueUrlVariable: '${resyncQueueVariable(kind)}' },` },
    );
  }
  return { api, project: next, changes };
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

/**
 * A ClusterRole and its ClusterRoleBinding as YAML, or — in namespace-scoped mode — a Role and
 * RoleBinding per namespace (kube/rbac-scope.ts; the project's cluster-scoped kinds stay in a
 * ClusterRole of their own).
 */
function rbacYaml(project: ProjectFile, role: RbacObject, binding: RbacObject): string {
  const clusterKinds = project.apis.filter((a) => !a.namespaced).map((a) => ({ group: a.group, plural: a.plural }));
  return namespacedRbac([role, binding], project.namespaces ?? [], clusterScopedOf(clusterKinds)).map((o) => stringify(o)).join('---\n');
}

/** The forwarder watches a kind once, owned or related: a kind the project owns cannot also be related (and the other way round). */
function checkWatchedOnce(project: ProjectFile, api: ApiEntry): void {
  const others = project.apis.filter((a) => a.kind !== api.kind);
  const ownedBy = (k: KindRef) => [api, ...others].find((a) => a.owns.some((o) => o.kind === k.kind && o.apiVersion === k.apiVersion));
  const relatedBy = (k: KindRef) => [api, ...others].find((a) => (a.watches ?? []).some((o) => o.kind === k.kind && o.apiVersion === k.apiVersion));
  for (const k of api.watches ?? []) {
    const owner = ownedBy(k);
    if (owner) throw new ScaffoldError(`--watches ${k.kind}: ${owner.kind} owns ${k.kind} already, and the forwarder watches a kind once (owned or related); drop it from --watches or --owns`);
  }
  for (const k of api.owns) {
    const reader = relatedBy(k);
    if (reader) throw new ScaffoldError(`--owns ${k.kind}: ${reader.kind} watches ${k.kind} as a related kind already, and the forwarder watches a kind once (owned or related)`);
  }
}

/** The environment variable that gives the resync function a kind's work queue URL: `WEB_APP_QUEUE_URL`. */
export function resyncQueueVariable(kind: string): string {
  return `${constant(kind)}_QUEUE_URL`;
}

/** Schema of a fresh kind, the same as the generated types.ts (so its CRD can be rendered now). */
function stubResource(api: ApiEntry) {
  return defineResource({
    group: api.group,
    version: api.version,
    kind: api.kind,
    plural: api.plural,
    scope: api.namespaced ? 'Namespaced' : 'Cluster',
    description: `${api.kind} is the Schema for the ${api.plural} API.`,
    spec: required(object(
      {
        message: string({ maxLength: 256, description: 'An example field: replace it with the desired state of your kind.' }),
        ...Object.fromEntries((api.watches ?? []).map((w) => [refField(w), refSchema(w)])),
      },
      { description: `Desired state of the ${api.kind}.` },
    )),
    status: object(
      {
        observedGeneration: integer({ format: 'int64', minimum: 0, description: 'The .metadata.generation this status was computed from.' }),
        conditions: conditions({ description: 'Ready (and any others), as metav1.Condition.' }),
      },
      { description: `Observed state of the ${api.kind}.` },
    ),
    printerColumns: [
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

/** The spec field that names a related object: `configMapRef` for ConfigMap. */
export function refField(kind: KindRef): string {
  return `${camel(kind.kind)}Ref`;
}

const refDescription = (kind: KindRef) => `The ${kind.kind} (same namespace) this object reads; a change of it reconciles this object.`;

/** The schema of a `spec.<kind>Ref`: a name, in the object's own namespace. */
function refSchema(kind: KindRef) {
  return object({ name: required(string({ minLength: 1, maxLength: 253, description: `Name of the ${kind.kind}.` })) }, { description: refDescription(kind) });
}

/** The same schema as source text, for the generated types.ts. */
function refSchemaSource(kind: KindRef): string {
  return `    ${refField(kind)}: object({ name: required(string({ minLength: 1, maxLength: 253, description: 'Name of the ${kind.kind}.' })) }, { description: '${refDescription(kind)}' }),\n`;
}

function crdYaml(api: ApiEntry): string {
  const file = kebab(api.kind);
  return renderCrd({ definition: stubResource(api), source: `src/${file}/types.ts` });
}

function typesModule(api: ApiEntry): string {
  const k = api.kind;
  return `/**
 * The ${k} resource (${api.group}/${api.version}, ${api.namespaced ? 'namespaced' : 'cluster-scoped'}): its spec and status
 * schemas, from which come both the TypeScript type and the CRD (\`operless crd\` writes
 * infra/crds/${api.plural}.${api.group}.yaml). Describe the desired state in the spec; the
 * controller reports what it observed in the status.
 */
import { conditions, defineResource, integer, object, required, string, type Infer, type ResourceOf } from 'operless/crd';

export const ${camel(k)}Spec = required(object(
  {
    // TODO: the desired state of a ${k}. Fields: string, integer, boolean, oneOf, array, map,
    // object, quantity, resourceRequirements; required(...) or a default makes a field present.
    message: string({ maxLength: 256, description: 'An example field: replace it with the desired state of your kind.' }),
${(api.watches ?? []).map(refSchemaSource).join('')}  },
  { description: 'Desired state of the ${k}.' },
));

export const ${camel(k)}Status = object(
  {
    observedGeneration: integer({ format: 'int64', minimum: 0, description: 'The .metadata.generation this status was computed from.' }),
    conditions: conditions({ description: 'Ready (and any others), as metav1.Condition.' }),
  },
  { description: 'Observed state of the ${k}.' },
);

export type ${k}Spec = Infer<typeof ${camel(k)}Spec>;
export type ${k}Status = Infer<typeof ${camel(k)}Status>;

export const ${k}Resource = defineResource({
  group: '${api.group}',
  version: '${api.version}',
  kind: '${k}',
  plural: '${api.plural}',
  scope: '${api.namespaced ? 'Namespaced' : 'Cluster'}',
  description: '${k} is the Schema for the ${api.plural} API.',
  spec: ${camel(k)}Spec,
  status: ${camel(k)}Status,
  printerColumns: [
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
});

export type ${k} = ResourceOf<typeof ${k}Resource>;

/** How controllers and clients address ${k} objects. */
export const ${constant(k)} = ${k}Resource.kindRef;
`;
}

function kindRefLiteral(ref: KindRef): string {
  return `{ apiVersion: '${ref.apiVersion}', kind: '${ref.kind}', plural: '${ref.plural}', namespaced: ${ref.namespaced} }`;
}

function controllerModule(api: ApiEntry): string {
  const k = api.kind;
  const refs = [...api.owns, ...(api.watches ?? []).filter((w) => !api.owns.some((o) => o.kind === w.kind))];
  // Built-in kinds come typed from operless/kinds (their objects are checked against the model); the project's own kinds as literals.
  const builtin = refs.filter(isBuiltinKind);
  const custom = refs.filter((ref) => !isBuiltinKind(ref));
  const owned = [
    ...(builtin.length > 0 ? [`import { ${builtin.map((ref) => constant(ref.plural)).join(', ')} } from 'operless/kinds';`] : []),
    ...custom.map((ref) => `export const ${constant(ref.plural)}: KindRef = ${kindRefLiteral(ref)};`),
  ].join('\n');
  const watches = (api.watches ?? []).map((w) => `{ kind: ${constant(w.plural)}, map: { field: 'spec.${refField(w)}.name' } }`).join(', ');
  const watchNote = (api.watches ?? []).map((w) => `  // ${w.kind} object.spec.${refField(w)}?.name (same namespace) is read here; its changes reconcile this ${k}
  // (\`Related\` messages), e.g. const ${camel(w.kind)} = ref ? await ctx.client.get(${constant(w.plural)}, ref.name, object.metadata.namespace) : undefined;\n`).join('');
  const ownsList = api.owns.map((ref) => constant(ref.plural)).join(', ');
  const example = api.owns[0];
  const exampleNote = example
    ? `  // TODO: create or update the ${api.owns.map((o) => o.kind).join(', ')} this ${k} owns, by server-side apply with a
  // controller owner reference (changes to them come back here as \`Owned\` messages), e.g.
  //   await ctx.applyOwned(${constant(example.plural)}, { apiVersion: '${example.apiVersion}', kind: '${example.kind}', metadata: { name: object.metadata.name${example.namespaced && api.namespaced ? ', namespace: object.metadata.namespace' : ''} }, ... });\n`
    : '  // TODO: make the cluster match object.spec (ctx.client reads and writes; ctx.applyOwned for children).\n';
  const previewNote = `  // Anything outside the cluster (an external API, a payment, an email) is yours to guard:
  // \`operless preview\` runs this reconcile with every cluster write a dry run, but cannot undo a call, e.g.
  //   if (!ctx.preview) await billing.ensureAccount(object.metadata.name);\n`;
  return `/**
 * The ${k} controller. Each reconcile reads the live ${k} (never a cached copy), makes the
 * cluster match its spec, and reports the result in status. Return done() when finished,
 * requeueAfter(seconds) to look again later; throw to retry with backoff (TerminalError: give up).
 *
 * Idempotent: running it twice, or twice at once, must converge on the same objects.
 */
import { done, setCondition, type ControllerSpec,${custom.length > 0 ? ' type KindRef,' : ''} type ReconcileContext, type ReconcileResult } from 'operless';
import { ${constant(k)}, type ${k} } from './types.ts';
${owned ? `\n${owned}\n` : ''}
export const READY = 'Ready';

export const ${camel(k)}Controller: ControllerSpec<${k}> = {
  ...${constant(k)},
  owns: [${ownsList}],${watches ? `\n  watches: [${watches}],` : ''}
  reconcile: reconcile${k},
};

export async function reconcile${k}(object: ${k}, ctx: ReconcileContext<${k}>): Promise<ReconcileResult> {
${exampleNote}${watchNote}${previewNote}  const generation = object.metadata.generation;
  const conditions = setCondition(object.status?.conditions, {
    type: READY,
    status: 'True',
    reason: 'Reconciled',
    message: \`${k} \${object.metadata.name} is reconciled\`,
    observedGeneration: generation,
  });
  // Written through the status subresource, only when it changed.
  if (await ctx.updateStatus({ observedGeneration: generation, conditions })) ctx.log.info('status updated', { ready: true });
  return done();
}
`;
}

function functionModule(api: ApiEntry): string {
  const file = kebab(api.kind);
  return `/**
 * Lambda entry point: the ${api.kind} reconcile function, fed by its SQS work queue
 * (serverless.yml). \`controllers\` is exported beside \`handler\` so \`operless dev\` knows what
 * this function reconciles and owns (the forwarder's watches).
 */
import { defineController, toSqsHandler } from 'operless';
import { ${camel(api.kind)}Controller } from '../src/${file}/controller.ts';

export const controllers = [defineController(${camel(api.kind)}Controller)];
export const handler = toSqsHandler(controllers);
`;
}

interface RbacRule { apiGroups: string[]; resources: string[]; verbs: string[] }

function functionRbac(projectFile: ProjectFile, api: ApiEntry): string {
  const project = projectFile.name;
  const name = `${project}-${kebab(api.kind)}`;
  const rules: RbacRule[] = [
    { apiGroups: [api.group], resources: [api.plural], verbs: ['get', 'list', 'watch', 'patch'] },
    { apiGroups: [api.group], resources: [`${api.plural}/status`], verbs: ['get', 'patch', 'update'] },
    { apiGroups: [api.group], resources: [`${api.plural}/finalizers`], verbs: ['update'] },
    ...api.owns.map((o) => ({ apiGroups: [apiGroup(o.apiVersion)], resources: [o.plural], verbs: ['get', 'list', 'create', 'patch', 'delete'] })),
    ...(api.watches ?? []).filter((w) => !api.owns.some((o) => o.kind === w.kind)).map((w) => ({ apiGroups: [apiGroup(w.apiVersion)], resources: [w.plural], verbs: ['get'] })),
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'get', 'patch'] },
  ];
  const labels = { 'app.kubernetes.io/name': name, 'app.kubernetes.io/managed-by': 'operless' };
  return `# RBAC for the ${api.kind} reconcile function: the primary (read, finalizers, status), the
# kinds it owns (server-side apply: create + patch), and Events; the scheduled resync function
# (same IAM role) lists the primary. Narrow it to what your controller really uses.
#
# The functions' IAM role is mapped to the Kubernetes group \`${groupName(project, api)}\` (an EKS
# access entry); outside EKS, bind the group or the user in your kubeconfig.${scopeNote(projectFile)}
---
${rbacYaml(projectFile, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels }, rules }, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: groupName(project, api) }],
  })}`;
}

/** The header line of RBAC generated for a namespace scope. */
function scopeNote(project: ProjectFile): string {
  return project.namespaces?.length ? `\n# Namespace-scoped (operless.json "namespaces": ${project.namespaces.join(', ')}): a Role per namespace.` : '';
}

/** The Kubernetes group a kind's function identity is bound to. */
export function groupName(project: string, api: ApiEntry): string {
  return `${project}:${kebab(api.kind)}`;
}

/** The watches of the one forwarder that serves every kind of the project. */
function watches(project: ProjectFile): { primaries: KindRef[]; owned: KindRef[]; related: RelatedEntry[] } {
  const owned = new Map<string, KindRef>();
  for (const api of project.apis) for (const o of api.owns) owned.set(`${o.apiVersion}/${o.kind}`, o);
  const related = new Map<string, RelatedEntry>();
  for (const api of project.apis) {
    for (const w of api.watches ?? []) {
      const key = `${w.apiVersion}/${w.kind}`;
      const entry = related.get(key) ?? { ...w, for: [] };
      entry.for.push({ apiVersion: `${api.group}/${api.version}`, kind: api.kind, field: `spec.${refField(w)}.name` });
      related.set(key, entry);
    }
  }
  return { primaries: project.apis.map(kindRefOf), owned: [...owned.values()], related: [...related.values()] };
}

/** A related kind in the forwarder's watches: the kind, and each primary with the field that names it. */
type RelatedEntry = KindRef & { for: { apiVersion: string; kind: string; field: string }[] };

/**
 * The queue URL of each kind in an existing watches.yaml (what the user set), by kind. Pure;
 * an unreadable file yields none (everything is regenerated with placeholders).
 */
export function queueUrlsOf(watchesYaml: string | undefined): Map<string, string> {
  const urls = new Map<string, string>();
  if (!watchesYaml) return urls;
  try {
    const doc = parse(watchesYaml) as { primaries?: { kind?: unknown; queueUrl?: unknown }[] } | null;
    for (const p of doc?.primaries ?? []) if (typeof p?.kind === 'string' && typeof p.queueUrl === 'string' && p.queueUrl) urls.set(p.kind, p.queueUrl);
  } catch {
    // not YAML any more: regenerate
  }
  return urls;
}

/** A placeholder queue URL: the name serverless.yml gives the kind's work queue (stage dev; `.fifo` with per-key ordering), in a placeholder account. */
export function placeholderQueueUrl(project: string, kind: string, ordering: Ordering = 'unordered'): string {
  return `https://sqs.us-east-1.amazonaws.com/123456789012/${project}-dev-${kebab(kind)}${ordering === 'per-key' ? '.fifo' : ''}`;
}

function forwarderWatches(project: ProjectFile, currentYaml?: string): string {
  const { primaries, owned, related } = watches(project);
  const urls = queueUrlsOf(currentYaml);
  const queueUrlOf = (p: KindRef): string => {
    const api = project.apis.find((a) => a.kind === p.kind);
    const ordering = api ? orderingOf(api) : 'unordered';
    const kept = urls.get(p.kind);
    const otherPlaceholder = placeholderQueueUrl(project.name, p.kind, ordering === 'per-key' ? 'unordered' : 'per-key');
    return kept && kept !== otherPlaceholder ? kept : placeholderQueueUrl(project.name, p.kind, ordering);
  };
  return `# Generated by \`operless create api\` from operless.json: what the forwarder watches, and
# which queue each kind's messages go to (messages about an owned object go to its owner's
# queue; about a related object, to the queues of the primaries that name it). Set each queueUrl to that kind's queue (the stack output <Kind>WorkQueueUrl); those
# edits are kept when \`operless create api\` regenerates this file. Anything else: values.yaml.
# A kind created with --ordering per-key has a FIFO work queue: its URL ends in .fifo, and the
# forwarder then sends each object's messages in one message group (its key).
${stringify({ ...(project.namespaces?.length ? { namespaces: [...project.namespaces] } : {}), primaries: primaries.map((p) => ({ ...p, queueUrl: queueUrlOf(p) })), owned: owned.map((o) => ({ ...o })), ...(related.length > 0 ? { related } : {}) })}`;
}

function forwarderRbac(project: ProjectFile): string {
  const { primaries, owned, related } = watches(project);
  const rules = new Map<string, RbacRule>();
  for (const k of [...primaries, ...owned, ...related]) {
    const group = apiGroup(k.apiVersion);
    const rule = rules.get(group) ?? { apiGroups: [group], resources: [], verbs: ['get', 'list', 'watch'] };
    if (!rule.resources.includes(k.plural)) rule.resources.push(k.plural);
    rules.set(group, rule);
  }
  const name = `${project.name}-forwarder`;
  const labels = { 'app.kubernetes.io/name': name, 'app.kubernetes.io/managed-by': 'operless' };
  return `# Generated by \`operless create api\` from operless.json: the forwarder reads (get, list,
# watch) exactly what it watches, nothing else. For installs without the Helm chart (which
# renders the same rules from the watches); bind it to the forwarder's ServiceAccount.${scopeNote(project)}
---
${rbacYaml(project, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels }, rules: [...rules.values()] }, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: 'operless-system' }],
  })}`;
}

function sampleName(api: ApiEntry): string {
  return `${kebab(api.kind)}-sample`;
}

/** Where the sample lives: `default`, or the first namespace of a namespace-scoped project. */
function sampleNamespace(project: ProjectFile): string {
  return project.namespaces?.[0] ?? 'default';
}

function sample(api: ApiEntry, namespace: string): string {
  return `# A sample ${api.kind}: \`kubectl apply -f infra/samples/${kebab(api.kind)}.yaml\`, then
# \`kubectl get ${api.plural}\` and \`kubectl wait --for=condition=Ready ${api.kind.toLowerCase()}/${sampleName(api)}\`.
${stringify({
    apiVersion: `${api.group}/${api.version}`,
    kind: api.kind,
    metadata: { name: sampleName(api), ...(api.namespaced ? { namespace } : {}) },
    spec: { message: 'hello' },
  })}`;
}

function sampleEvent(project: string, api: ApiEntry, namespace: string): string {
  const body = {
    v: 1, cluster: 'default', apiVersion: `${api.group}/${api.version}`, kind: api.kind,
    ...(api.namespaced ? { namespace } : {}),
    name: sampleName(api), reason: 'Added', observedAt: 1767225600000, attempt: 0,
  };
  const event = {
    Records: [{
      messageId: '00000000-0000-4000-8000-000000000001',
      receiptHandle: 'sample-receipt-handle',
      body: JSON.stringify(body),
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: '1767225600100', SenderId: 'operless-forwarder', ApproximateFirstReceiveTimestamp: '1767225600120' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:us-east-1:123456789012:${project}-dev-${kebab(api.kind)}`,
      awsRegion: 'us-east-1',
    }],
  };
  return `${JSON.stringify(event, null, 2)}\n`;
}

function serverlessFunction(api: ApiEntry, ordering: Ordering): string {
  const file = kebab(api.kind);
  // per-key: the FIFO work queue takes no delayed message; requeues wait in the delay queue,
  // whose batches the same handler moves into the work queue when due.
  const delayEnv = ordering === 'per-key' ? `\n    OPERLESS_DELAY_QUEUE_URL: !Ref ${api.kind}DelayQueue` : '';
  const delayEvent = ordering === 'per-key'
    ? `\n    - sqs:\n        arn: !GetAtt ${api.kind}DelayQueue.Arn\n        batchSize: 10\n        functionResponseType: ReportBatchItemFailures\n        # The mover's invocations count against the function's concurrency too.\n        maximumConcurrency: \${param:maximumConcurrency}`
    : '';
  return `${camel(api.kind)}:
  handler: functions/${file}.handler
  description: Reconciles ${api.kind} objects (${api.group}/${api.version}) from its work queue
  # The work queue's visibility timeout stays >= 6 x timeout + maximumBatchingWindow.
  timeout: 60
  environment:
    OPERLESS_QUEUE_URL: !Ref ${api.kind}WorkQueue
    OPERLESS_DLQ_URL: !Ref ${api.kind}DeadLetterQueue${delayEnv}
  events:
    - sqs:
        arn: !GetAtt ${api.kind}WorkQueue.Arn
        batchSize: 10
        # 0: invoke as soon as a record is there (a window adds up to its length to every
        # isolated change's lag); same-key events in one batch are still reconciled once.
        maximumBatchingWindow: 0
        functionResponseType: ReportBatchItemFailures
        maximumConcurrency: \${param:maximumConcurrency}${delayEvent}
`;
}

function serverlessQueues(api: ApiEntry, ordering: Ordering): string {
  const file = kebab(api.kind);
  const perKey = ordering === 'per-key';
  const suffix = perKey ? '.fifo' : '';
  const fifo = perKey ? '\n    FifoQueue: true' : '';
  const fifoWork = perKey ? '\n    # One reconcile of a key at a time: message group = object key (high-throughput FIFO).\n    FifoQueue: true\n    DeduplicationScope: messageGroup\n    FifoThroughputLimit: perMessageGroupId' : '';
  const delay = perKey ? `${api.kind}DelayQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}-delay
    VisibilityTimeout: 361
    MessageRetentionPeriod: 1209600
    SqsManagedSseEnabled: true
    RedrivePolicy:
      deadLetterTargetArn: !GetAtt ${api.kind}DelayDeadLetterQueue.Arn
      maxReceiveCount: 5
${api.kind}DelayDeadLetterQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}-delay-dlq
    MessageRetentionPeriod: 1209600
    SqsManagedSseEnabled: true
# What reaches the delay queue reaches the work queue through the mover: only the functions'
# role may send to it, whatever another identity's policy grants.
${api.kind}DelayQueueSendPolicy:
  Type: AWS::SQS::QueuePolicy
  Properties:
    Queues: [!Ref ${api.kind}DelayQueue]
    PolicyDocument:
      Version: '2012-10-17'
      Statement:
        - Sid: OnlyFunctionsSend
          Effect: Deny
          Principal: '*'
          Action: [sqs:SendMessage]
          Resource: !GetAtt ${api.kind}DelayQueue.Arn
          Condition:
            ArnNotEquals:
              aws:PrincipalArn: [!GetAtt IamRoleLambdaExecution.Arn]
` : '';
  return `${delay}${api.kind}DeadLetterQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}-dlq${suffix}${fifo}
    MessageRetentionPeriod: 1209600 # 14 days: time to inspect and redrive
    SqsManagedSseEnabled: true
${api.kind}WorkQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}${suffix}${fifoWork}
    VisibilityTimeout: 361 # 6 x 60 s function timeout + 1 s batching window
    MessageRetentionPeriod: 345600 # 4 days
    SqsManagedSseEnabled: true
    RedrivePolicy:
      deadLetterTargetArn: !GetAtt ${api.kind}DeadLetterQueue.Arn
      maxReceiveCount: 5
`;
}

function serverlessOutputs(api: ApiEntry): string {
  return `${api.kind}WorkQueueUrl:
  Description: Queue the forwarder sends ${api.kind} messages to
  Value: !Ref ${api.kind}WorkQueue
${api.kind}DeadLetterQueueUrl:
  Value: !Ref ${api.kind}DeadLetterQueue
`;
}

function integrationTest(projectFile: ProjectFile, api: ApiEntry): string {
  const project = projectFile.name;
  const namespace = sampleNamespace(projectFile);
  const k = api.kind;
  const file = kebab(k);
  const scope = projectFile.namespaces ?? [];
  return `/**
 * The ${k} controller against a real kube-apiserver + etcd (the Operless test environment,
 * binaries cached in ~/.cache/operless): the CRD installs, the sample applies, and one
 * reconcile of it — run by the Operless runtime under the function's own RBAC — sets the Ready
 * condition and asks for nothing more.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { reconcileTester, startControlPlane, type ControlPlane } from 'operless/testing';
import { ${camel(k)}Controller } from '../src/${file}/controller.ts';

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crds: ['infra/crds/${api.plural}.${api.group}.yaml'] });
});
after(async () => {
  await cp?.stop();
});

test('reconciling the sample ${k}: Ready=True with observedGeneration, nothing requeued', async () => {
${scope.map((n) => `  await cp.kubectl(['create', 'namespace', '${n}']); // namespace-scoped mode: its Roles live there\n`).join('')}  for (const file of ['infra/rbac/${file}-function.yaml', 'infra/samples/${file}.yaml']) {
    const applied = await cp.kubectl(['apply', '-f', file]);
    assert.equal(applied.code, 0, applied.stderr);
  }
  // As the function: a user in the group its RBAC binds.
  const tester = await reconcileTester(cp, { user: '${file}-function', groups: ['${groupName(project, api)}'] });
  const run = await tester.reconcile(${camel(k)}Controller, { ${api.namespaced ? `namespace: '${namespace}', ` : ''}name: '${file}-sample' });
  assert.deepEqual(run.result, { type: 'done' }, run.logs.join('\\n'));
  assert.deepEqual(run.followUp, { type: 'none' }, 'nothing is requeued or dead-lettered');
  const ready = run.object?.status?.conditions?.find((c) => c.type === 'Ready');
  assert.equal(ready?.status, 'True', JSON.stringify(run.object?.status));
  assert.equal(ready?.observedGeneration, run.object?.metadata.generation);
});
`;
}
