/**
 * Invalid Helm values: `helm template` (and `helm lint`) of the forwarder chart with one bad
 * value planted into otherwise valid values fails, and the error names the field — the
 * chart's `values.schema.json` is the install-time gate. It is generated from the forwarder's
 * own configuration schema (scripts/config-schema.ts), so `settings` and the leader-election
 * timings are refused by helm exactly as `parseConfig` refuses them at start (exit code 2):
 * the two cannot drift. Uses the cached helm (src/testing/modules).
 * (forwarder-packaging.test.ts covers a missing plural and a missing queue.) Note: helm reads
 * YAML 1.1, where an unquoted `yes` is the boolean true, so the cases avoid it.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { provision } from '../../src/testing/index.ts';
import { CHART_DIR, KUBE_VERSION, renderChart, runHelm } from '../../src/build/forwarder-chart.ts';
import { ConfigError, parseConfig } from '../../src/forwarder/config/config.ts';

let helm: string;
before(async () => {
  const provisioned = await provision({ targets: ['helm'] });
  assert.ok(provisioned.helm, 'helm is provisioned');
  helm = provisioned.helm;
});

const base = () => ({
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
  owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }],
});

const DELETE = Symbol('delete');
function planted(path: string, value: unknown): Record<string, unknown> {
  const doc = base() as unknown as Record<string, unknown>;
  const parts = path.split('.');
  let at: Record<string, unknown> = doc;
  for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
  if (value === DELETE) delete at[parts.at(-1)!];
  else at[parts.at(-1)!] = value;
  return doc;
}

/** [values path (dots; list indexes as numbers), bad value, the word the error must contain] */
const BAD: [string, unknown, string][] = [
  ['clusterId', '', 'clusterId'],
  ['clusterId', 'bad id', 'clusterId'],
  ['clusterId', 'x'.repeat(64), 'clusterId'],
  ['queue.url', 'not-a-url', 'url'],
  ['queue.region', 'Europe', 'region'],
  ['queue.endpoint', 'localhost:9324', 'endpoint'],
  ['queue.extra', 1, 'extra'],
  ['primaries', [], 'primaries'],
  ['primaries', DELETE, 'primaries'],
  ['primaries.0.kind', 'memcached', 'kind'],
  ['primaries.0.apiVersion', 'Cache/V1', 'apiVersion'],
  ['primaries.0.namespaced', 'maybe', 'namespaced'],
  ['primaries.0.plural', 'Memcacheds', 'plural'],
  ['primaries.0.triggers', ['spec'], 'triggers'],
  ['primaries.0.triggers', [], 'triggers'],
  ['primaries.0.namespaces', ['Team_A'], 'namespaces'],
  ['primaries.0.watchAll', true, 'watchAll'],
  ['namespaces', ['team-a', 'Team_B'], 'namespaces'],
  ['namespaces', 'team-a', 'namespaces'],
  ['owned.0.namespaced', DELETE, 'namespaced'],
  ['owned.0.kind', 'deployment', 'kind'],
  ['replicaCount', 0, 'replicaCount'],
  ['replicaCount', '2', 'replicaCount'],
  ['replicaCount', 1.5, 'replicaCount'],
  ['image.repository', '', 'repository'],
  ['image.pullPolicy', 'Sometimes', 'pullPolicy'],
  ['image.digest', 'latest', 'digest'],
  ['leaderElection.enabled', 'maybe', 'enabled'],
  ['leaderElection.leaseDurationSeconds', 0, 'leaseDurationSeconds'],
  ['leaderElection.term', 5, 'term'],
  ['leaderElection.leaseDurationSeconds', 5000, 'leaseDurationSeconds'],
  ['leaderElection.retryPeriodSeconds', 0.05, 'retryPeriodSeconds'],
  ['leaderElection.leaseName', 'Bad_Name', 'leaseName'],
  ['primaries.0.kind', 'K'.repeat(64), 'kind'],
  ['owned.0.queueUrl', 'https://sqs.eu-west-1.amazonaws.com/1/q', 'queueUrl'],
  // A bulk queue is never a .fifo one (per-key order cannot span two queues), as the forwarder refuses it.
  ['queue.bulkUrl', 'https://sqs.eu-west-1.amazonaws.com/123456789012/work-bulk.fifo', 'bulkUrl'],
  ['primaries.0.bulkQueueUrl', 'https://sqs.eu-west-1.amazonaws.com/123456789012/work-bulk.fifo', 'bulkQueueUrl'],
  ['serviceAccount.annotations', { 'eks.amazonaws.com/role-arn': 5 }, 'role-arn'],
  ['serviceAccount.token', 'x', 'token'],
  ['rbac.create', 'true', 'create'],
  ['rbac.secrets', true, 'secrets'],
  ['port', 70_000, 'port'],
  ['port', 0, 'port'],
  ['terminationGracePeriodSeconds', 0, 'terminationGracePeriodSeconds'],
  ['logLevel', 'verbose', 'logLevel'],
  ['settings.clusterId', 'x', 'clusterId'],
  ['settings.queue', {}, 'queue'],
];

/** Values whose unset defaults ("", []) the schema accepts: an install without them stops in templates/validate.yaml. */
const REQUIRED = new Set(['clusterId', 'primaries']);

