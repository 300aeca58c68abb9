/**
 * Least privilege, proven on a REAL kube-apiserver:
 *
 * - Each component's identity gets exactly the RBAC the project ships — the function:
 *   `infra/rbac/memcached-function.yaml` bound to the group `operless:memcached` (a client
 *   certificate user in that group, as an EKS access entry maps the function's IAM role);
 *   the forwarder: the ServiceAccount and RBAC of the rendered manifests
 *   (`infra/forwarder/manifests/operless-forwarder.yaml`), with a real ServiceAccount token.
 * - A permission matrix asked by each identity itself (`SelfSubjectAccessReview`, created
 *   with the identity's own kubeconfig) over many resources × verbs × namespaces is printed
 *   and must equal what the shipped rules allow — no more (nothing inherited from anywhere
 *   else) and no less — and a hand-written list of must-deny and must-allow checks guards
 *   against a rule file that quietly grows (secrets, configmaps, deletes, other leases, ...).
 * - Namespace-scoped operation: the same two identities with the RBAC of namespace-scoped
 *   mode (the chart rendered with `namespaces`; the function's rules as `operless rbac
 *   --namespaces` rewrites them) do their work in the listed namespaces and are refused
 *   everything outside them — other namespaces and cluster-wide lists (reviews and real requests).
 * - Container hardening: the rendered Deployment's pod runs as non-root with a read-only root
 *   filesystem, drops ALL capabilities, no privilege escalation, seccomp RuntimeDefault, no
 *   host namespaces, and a Pod made from its template is admitted by the API server's real
 *   Pod Security admission in a namespace that enforces `restricted` (a deliberately weakened
 *   copy is rejected, so the admission really ran).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { startControlPlane, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { MANIFESTS_PATH } from '../../src/build/forwarder-chart.ts';
import {
  applyForwarderIdentity,
  applyMemcachedFunctionIdentity,
  applyScopedForwarderIdentity,
  applyScopedFunctionIdentity,
  MEMCACHED_FUNCTION_RBAC,
  SCOPED_FUNCTION_GROUP,
} from '../support/identities.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const CRD = join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml');
const FUNCTION_RBAC = MEMCACHED_FUNCTION_RBAC;

type Obj = Record<string, any>;
const docs = (path: string): Obj[] =>
  parseAllDocuments(readFileSync(path, 'utf8'))
    .map((d) => d.toJS() as Obj)
    .filter((o) => o && typeof o === 'object');

let cp: ControlPlane;
let fn: Identity;
let fwd: Identity;
const manifests = docs(MANIFESTS_PATH);

before(async () => {
  cp = await startControlPlane({ crds: [CRD] });
  fn = await applyMemcachedFunctionIdentity(cp);
  // The forwarder's namespace, ServiceAccount and RBAC exactly as shipped.
  assert.equal(manifests.filter((o) => /Role/.test(o.kind)).length, 4, 'the manifests carry a ClusterRole, a Role and their bindings');
  fwd = (await applyForwarderIdentity(cp)).identity;
  for (const ns of ['team-a', 'team-b', 'kube-system']) await cp.kubectl(['create', 'namespace', ns]);
});
after(async () => {
  await cp?.stop();
});

// ---- the matrix -------------------------------------------------------------------------

interface Attr {
  group: string;
  resource: string;
  subresource?: string;
  verb: string;
  namespace?: string;
  name?: string;
}
const label = (a: Attr) =>
  `${a.verb} ${a.group ? `${a.resource}.${a.group}` : a.resource}${a.subresource ? `/${a.subresource}` : ''}${a.name ? ` "${a.name}"` : ''} ${a.namespace ? `in ${a.namespace}` : '(all namespaces / cluster)'}`;

async function can(kubeConfig: KubeConfig, a: Attr): Promise<boolean> {
  const api = kubeConfig.makeApiClient(AuthorizationV1Api);
  const review = await api.createSelfSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: {
        resourceAttributes: {
          group: a.group,
          resource: a.resource,
          verb: a.verb,
          ...(a.subresource ? { subresource: a.subresource } : {}),
          ...(a.namespace ? { namespace: a.namespace } : {}),
          ...(a.name ? { name: a.name } : {}),
        },
      },
    },
  });
  return review.status?.allowed === true;
}

/** What the shipped rules grant (ClusterRole rules apply everywhere; Role rules in their namespace). */
function granted(rules: { rules: Obj[]; namespace?: string }[], a: Attr): boolean {
  const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return rules.some(
    ({ rules: list, namespace }) =>
      (namespace === undefined || namespace === a.namespace) &&
      list.some(
        (r) =>
          (r.apiGroups ?? []).some((g: string) => g === a.group || g === '*') &&
          (r.resources ?? []).some((x: string) => x === res || x === '*') &&
          (r.verbs ?? []).some((v: string) => v === a.verb || v === '*') &&
          (!r.resourceNames || (a.name !== undefined && r.resourceNames.includes(a.name))),
      ),
  );
}

