/**
 * Namespace-scoped installs side by side, and the owned Secret watch, on a REAL kube-apiserver
 * (issue 29, item 11 and the owned Secret watch):
 *
 * - Two releases of the chart with the same release name in two namespaces, each scoped to
 *   its own tenant namespace (webhooks on, and a cluster-scoped primary so a ClusterRole is
 *   rendered): no cluster-scoped object (ClusterRole, ClusterRoleBinding, webhook
 *   configurations) and no Role in a watched namespace is claimed by both — every such name
 *   carries the release's namespace. `helm install` of both succeeds on the API server, and
 *   each webhook configuration's namespaceSelector takes in its own tenant namespace only.
 * - An owned watch of Secrets is scoped like a related one: unscoped, the chart's render fails
 *   naming `owned[0]`; with namespaces the forwarder's ServiceAccount may list Secrets there
 *   and nowhere else (asked of the API server with the SA's own token); and the forwarder
 *   warns at start-up about an unscoped owned Secret watch (a local loop or hand-made config).
 *
 * Uses the cached helm (src/testing/modules), the real control plane and ElasticMQ.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { provision, startBroker, startControlPlane, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { createCertificateAuthority } from '../../src/testing/x509.ts';
import { CHART_DIR, renderChart, runHelm } from '../../src/build/forwarder-chart.ts';
import { startForwarder } from '../../src/forwarder/forwarder.ts';
import { createLogger } from '../../src/observability/log.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';

type Obj = Record<string, any>;
const ROOT = new URL('../../', import.meta.url).pathname;
const CRD = join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml');
const RELEASE = 'operless-forwarder';
const MEMCACHED = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
const TENANT = { apiVersion: 'tenancy.example.com/v1', kind: 'Tenant', plural: 'tenants', namespaced: false };
const SECRET = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
/** Two installs: release namespace → the tenant namespace it is scoped to. */
const INSTALLS = [
  { namespace: 'operator-a', scope: 'team-a' },
  { namespace: 'operator-b', scope: 'team-b' },
] as const;

let helm: string;
let cp: ControlPlane;
let broker: Broker;
let caBundle: string;
const work = mkdtempSync(join(tmpdir(), 'operless-scoped-installs-'));

before(async () => {
  const provisioned = await provision({ targets: ['helm'] });
  assert.ok(provisioned.helm, 'helm is provisioned');
  helm = provisioned.helm;
  [cp, broker] = await Promise.all([startControlPlane({ crds: [CRD] }), startBroker()]);
  for (const ns of [...INSTALLS.flatMap((i) => [i.namespace, i.scope]), 'secrets-op']) assert.equal((await cp.kubectl(['create', 'namespace', ns])).code, 0);
  caBundle = Buffer.from((await createCertificateAuthority('operless-scoped-installs-ca')).certPem).toString('base64');
});
after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

const objectsOf = (text: string): Obj[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null && typeof o === 'object');

const scopedValues = (scope: string) => ({
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  namespaces: [scope],
  primaries: [MEMCACHED, TENANT],
  owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }],
  settings: { webhooks: { enabled: true, functions: { memcached: 'operless-memcached-prod-webhooks' } } },
  webhooks: {
    caBundle,
    resources: [{ alias: 'memcached', apiVersion: MEMCACHED.apiVersion, plural: MEMCACHED.plural, namespaced: true, default: {}, validate: {} }],
  },
});

/** Objects whose name is shared cluster-wide: cluster-scoped ones, and those in a namespace other than the release's. */
const shared = (objects: readonly Obj[], releaseNamespace: string) =>
  objects
    .filter((o) => !o.metadata.namespace || o.metadata.namespace !== releaseNamespace)
    .map((o) => `${o.kind} ${o.metadata.namespace ?? '(cluster)'}/${o.metadata.name}`);

test('two scoped releases of one name in two namespaces claim no common cluster-scoped object, nor a common Role in a watched namespace', async () => {
  const rendered: string[][] = [];
  for (const { namespace, scope } of INSTALLS) {
    const r = await renderChart(helm, { release: RELEASE, namespace, values: scopedValues(scope) });
    assert.equal(r.code, 0, r.stderr);
    const objects = objectsOf(r.stdout);
    const names = shared(objects, namespace);
    assert.ok(
      names.some((n) => n.startsWith('ClusterRole ')) &&
        names.some((n) => n.startsWith('ValidatingWebhookConfiguration ')) &&
        names.some((n) => n.startsWith(`Role ${scope}/`)),
      `the render has a ClusterRole (the cluster-scoped Tenant), webhook configurations and a Role in ${scope}: ${names.join(', ')}`,
    );
    for (const name of names) assert.match(name, new RegExp(`-${namespace}(-|$)`), `${name} carries the release's namespace`);
    rendered.push(names);
  }
  const [a, b] = rendered as [string[], string[]];
  assert.deepEqual(
    a.filter((n) => b.includes(n)),
    [],
    'no object is claimed by both releases',
  );
});