test('helm template refuses each bad value with an error naming the field', async () => {
  const ok = await renderChart(helm, { values: base() });
  assert.equal(ok.code, 0, `the base values render: ${ok.stderr}`);
  const missed: string[] = [];
  for (let i = 0; i < BAD.length; i += 4) {
    await Promise.all(
      BAD.slice(i, i + 4).map(async ([path, value, word]) => {
        const r = await renderChart(helm, { values: planted(path, value) });
        const shown = `${path} = ${value === DELETE ? '(deleted)' : JSON.stringify(value)}`;
        if (r.code === 0) missed.push(`${shown}: rendered`);
        else if (!r.stderr.includes(word)) missed.push(`${shown}: error does not name "${word}": ${r.stderr.trim()}`);
        else if (!/schema/.test(r.stderr) && !(REQUIRED.has(path) && /is required/.test(r.stderr)))
          missed.push(`${shown}: not a schema error: ${r.stderr.trim()}`);
      }),
    );
  }
  assert.deepEqual(missed, []);
});

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { resources: string[] }[];
  data?: Record<string, string>;
}
const renderedObjects = (stdout: string): Rendered[] =>
  parseAllDocuments(stdout)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o) => o !== null);
const configOf = (objects: readonly Rendered[]) =>
  parseAllDocuments(objects.find((o) => o.kind === 'ConfigMap')?.data?.['forwarder.yaml'] ?? '')[0]?.toJS() as { namespaces?: string[] };

test('namespaces: a Role and RoleBinding per namespace instead of the watch ClusterRole, a cluster-scoped kind keeps a ClusterRole for itself alone, and the config carries the list', async () => {
  const values = {
    ...base(),
    namespaces: ['team-a', 'team-b'],
    related: [],
    owned: [...base().owned, { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false }],
  };
  const r = await renderChart(helm, { values });
  assert.equal(r.code, 0, r.stderr);
  const objects = renderedObjects(r.stdout);
  const roles = objects.filter((o) => o.kind === 'Role' && o.metadata.name.endsWith('-watch'));
  assert.deepEqual(roles.map((o) => o.metadata.namespace).sort(), ['team-a', 'team-b']);
  for (const role of roles) assert.deepEqual(role.rules?.flatMap((x) => x.resources).sort(), ['deployments', 'memcacheds']);
  assert.deepEqual(
    objects
      .filter((o) => o.kind === 'RoleBinding' && o.metadata.name.endsWith('-watch'))
      .map((o) => o.metadata.namespace)
      .sort(),
    ['team-a', 'team-b'],
  );
  const cluster = objects.filter((o) => o.kind === 'ClusterRole');
  assert.deepEqual(
    cluster.flatMap((o) => o.rules ?? []).flatMap((x) => x.resources),
    ['namespaces'],
    'only the cluster-scoped kind is cluster-wide',
  );
  const config = configOf(objects);
  assert.deepEqual(config.namespaces, ['team-a', 'team-b']);
  assert.deepEqual(parseConfig(config, { POD_NAMESPACE: 'operless' }).namespaces, ['team-a', 'team-b'], 'the forwarder accepts the rendered configuration');
  // Without namespaces: the watch RBAC is one ClusterRole, as before.
  const wide = renderedObjects((await renderChart(helm, { values: base() })).stdout);
  assert.deepEqual(
    wide.filter((o) => o.kind === 'Role' && o.metadata.name.endsWith('-watch')),
    [],
  );
  assert.deepEqual(
    wide
      .filter((o) => o.kind === 'ClusterRole')
      .flatMap((o) => o.rules ?? [])
      .flatMap((x) => x.resources)
      .sort(),
    ['deployments', 'memcacheds'],
  );
  assert.equal(configOf(wide).namespaces, undefined);
});

test('image.digest pins the image by content and wins over the tag', async () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  const r = await renderChart(helm, { values: { ...base(), image: { repository: 'registry.example/operless/forwarder', tag: 'v9', digest } } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`image: "registry\\.example/operless/forwarder@${digest}"`));
  assert.doesNotMatch(r.stdout, /forwarder:v9/);
});

test('helm lint with bad values fails, naming the field', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-helm-lint-'));
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, stringify(planted('replicaCount', 0)));
  const lint = await runHelm(helm, ['lint', CHART_DIR, '--values', file, '--kube-version', KUBE_VERSION]);
  assert.notEqual(lint.code, 0, lint.stdout);
  assert.match(lint.stdout + lint.stderr, /replicaCount/);
});

test('bad settings are refused by helm and by the forwarder alike, both naming the field', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ coalesceWindowMs: -5 }, 'coalesceWindowMs'],
    [{ buffer: { maxMessages: 1 } }, 'buffer.maxMessages'],
    [{ watch: { listPageSize: 'many' } }, 'watch.listPageSize'],
    [{ resyncOnStart: 'sometimes' }, 'resyncOnStart'],
    [{ send: { connectTimeoutMs: 50 } }, 'send.connectTimeoutMs'],
    [{ server: { host: 7 } }, 'server.host'],
    [{ unknownSetting: 1 }, 'unknownSetting'],
  ];
  const missed: string[] = [];
  await Promise.all(
    cases.map(async ([settings, field]) => {
      const r = await renderChart(helm, { values: { ...base(), settings } });
      const last = field.split('.').at(-1)!;
      if (r.code === 0 || !r.stderr.includes(last) || !/schema/.test(r.stderr))
        missed.push(`helm: settings ${JSON.stringify(settings)} → ${r.code === 0 ? 'rendered' : r.stderr.trim()}`);
      try {
        parseConfig({ ...base(), ...settings }, { POD_NAMESPACE: 'operless', POD_NAME: 'p' });
        missed.push(`forwarder: settings ${JSON.stringify(settings)} accepted`);
      } catch (err) {
        if (!(err instanceof ConfigError && err.problems.some((p) => p.startsWith(`${field}:`))))
          missed.push(`forwarder: settings ${JSON.stringify(settings)} → ${String(err)}`);
      }
    }),
  );
  assert.deepEqual(missed, []);
});