const RESOURCES: [string, string, string?][] = [
  ['cache.example.com', 'memcacheds'],
  ['cache.example.com', 'memcacheds', 'status'],
  ['cache.example.com', 'memcacheds', 'finalizers'],
  ['apps', 'deployments'],
  ['apps', 'deployments', 'status'],
  ['apps', 'statefulsets'],
  ['', 'services'],
  ['', 'pods'],
  ['', 'pods', 'exec'],
  ['events.k8s.io', 'events'],
  ['', 'events'],
  ['', 'secrets'],
  ['', 'configmaps'],
  ['', 'serviceaccounts'],
  ['', 'serviceaccounts', 'token'],
  ['coordination.k8s.io', 'leases'],
  ['', 'namespaces'],
  ['', 'nodes'],
  ['rbac.authorization.k8s.io', 'clusterroles'],
  ['rbac.authorization.k8s.io', 'rolebindings'],
  ['apiextensions.k8s.io', 'customresourcedefinitions'],
];
const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const NAMESPACES = [undefined, 'default', 'team-a', 'operless', 'kube-system'];

function universe(): Attr[] {
  const all: Attr[] = [];
  for (const [group, resource, subresource] of RESOURCES) {
    for (const verb of VERBS) {
      for (const namespace of NAMESPACES) all.push({ group, resource, ...(subresource ? { subresource } : {}), verb, ...(namespace ? { namespace } : {}) });
    }
  }
  // Named leases: the forwarder's own one and someone else's.
  for (const verb of ['get', 'update', 'patch', 'delete']) {
    for (const name of ['operless-forwarder', 'kube-controller-manager', 'someone-else']) {
      for (const namespace of ['operless', 'kube-system']) all.push({ group: 'coordination.k8s.io', resource: 'leases', verb, namespace, name });
    }
  }
  return all;
}

function rulesOf(objs: Obj[], subject: (o: Obj) => boolean): { rules: Obj[]; namespace?: string }[] {
  const bindings = objs.filter((o) => /RoleBinding$/.test(o.kind) && (o.subjects ?? []).some(subject));
  return bindings.map((b) => {
    const role = objs.find(
      (o) =>
        o.kind === b.roleRef.kind && o.metadata.name === b.roleRef.name && (b.kind === 'ClusterRoleBinding' || o.metadata.namespace === b.metadata.namespace),
    );
    assert.ok(role, `the role ${b.roleRef.kind}/${b.roleRef.name} of ${b.metadata.name} is shipped`);
    return { rules: role.rules ?? [], ...(b.kind === 'RoleBinding' ? { namespace: b.metadata.namespace } : {}) };
  });
}

async function matrix(
  who: string,
  kubeConfig: KubeConfig,
  rules: { rules: Obj[]; namespace?: string }[],
): Promise<{ allowed: string[]; mismatches: string[]; check: (a: Attr) => Promise<boolean> }> {
  const all = universe();
  const answers = new Map<Attr, boolean>();
  for (let i = 0; i < all.length; i += 20) {
    const slice = all.slice(i, i + 20);
    const got = await Promise.all(slice.map((a) => can(kubeConfig, a)));
    for (const [j, a] of slice.entries()) answers.set(a, got[j]!);
  }
  const mismatches: string[] = [];
  for (const a of all) {
    const want = granted(rules, a);
    if (answers.get(a) !== want)
      mismatches.push(`${label(a)}: API server says ${answers.get(a) ? 'allowed' : 'denied'}, the shipped rules ${want ? 'grant' : 'do not grant'} it`);
  }
  const allowed = all.filter((a) => answers.get(a)).map(label);
  // A readable matrix: one row per resource, one column per verb (namespace-independent view).
  const rows = RESOURCES.map(([group, resource, sub]) => {
    const name = `${group ? `${resource}.${group}` : resource}${sub ? `/${sub}` : ''}`;
    const cells = VERBS.map((verb) => {
      const where = NAMESPACES.filter((namespace) =>
        all.some(
          (a) =>
            a.group === group && a.resource === resource && a.subresource === sub && a.verb === verb && a.namespace === namespace && !a.name && answers.get(a),
        ),
      );
      if (where.length === NAMESPACES.length) return 'all';
      if (where.length === 0) return '-';
      return where.map((n) => n ?? 'cluster').join('+');
    });
    return `${name.padEnd(44)} ${cells.map((c) => c.padEnd(9)).join(' ')}`;
  });
  console.log(
    `\npermission matrix of ${who} (SelfSubjectAccessReview; "all" = every namespace and cluster-wide, "-" = denied)\n${''.padEnd(44)} ${VERBS.map((v) => v.padEnd(9)).join(' ')}\n${rows.join('\n')}`,
  );
  return { allowed, mismatches, check: (a) => can(kubeConfig, a) };
}