test('both releases install on the API server (helm install), and each webhook configuration intercepts its own tenant namespace only', async () => {
  for (const { namespace, scope } of INSTALLS) {
    const values = join(work, `${namespace}.yaml`);
    writeFileSync(values, stringify(scopedValues(scope)));
    const installed = await runHelm(helm, ['install', RELEASE, CHART_DIR, '--namespace', namespace, '--kubeconfig', cp.kubeconfigPath, '--values', values]);
    assert.equal(installed.code, 0, `helm install in ${namespace}: ${installed.stderr}`);
  }
  for (const kind of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations', 'clusterroles', 'clusterrolebindings']) {
    const got = await cp.kubectl(['get', kind, '-l', 'app.kubernetes.io/part-of=operless', '-o', 'json']);
    assert.equal(got.code, 0, got.stderr);
    const items = (JSON.parse(got.stdout) as { items: Obj[] }).items;
    assert.equal(items.length, INSTALLS.length, `${kind}: one per release (${items.map((i) => i.metadata.name).join(', ')})`);
    if (!kind.endsWith('webhookconfigurations')) continue;
    for (const { namespace, scope } of INSTALLS) {
      const mine = items.find((i) => i.webhooks[0].clientConfig.service.namespace === namespace);
      assert.ok(mine, `${kind}: the configuration calling ${namespace}'s webhook Service`);
      assert.deepEqual(
        mine.webhooks[0].namespaceSelector.matchExpressions,
        [
          { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', namespace] },
          { key: 'kubernetes.io/metadata.name', operator: 'In', values: [scope] },
        ],
        `${kind} of ${namespace}: its tenant namespace only`,
      );
    }
  }
});

const ownedSecretValues = (extra: object) => ({
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [MEMCACHED],
  owned: [{ ...SECRET, ...extra }],
});

test('an unscoped owned Secret watch: the chart refuses to render, naming the watch; a labelSelector renders but keeps the cluster-wide grant (what the docs say)', async () => {
  const r = await renderChart(helm, { values: ownedSecretValues({}) });
  assert.notEqual(r.code, 0, 'the render must fail');
  assert.match(r.stderr, /owned\[0\]: an owned watch of Secrets must set namespaces .* or a labelSelector/);
  const labelled = await renderChart(helm, { values: ownedSecretValues({ labelSelector: 'app.kubernetes.io/managed-by=operless' }) });
  assert.equal(labelled.code, 0, labelled.stderr);
  const clusterRules = objectsOf(labelled.stdout)
    .filter((o) => o.kind === 'ClusterRole')
    .flatMap((o) => o.rules.flatMap((x: { resources: string[] }) => x.resources));
  assert.ok(clusterRules.includes('secrets'), 'RBAC cannot select by label: the ClusterRole names secrets');
});

async function can(kubeConfig: KubeConfig, verb: string, namespace?: string): Promise<boolean> {
  const review = await kubeConfig.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { group: '', resource: 'secrets', verb, ...(namespace ? { namespace } : {}) } },
    },
  });
  return review.status?.allowed === true;
}

test("an owned Secret watch scoped to namespaces: the forwarder ServiceAccount may read Secrets there and nowhere else (real RBAC, the SA's own token)", async () => {
  const values = join(work, 'secrets.yaml');
  writeFileSync(values, stringify({ ...ownedSecretValues({}), namespaces: ['team-a'] }));
  const installed = await runHelm(helm, ['install', 'secrets', CHART_DIR, '--namespace', 'secrets-op', '--kubeconfig', cp.kubeconfigPath, '--values', values]);
  assert.equal(installed.code, 0, installed.stderr);
  const sa = await cp.serviceAccount('secrets-op', 'secrets-operless-forwarder');
  for (const verb of ['get', 'list', 'watch']) {
    assert.equal(await can(sa.kubeConfig, verb, 'team-a'), true, `${verb} secrets in team-a`);
    assert.equal(await can(sa.kubeConfig, verb, 'team-b'), false, `no ${verb} of secrets in team-b`);
    assert.equal(await can(sa.kubeConfig, verb), false, `no ${verb} of secrets cluster-wide`);
  }
  const real = await cp.kubectl(['get', 'secrets', '--all-namespaces'], { as: sa });
  assert.notEqual(real.code, 0, 'a real cluster-wide list is refused');
  assert.match(real.stderr, /forbidden/i);
});

test('the forwarder warns at start-up about an owned Secret watch with neither namespaces nor a labelSelector, and not about a scoped one', async () => {
  const queueUrl = await broker.createQueue({ name: 'scoped-installs' });
  const cases: [Obj, boolean][] = [
    [SECRET, true],
    [{ ...SECRET, namespaces: ['team-a'] }, false],
    [{ ...SECRET, labelSelector: 'a=b' }, false],
  ];
  for (const [owned, warned] of cases) {
    const lines: Obj[] = [];
    const forwarder = startForwarder(
      {
        clusterId: 'it',
        queue: { url: queueUrl, region: broker.region },
        primaries: [MEMCACHED],
        owned: [owned as never],
        leaderElection: { enabled: false },
        resyncOnStart: false,
      },
      {
        kubeConfig: cp.admin.kubeConfig,
        queue: createSqsQueue({ queueUrl, region: broker.region, client: broker.sqs() }),
        serve: false,
        logger: createLogger({ write: (l) => lines.push(JSON.parse(l) as Obj) }),
      },
    );
    try {
      await forwarder.ready;
    } finally {
      await forwarder.stop({ graceMs: 0 });
    }
    const warning = lines.find(
      (l) => l.level === 'warn' && /an owned watch of Secrets with neither namespaces nor a labelSelector reads every Secret/.test(String(l.msg)),
    );
    assert.equal(Boolean(warning), warned, `${JSON.stringify(owned)}: ${warned ? 'warned' : 'no warning'}`);
    if (warning) assert.equal(warning.role, 'owned');
  }
});
