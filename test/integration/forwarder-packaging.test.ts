/**
 * Packaging of the forwarder: the esbuild bundle the image runs, the Helm chart (lint,
 * schema, template), the checked-in plain manifests (fresh, valid on a REAL API server),
 * and the chart's least-privilege RBAC really being enough — and no more — for a forwarder
 * running under its own service account.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { startBroker, startControlPlane, provision, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { CHART_DIR, CI_VALUES_DIR, EXAMPLE_VALUES, MANIFESTS_PATH, renderChart, renderPlainManifests, runHelm } from '../../src/build/forwarder-chart.ts';
import { parseConfig } from '../../src/forwarder/config/config.ts';
import { startForwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import { KubeApiError, createKubeApi } from '../../src/kube/api.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { API_VERSION, GADGET_CRD, Objects, collect, summary } from './forwarder-env.ts';

let helm: string;
let cp: ControlPlane;
let broker: Broker;
const work = mkdtempSync(join(tmpdir(), 'fwd-packaging-'));

before(async () => {
  const provisioned = await provision({ targets: ['helm'] });
  assert.ok(provisioned.helm, 'helm is provisioned');
  helm = provisioned.helm;
  [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD] }), startBroker({ queues: [{ name: 'packaging' }] })]);
});
after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

function objectsOf(yamlText: string): Record<string, any>[] {
  return parseAllDocuments(yamlText)
    .map((d) => d.toJS())
    .filter((o) => o && typeof o === 'object');
}

test('the esbuild bundle is one self-contained file that runs and reports bad config clearly', async () => {
  const out = join(work, 'forwarder.mjs');
  const { bytes } = await bundleForwarder(out);
  assert.ok(bytes < 4 * 1024 * 1024, `bundle is ${bytes} bytes`);
  const help = spawnSync(process.execPath, [out, '--help'], { encoding: 'utf8', cwd: work, env: { PATH: process.env.PATH } });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /OPERLESS_FORWARDER_CONFIG/);
  const config = join(work, 'bad.yaml');
  writeFileSync(
    config,
    'clusterId: ok\nqueue: { url: "https://sqs.eu-west-1.amazonaws.com/1/q" }\nprimaries:\n  - apiVersion: apps/v1\n    kind: deployment\n',
  );
  // cwd outside the repo and no NODE_PATH: the bundle must not need node_modules.
  const bad = spawnSync(process.execPath, [out], { encoding: 'utf8', cwd: work, env: { PATH: process.env.PATH, OPERLESS_FORWARDER_CONFIG: config } });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /primaries\[0\]\.kind: must be a Kind in PascalCase/);
  // A tracing variable it cannot use is a configuration error too, naming the variable.
  const good = join(work, 'good.yaml');
  writeFileSync(
    good,
    'clusterId: ok\nqueue: { url: "https://sqs.eu-west-1.amazonaws.com/1/q" }\nprimaries:\n  - { apiVersion: v1, kind: ConfigMap, plural: configmaps, namespaced: true }\n',
  );
  const badTracing = spawnSync(process.execPath, [out], {
    encoding: 'utf8',
    cwd: work,
    env: { PATH: process.env.PATH, OPERLESS_FORWARDER_CONFIG: good, OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
  });
  assert.equal(badTracing.status, 2, badTracing.stderr);
  assert.match(badTracing.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL: gRPC is not bundled/);
});

test('helm lint passes with the example values; the schema rejects bad values at install time', async () => {
  const lint = await runHelm(helm, ['lint', CHART_DIR, '--values', EXAMPLE_VALUES, '--kube-version', '1.34.4']);
  assert.equal(lint.code, 0, lint.stdout + lint.stderr);
  const noPlural = await renderChart(helm, {
    values: {
      clusterId: 'c',
      queue: { url: 'https://sqs.eu-west-1.amazonaws.com/1/q' },
      primaries: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaced: true }],
    },
  });
  assert.notEqual(noPlural.code, 0);
  assert.match(noPlural.stderr, /plural/);
  const noQueue = await renderChart(helm, {
    values: { clusterId: 'c', primaries: [{ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true }] },
  });
  assert.notEqual(noQueue.code, 0);
  assert.match(noQueue.stderr, /url/);
});

test('a queue per primary: queueUrl on each primary renders into the config (queue.url may be left out); owned kinds cannot name one', async () => {
  const primaries = [
    {
      apiVersion: 'cache.example.com/v1alpha1',
      kind: 'Memcached',
      plural: 'memcacheds',
      namespaced: true,
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/memcached',
    },
    {
      apiVersion: 'tenancy.example.com/v1alpha1',
      kind: 'Tenant',
      plural: 'tenants',
      namespaced: false,
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/tenant',
    },
  ];
  const owned = [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }];
  const rendered = await renderChart(helm, { values: { clusterId: 'c', primaries, owned } });
  assert.equal(rendered.code, 0, rendered.stderr);
  const cm = objectsOf(rendered.stdout).find((o) => o.kind === 'ConfigMap')!;
  const config = parseConfig(objectsOf(cm.data['forwarder.yaml'])[0], { POD_NAMESPACE: 'operless', POD_NAME: 'p' });
  assert.deepEqual(
    config.queues,
    primaries.map((p) => p.queueUrl),
  );
  const rules = objectsOf(rendered.stdout)
    .filter((o) => o.kind === 'ClusterRole')
    .flatMap((o) => o.rules.flatMap((r: { resources: string[] }) => r.resources));
  assert.deepEqual(new Set(rules), new Set(['memcacheds', 'tenants', 'deployments']), 'RBAC still exactly the watched resources');
  const ownedQueue = await renderChart(helm, {
    values: { clusterId: 'c', primaries, owned: [{ ...owned[0], queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/x' }] },
  });
  assert.notEqual(ownedQueue.code, 0);
  assert.match(ownedQueue.stderr, /owned\/0\/queueUrl/);
  const badQueue = await renderChart(helm, { values: { clusterId: 'c', primaries: [{ ...primaries[0], queueUrl: 'memcached' }] } });
  assert.notEqual(badQueue.code, 0);
  assert.match(badQueue.stderr, /primaries\/0\/queueUrl/);
});

test('the checked-in plain manifests are a fresh render of the chart', async () => {
  assert.equal(readFileSync(MANIFESTS_PATH, 'utf8'), await renderPlainManifests(helm), 'stale: run node src/build/forwarder-chart.ts render');
});

test('the rendered config is valid for the forwarder; the pod meets the restricted Pod Security Standard', () => {
  const objs = objectsOf(readFileSync(MANIFESTS_PATH, 'utf8'));
  const cm = objs.find((o) => o.kind === 'ConfigMap')!;
  const config = parseConfig(objectsOf(cm.data['forwarder.yaml'])[0], { POD_NAMESPACE: 'operless', POD_NAME: 'p' });
  assert.equal(config.leaderElection.enabled, true, 'two replicas: leader election on');
  assert.equal(config.queue.region, 'eu-west-1');
  const deploy = objs.find((o) => o.kind === 'Deployment')!;
  const pod = deploy.spec.template.spec;
  const c = pod.containers[0];
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
  assert.equal(c.securityContext.seccompProfile.type, 'RuntimeDefault');
  assert.ok(!JSON.stringify(objs).includes('AWS_SECRET_ACCESS_KEY'), 'no static AWS keys');
  assert.ok(objs.some((o) => o.kind === 'PodDisruptionBudget'));
});

test('the plain manifests are accepted by a real API server (kubectl apply --dry-run=server)', async () => {
  const ns = await cp.kubectl(['create', 'namespace', 'operless']);
  assert.equal(ns.code, 0, ns.stderr);
  const applied = await cp.kubectl(['apply', '--dry-run=server', '-f', MANIFESTS_PATH]);
  assert.equal(applied.code, 0, applied.stderr);
  for (const kind of [
    'deployment.apps/operless-forwarder',
    'clusterrole.rbac.authorization.k8s.io/operless-forwarder-operless',
    'role.rbac.authorization.k8s.io/operless-forwarder',
    'poddisruptionbudget.policy/operless-forwarder',
  ]) {
    assert.match(applied.stdout, new RegExp(`${kind.replace(/\./g, '\\.')} created \\(server dry run\\)`));
  }
});

test('the chart with its hardened ci/ values (NetworkPolicy on) is accepted by a real API server; the PrometheusRule waits for its CRD', async () => {
  const rendered = await renderChart(helm, { valuesFiles: [join(CI_VALUES_DIR, 'hardened-values.yaml')], namespace: 'operless-hardened' });
  assert.equal(rendered.code, 0, rendered.stderr);
  const objs = objectsOf(rendered.stdout);
  const rule = objs.find((o) => o.kind === 'PrometheusRule');
  assert.ok(rule && objs.some((o) => o.kind === 'NetworkPolicy'));
  const ns = await cp.kubectl(['create', 'namespace', 'operless-hardened']);
  assert.equal(ns.code, 0, ns.stderr);
  const applied = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], {
    input: objs
      .filter((o) => o.kind !== 'PrometheusRule')
      .map((o) => JSON.stringify(o))
      .join('\n'),
  });
  assert.equal(applied.code, 0, applied.stderr);
  assert.match(applied.stdout, /networkpolicy\.networking\.k8s\.io\/operless-forwarder created \(server dry run\)/);
  // No Prometheus Operator here: the API server does not know the kind (it is the only object left out above).
  const ruleApplied = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: JSON.stringify(rule) });
  assert.notEqual(ruleApplied.code, 0);
  assert.match(ruleApplied.stderr, /PrometheusRule/);
});

test('under its own least-privilege identity (the RBAC the chart renders) the forwarder works, and gets 403 outside its grant', async () => {
  const release = 'lp';
  const rendered = await renderChart(helm, {
    release,
    namespace: 'fwd-system',
    values: {
      clusterId: 'lp',
      replicaCount: 2,
      queue: { url: broker.queueUrl('packaging') },
      primaries: [{ apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true }],
      owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }],
    },
  });
  assert.equal(rendered.code, 0, rendered.stderr);
  const rbac = objectsOf(rendered.stdout).filter((o) => /^(ClusterRole|ClusterRoleBinding|Role|RoleBinding)$/.test(o.kind));
  assert.equal(rbac.length, 4);
  await cp.kubectl(['create', 'namespace', 'fwd-system']);
  const applied = await cp.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => JSON.stringify(o)).join('\n') });
  assert.equal(applied.code, 0, applied.stderr);
  const sa = await cp.serviceAccount('fwd-system', `${release}-operless-forwarder`);

  const api = createKubeApi(sa.kubeConfig);
  for (const path of ['/api/v1/secrets', '/api/v1/configmaps', '/api/v1/namespaces/fwd-system/pods']) {
    await assert.rejects(api.requestJson('GET', path), (err: unknown) => err instanceof KubeApiError && err.status === 403, path);
  }
  await assert.rejects(
    api.requestJson('POST', `/apis/${API_VERSION}/namespaces/default/gadgets`, { body: { apiVersion: API_VERSION, kind: 'Gadget', metadata: { name: 'x' } } }),
    (err: unknown) => err instanceof KubeApiError && err.status === 403,
    'no writes to watched objects',
  );
  await assert.rejects(
    api.requestJson('GET', '/apis/coordination.k8s.io/v1/namespaces/fwd-system/leases/someone-elses-lease'),
    (err: unknown) => err instanceof KubeApiError && err.status === 403,
    'only its own lease',
  );

  const queueUrl = broker.queueUrl('packaging');
  const forwarder = startForwarder(
    {
      clusterId: 'lp',
      queue: { url: queueUrl, region: broker.region },
      primaries: [{ apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true }],
      owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }],
      resyncOnStart: false,
      coalesceWindowMs: 100,
      leaderElection: { enabled: true, namespace: 'fwd-system', leaseName: `${release}-operless-forwarder`, identity: 'pod-a' },
      server: { port: 0, host: '127.0.0.1' },
    },
    { kubeConfig: sa.kubeConfig, queue: createSqsQueue({ queueUrl, region: broker.region, client: broker.sqs() }), logger: silentLogger },
  );
  try {
    await forwarder.ready;
    assert.equal(forwarder.isLeader(), true, 'it may create and renew its lease');
    const objects = new Objects(cp.kubeConfig);
    await objects.createGadget('default', 'least-privilege');
    const messages = await collect(broker.sqs(), queueUrl, { until: (m) => m.length >= 1 });
    assert.deepEqual(summary(messages), ['Added Gadget/default/least-privilege']);
    assert.equal(forwarder.readiness().ok, true, forwarder.readiness().reasons.join('; '));
  } finally {
    await forwarder.stop();
  }
});