test('the function identity (group operless:memcached) can do exactly what infra/rbac grants', async () => {
  const rules = rulesOf(docs(FUNCTION_RBAC), (s) => s.kind === 'Group' && s.name === 'operless:memcached');
  assert.equal(rules.length, 1);
  const m = await matrix('the Memcached function (infra/rbac/memcached-function.yaml)', fn.kubeConfig, rules);
  assert.deepEqual(m.mismatches, []);
  // Independent of the rule file: what the code needs, and what it must never get.
  const mustAllow: Attr[] = [
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'get', namespace: 'team-a' },
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'list' },
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'patch', namespace: 'team-a' },
    { group: 'cache.example.com', resource: 'memcacheds', subresource: 'status', verb: 'patch', namespace: 'team-a' },
    { group: 'apps', resource: 'deployments', verb: 'create', namespace: 'team-a' },
    { group: 'apps', resource: 'deployments', verb: 'patch', namespace: 'team-a' },
    { group: '', resource: 'services', verb: 'patch', namespace: 'team-a' },
    { group: '', resource: 'pods', verb: 'list', namespace: 'team-a' },
    { group: '', resource: 'configmaps', verb: 'get', namespace: 'team-a' },
    { group: 'events.k8s.io', resource: 'events', verb: 'create', namespace: 'team-a' },
  ];
  const mustDeny: Attr[] = [
    ...['get', 'list', 'watch'].map((verb) => ({ group: '', resource: 'secrets', verb, namespace: 'team-a' })),
    ...['list', 'watch', 'update', 'patch'].map((verb) => ({ group: '', resource: 'configmaps', verb, namespace: 'team-a' })),
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'delete', namespace: 'team-a' },
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'create', namespace: 'team-a' },
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'update', namespace: 'team-a' },
    { group: 'apps', resource: 'deployments', verb: 'delete', namespace: 'team-a' },
    { group: '', resource: 'pods', verb: 'create', namespace: 'team-a' },
    { group: '', resource: 'pods', subresource: 'exec', verb: 'create', namespace: 'team-a' },
    { group: '', resource: 'serviceaccounts', subresource: 'token', verb: 'create', namespace: 'team-a' },
    { group: 'coordination.k8s.io', resource: 'leases', verb: 'get', namespace: 'operless' },
    { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'create' },
    { group: '', resource: 'users', verb: 'impersonate' },
    { group: '*', resource: '*', verb: '*' },
  ];
  for (const a of mustAllow) assert.equal(await m.check(a), true, `the function needs: ${label(a)}`);
  for (const a of mustDeny) assert.equal(await m.check(a), false, `the function must not: ${label(a)}`);
});

test('the forwarder ServiceAccount can do exactly what the rendered manifests grant: read its watches, its one Lease', async () => {
  const sa = manifests.find((o) => o.kind === 'ServiceAccount')!;
  const rules = rulesOf(manifests, (s) => s.kind === 'ServiceAccount' && s.name === sa.metadata.name && s.namespace === sa.metadata.namespace);
  assert.equal(rules.length, 2, 'a ClusterRole (watches) and a Role (its lease)');
  const m = await matrix(`the forwarder (ServiceAccount ${sa.metadata.namespace}/${sa.metadata.name}, rendered manifests)`, fwd.kubeConfig, rules);
  assert.deepEqual(m.mismatches, []);
  const mustAllow: Attr[] = [
    ...['list', 'watch'].flatMap((verb) => [
      { group: 'cache.example.com', resource: 'memcacheds', verb },
      { group: 'apps', resource: 'deployments', verb },
      { group: '', resource: 'services', verb },
      { group: '', resource: 'configmaps', verb },
    ]),
    { group: 'coordination.k8s.io', resource: 'leases', verb: 'create', namespace: 'operless' },
    { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: 'operless', name: 'operless-forwarder' },
  ];
  const mustDeny: Attr[] = [
    ...['get', 'list', 'watch'].map((verb) => ({ group: '', resource: 'secrets', verb })),
    ...['create', 'update', 'patch', 'delete'].map((verb) => ({ group: '', resource: 'configmaps', verb, namespace: 'team-a' })),
    { group: '', resource: 'pods', verb: 'list', namespace: 'operless' },
    ...['create', 'update', 'patch', 'delete'].map((verb) => ({ group: 'cache.example.com', resource: 'memcacheds', verb, namespace: 'team-a' })),
    { group: 'cache.example.com', resource: 'memcacheds', subresource: 'status', verb: 'patch', namespace: 'team-a' },
    { group: 'apps', resource: 'deployments', verb: 'delete', namespace: 'team-a' },
    { group: '', resource: 'services', verb: 'patch', namespace: 'team-a' },
    { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: 'operless', name: 'someone-else' },
    { group: 'coordination.k8s.io', resource: 'leases', verb: 'delete', namespace: 'operless', name: 'operless-forwarder' },
    { group: 'coordination.k8s.io', resource: 'leases', verb: 'create', namespace: 'kube-system' },
    { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: 'kube-system', name: 'kube-controller-manager' },
    { group: '', resource: 'serviceaccounts', subresource: 'token', verb: 'create', namespace: 'operless' },
    { group: '', resource: 'events', verb: 'create', namespace: 'operless' },
    { group: '*', resource: '*', verb: '*' },
  ];
  for (const a of mustAllow) assert.equal(await m.check(a), true, `the forwarder needs: ${label(a)}`);
  for (const a of mustDeny) assert.equal(await m.check(a), false, `the forwarder must not: ${label(a)}`);
});

// ---- namespace-scoped operation ------------------------------------------------------------
// The same identities in namespace-scoped mode (docs/security.md, "Namespace-scoped
// operation"): the chart rendered with `namespaces`, the function's RBAC as `operless rbac
// --namespaces` prints it. Inside the listed namespaces they do their work; everywhere else,
// and cluster-wide, they are refused.

const SCOPE = ['team-a', 'team-b'];
const OUTSIDE = ['default', 'kube-system', 'operless'];

/** Every cluster-wide and other-namespace request of `attrs`' kinds: all must be refused. */
const outsideScope = (attrs: readonly Omit<Attr, 'namespace'>[]): Attr[] => attrs.flatMap((a) => [a, ...OUTSIDE.map((namespace) => ({ ...a, namespace }))]);

test('namespace-scoped: the function identity can do its work in the listed namespaces and nothing outside them', async () => {
  const scoped = await applyScopedFunctionIdentity(cp, SCOPE);
  assert.ok(!scoped.objects.some((o) => /^Cluster/.test(o.kind ?? '')), 'no ClusterRole or ClusterRoleBinding: every rule of the function is namespaced');
  const rules = rulesOf(scoped.objects as Obj[], (s) => s.kind === 'Group' && s.name === SCOPED_FUNCTION_GROUP);
  assert.equal(rules.length, SCOPE.length, 'a RoleBinding per listed namespace');
  const m = await matrix(`the Memcached function, namespace-scoped to ${SCOPE.join(', ')} (operless rbac --namespaces)`, scoped.identity.kubeConfig, rules);
  assert.deepEqual(m.mismatches, []);
  const work: Omit<Attr, 'namespace'>[] = [
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'get' },
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'list' },
    { group: 'cache.example.com', resource: 'memcacheds', verb: 'patch' },
    { group: 'cache.example.com', resource: 'memcacheds', subresource: 'status', verb: 'patch' },
    { group: 'apps', resource: 'deployments', verb: 'create' },
    { group: 'apps', resource: 'deployments', verb: 'patch' },
    { group: '', resource: 'services', verb: 'patch' },
    { group: '', resource: 'pods', verb: 'list' },
    { group: '', resource: 'configmaps', verb: 'get' },
    { group: 'events.k8s.io', resource: 'events', verb: 'create' },
  ];
  for (const namespace of SCOPE)
    for (const a of work) assert.equal(await m.check({ ...a, namespace }), true, `the function needs: ${label({ ...a, namespace })}`);
  for (const a of outsideScope(work)) assert.equal(await m.check(a), false, `outside its namespaces the function must not: ${label(a)}`);
  // The real requests, not only the reviews: a cluster-wide list and another namespace are 403.
  for (const args of [
    ['get', 'memcacheds', '-A'],
    ['get', 'memcacheds', '-n', 'default'],
    ['get', 'deployments', '-n', 'kube-system'],
  ]) {
    const got = await cp.kubectl(args, { as: scoped.identity });
    assert.notEqual(got.code, 0, `kubectl ${args.join(' ')} as the scoped function succeeded`);
    assert.match(got.stderr, /forbidden/i);
  }
  assert.equal((await cp.kubectl(['get', 'memcacheds', '-n', 'team-a'], { as: scoped.identity })).code, 0, 'it lists Memcacheds in a listed namespace');
});

test('namespace-scoped: the forwarder ServiceAccount (chart with namespaces) reads its watches in the listed namespaces only, and its one Lease', async () => {
  const scoped = await applyScopedForwarderIdentity(cp, SCOPE);
  assert.deepEqual(
    scoped.objects.filter((o) => /^Cluster/.test(o.kind)).map((o) => o.kind),
    [],
    'no ClusterRole or ClusterRoleBinding: every watched kind is namespaced',
  );
  const rules = rulesOf(scoped.objects as Obj[], (s) => s.kind === 'ServiceAccount' && s.name === scoped.serviceAccount && s.namespace === scoped.namespace);
  assert.equal(rules.length, SCOPE.length + 1, 'a Role per listed namespace (watches) and one for its Lease');
  const m = await matrix(
    `the forwarder, namespace-scoped to ${SCOPE.join(', ')} (ServiceAccount ${scoped.namespace}/${scoped.serviceAccount})`,
    scoped.identity.kubeConfig,
    rules,
  );
  assert.deepEqual(m.mismatches, []);
  const watches: Omit<Attr, 'namespace'>[] = ['list', 'watch'].flatMap((verb) => [
    { group: 'cache.example.com', resource: 'memcacheds', verb },
    { group: 'apps', resource: 'deployments', verb },
    { group: '', resource: 'services', verb },
    { group: '', resource: 'configmaps', verb },
  ]);
  for (const namespace of SCOPE)
    for (const a of watches) assert.equal(await m.check({ ...a, namespace }), true, `the forwarder needs: ${label({ ...a, namespace })}`);
  for (const a of outsideScope(watches)) assert.equal(await m.check(a), false, `outside its namespaces the forwarder must not: ${label(a)}`);
  assert.equal(
    await m.check({ group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: scoped.namespace, name: scoped.leaseName }),
    true,
    'its own Lease',
  );
  assert.equal(
    await m.check({ group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: 'team-a', name: scoped.leaseName }),
    false,
    'no Lease in a watched namespace',
  );
  const got = await cp.kubectl(['get', 'memcacheds', '-A'], { as: scoped.identity });
  assert.notEqual(got.code, 0, 'a cluster-wide list as the scoped forwarder succeeded');
  assert.match(got.stderr, /forbidden/i);
});

test('neither identity is an admin: both are refused a plain read of a Secret', async () => {
  const secret = await cp.kubectl(['create', 'secret', 'generic', 'planted', '-n', 'team-a', '--from-literal=k=v']);
  assert.equal(secret.code, 0, secret.stderr);
  for (const [who, id] of [
    ['function', fn],
    ['forwarder', fwd],
  ] as const) {
    const got = await cp.kubectl(['get', 'secret', 'planted', '-n', 'team-a'], { as: id });
    assert.notEqual(got.code, 0, `${who} read a Secret`);
    assert.match(got.stderr, /forbidden/i);
  }
});

// ---- container hardening ----------------------------------------------------------------

function podTemplate(): Obj {
  const deploy = manifests.find((o) => o.kind === 'Deployment');
  assert.ok(deploy, 'the manifests carry the forwarder Deployment');
  return deploy.spec.template;
}

test('the rendered forwarder pod is hardened: non-root, read-only root fs, no capabilities, no escalation, RuntimeDefault seccomp, no host access', () => {
  const pod = podTemplate().spec;
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.ok(pod.securityContext.runAsUser > 0, 'a non-zero uid');
  assert.equal(pod.securityContext.seccompProfile?.type, 'RuntimeDefault');
  for (const flag of ['hostNetwork', 'hostPID', 'hostIPC']) assert.notEqual(pod[flag], true, flag);
  assert.ok(!(pod.volumes ?? []).some((v: Obj) => v.hostPath), 'no hostPath volumes');
  for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
    const sc = c.securityContext;
    assert.ok(sc, `${c.name} has a securityContext`);
    assert.equal(sc.runAsNonRoot, true, `${c.name} runAsNonRoot`);
    assert.notEqual(sc.runAsUser, 0, `${c.name} not uid 0`);
    assert.equal(sc.readOnlyRootFilesystem, true, `${c.name} readOnlyRootFilesystem`);
    assert.equal(sc.allowPrivilegeEscalation, false, `${c.name} allowPrivilegeEscalation`);
    assert.notEqual(sc.privileged, true, `${c.name} privileged`);
    assert.deepEqual(sc.capabilities?.drop, ['ALL'], `${c.name} drops ALL capabilities`);
    assert.deepEqual(sc.capabilities?.add ?? [], [], `${c.name} adds none`);
    assert.equal(sc.seccompProfile?.type, 'RuntimeDefault', `${c.name} seccomp`);
    assert.ok(!(c.ports ?? []).some((p: Obj) => p.hostPort), `${c.name} no hostPort`);
    assert.ok(c.resources?.limits?.memory, `${c.name} has a memory limit`);
    const env = JSON.stringify(c.env ?? []);
    assert.doesNotMatch(env, /AWS_SECRET_ACCESS_KEY|AWS_ACCESS_KEY_ID|AWS_SESSION_TOKEN/, 'no static AWS credentials');
  }
  const ns = manifests.find((o) => o.kind === 'Namespace');
  assert.equal(ns?.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted', 'the shipped namespace enforces restricted');
});

test('Pod Security admission (restricted, enforced) admits the forwarder pod and rejects a weakened copy', async () => {
  const ns = 'psa-restricted';
  const created = await cp.kubectl(['create', 'namespace', ns]);
  assert.equal(created.code, 0, created.stderr);
  const labelled = await cp.kubectl([
    'label',
    'namespace',
    ns,
    'pod-security.kubernetes.io/enforce=restricted',
    'pod-security.kubernetes.io/enforce-version=latest',
    'pod-security.kubernetes.io/warn=restricted',
  ]);
  assert.equal(labelled.code, 0, labelled.stderr);
  const template = podTemplate();
  const pod = (spec: Obj) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'operless-forwarder-psa', namespace: ns, labels: template.metadata?.labels },
      spec: { ...spec, serviceAccountName: undefined },
    });

  const admitted = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: pod(template.spec) });
  assert.equal(admitted.code, 0, `the forwarder pod is rejected by Pod Security (restricted): ${admitted.stderr}`);
  assert.doesNotMatch(admitted.stderr, /PodSecurity|violate/i, 'no Pod Security warnings');

  // The Deployment itself: Pod Security warns on workload templates; there must be no warning.
  const deploy = manifests.find((o) => o.kind === 'Deployment')!;
  const asDeployment = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], {
    input: JSON.stringify({ ...deploy, metadata: { ...deploy.metadata, namespace: ns } }),
  });
  assert.equal(asDeployment.code, 0, asDeployment.stderr);
  assert.doesNotMatch(asDeployment.stderr, /would violate PodSecurity/);

  // Control: the same pod with its hardening removed is refused, so admission really checked it.
  const weakened = structuredClone(template.spec);
  delete weakened.securityContext;
  for (const c of weakened.containers) c.securityContext = { allowPrivilegeEscalation: true, capabilities: { add: ['NET_ADMIN'] } };
  const refused = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: pod(weakened) });
  assert.notEqual(refused.code, 0, 'a pod without the hardening must be refused');
  assert.match(refused.stderr, /violates PodSecurity "restricted/);
  console.log(`\nPod Security "restricted" refused the weakened copy: ${refused.stderr.trim().split('\n')[0]}`);
});
