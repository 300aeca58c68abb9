/**
 * The forwarder chart as users and their pipelines run it (the cached helm, src/testing):
 * - `helm template` with the example values and NO --kube-version renders (Helm's offline
 *   default, v1.20.0, is not refused), while a known cluster older than 1.28 is refused with a
 *   message naming the constraint, and 1.28 / an EKS-style version pass;
 * - a bare `helm lint` of the chart passes, and `helm lint` with each chart-testing `ci/` file;
 * - an install-style render without a required value stops, naming it;
 * - the optional NetworkPolicy (ingress only to the probe/metrics port; egress DNS, API server,
 *   SQS) and PrometheusRule (every metric it names is one the forwarder registers);
 * - the webhook objects: configurations equal to src/crd/webhooks.ts's, the cert-manager
 *   Certificate and CA injection, the CRD's conversion stanza, and one message per impossible
 *   render. (test/integration/webhooks.test.ts applies the rendered objects to a real API server.)
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { provision } from '../../src/testing/index.ts';
import { CHART_DIR, CI_VALUES_DIR, EXAMPLE_VALUES, renderChart, runHelm } from '../../src/build/forwarder-chart.ts';
import { createForwarderMetrics } from '../../src/forwarder/metrics.ts';
import { generateWebhookConfigurations } from '../../src/crd/webhooks.ts';
import { MemcachedResource } from '../../src/memcached/types.ts';
import { CRD_DIR } from '../../src/resources.ts';
import { compareVersionPriority } from '../../src/crd/version-priority.ts';

let helm: string;
before(async () => {
  const provisioned = await provision({ targets: ['helm'] });
  assert.ok(provisioned.helm, 'helm is provisioned');
  helm = provisioned.helm;
});

type Manifest = { kind: string; metadata: { name: string }; spec: Record<string, unknown> };
const manifests = (stdout: string): Manifest[] =>
  parseAllDocuments(stdout)
    .map((d) => d.toJS() as Manifest)
    .filter(Boolean);
const ciFiles = () =>
  readdirSync(CI_VALUES_DIR)
    .filter((f) => f.endsWith('-values.yaml'))
    .map((f) => join(CI_VALUES_DIR, f));

const base = {
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
};

test('helm template of the example values renders without --kube-version; a known cluster below 1.28 is refused, naming the constraint', async () => {
  const offline = await renderChart(helm, { valuesFiles: [EXAMPLE_VALUES], kubeVersion: null });
  assert.equal(offline.code, 0, offline.stderr);
  assert.ok(manifests(offline.stdout).some((m) => m.kind === 'Deployment'));
  for (const version of ['1.28.0', 'v1.29.3-eks-4f8a1c2', '1.34.4']) {
    const ok = await renderChart(helm, { valuesFiles: [EXAMPLE_VALUES], kubeVersion: version });
    assert.equal(ok.code, 0, `${version}: ${ok.stderr}`);
  }
  const old = await renderChart(helm, { valuesFiles: [EXAMPLE_VALUES], kubeVersion: '1.27.9' });
  assert.notEqual(old.code, 0);
  assert.match(old.stderr, /needs Kubernetes >=1\.28\.0-0; the cluster reports v1\.27\.9 \(kubeVersionCheck\.constraint/);
  const unchecked = await renderChart(helm, { valuesFiles: [EXAMPLE_VALUES], kubeVersion: '1.26.9', values: { kubeVersionCheck: { enabled: false } } });
  assert.equal(unchecked.code, 0, unchecked.stderr);
});

test('helm lint passes on the bare chart (as users run it) and with each chart-testing ci/ values file', async () => {
  const bare = await runHelm(helm, ['lint', CHART_DIR]);
  assert.equal(bare.code, 0, `${bare.stdout}\n${bare.stderr}`);
  assert.match(bare.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  const files = ciFiles();
  assert.ok(files.length >= 2, 'ci/ holds the chart-testing values');
  for (const file of files) {
    const lint = await runHelm(helm, ['lint', CHART_DIR, '--values', file, '--strict']);
    assert.equal(lint.code, 0, `${file}: ${lint.stdout}\n${lint.stderr}`);
    const render = await renderChart(helm, { valuesFiles: [file], kubeVersion: null });
    assert.equal(render.code, 0, `${file}: ${render.stderr}`);
  }
});

test('an install-style render without a required value stops with one message naming it', async () => {
  const cases: [object, RegExp][] = [
    [{}, /clusterId is required/],
    [{ clusterId: 'prod' }, /primaries is required/],
    // Caught by the schema's anyOf (queue.url or a queueUrl on every primary), naming both.
    [{ clusterId: 'prod', primaries: base.primaries }, /\/queue\/url[\s\S]*missing property 'queueUrl'/],
  ];
  for (const [values, message] of cases) {
    const r = await renderChart(helm, { values, kubeVersion: null });
    assert.notEqual(r.code, 0, JSON.stringify(values));
    assert.match(r.stderr, message);
  }
  const perPrimaryQueue = await renderChart(helm, { values: { clusterId: 'prod', primaries: [{ ...base.primaries[0], queueUrl: base.queue.url }] } });
  assert.equal(perPrimaryQueue.code, 0, perPrimaryQueue.stderr);
});

test('NetworkPolicy: off by default; when on, ingress only to the probe/metrics port, egress only to DNS, the API server and SQS', async () => {
  const plain = manifests((await renderChart(helm, { values: base })).stdout);
  assert.ok(!plain.some((m) => m.kind === 'NetworkPolicy' || m.kind === 'PrometheusRule'), 'both are optional and off by default');
  const missing = await renderChart(helm, { values: { ...base, networkPolicy: { enabled: true } } });
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /networkPolicy\.apiServer\.cidrs is required when networkPolicy\.enabled/);

  const r = await renderChart(helm, {
    values: {
      ...base,
      port: 9090,
      networkPolicy: {
        enabled: true,
        apiServer: { cidrs: ['172.20.0.10/32'] },
        metricsFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      },
    },
  });
  assert.equal(r.code, 0, r.stderr);
  const policy = manifests(r.stdout).find((m) => m.kind === 'NetworkPolicy');
  assert.ok(policy, 'a NetworkPolicy is rendered');
  const spec = policy.spec as {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: { ports: { port: number }[]; from?: unknown[] }[];
    egress: { to: { ipBlock?: { cidr: string } }[]; ports: { port: number; protocol: string }[] }[];
  };
  assert.deepEqual(spec.policyTypes, ['Ingress', 'Egress']);
  assert.equal(spec.podSelector.matchLabels['app.kubernetes.io/name'], 'operless-forwarder');
  assert.deepEqual(
    spec.ingress.map((i) => i.ports.map((p) => p.port)),
    [[9090]],
    'ingress to the probe/metrics port only',
  );
  assert.equal(spec.ingress[0]!.from?.length, 1);
  const egress = spec.egress.map((e) => ({ cidrs: e.to.flatMap((t) => t.ipBlock?.cidr ?? []), ports: e.ports.map((p) => `${p.protocol}/${p.port}`) }));
  assert.deepEqual(egress, [
    { cidrs: [], ports: ['UDP/53', 'TCP/53'] },
    { cidrs: ['172.20.0.10/32'], ports: ['TCP/443', 'TCP/6443'] },
    { cidrs: ['0.0.0.0/0'], ports: ['TCP/443'] },
  ]);
  // With the webhook endpoint on: its port is open (to webhooksFrom, default any source) and Lambda is reachable.
  const hooks = await renderChart(helm, {
    values: {
      ...base,
      port: 9090,
      settings: { webhooks: { enabled: true, functions: { memcached: 'operless-memcached-prod-webhooks' } } },
      networkPolicy: { enabled: true, apiServer: { cidrs: ['172.20.0.10/32'] }, lambda: { cidrs: ['10.0.0.0/16'], ports: [443] } },
    },
  });
  assert.equal(hooks.code, 0, hooks.stderr);
  const hooksSpec = manifests(hooks.stdout).find((m) => m.kind === 'NetworkPolicy')?.spec as typeof spec;
  assert.deepEqual(
    hooksSpec.ingress.map((i) => i.ports.map((p) => p.port)),
    [[9090], [9443]],
    'the probe/metrics port and the webhook port',
  );
  assert.equal(hooksSpec.ingress[1]!.from, undefined, 'the API server calls from an address the policy cannot name in advance');
  assert.deepEqual(
    hooksSpec.egress.at(-1),
    { to: [{ ipBlock: { cidr: '10.0.0.0/16' } }], ports: [{ port: 443, protocol: 'TCP' }] },
    'Lambda, which the endpoint invokes',
  );
  const bad = await renderChart(helm, { values: { ...base, networkPolicy: { enabled: true, apiServer: { cidrs: ['api.example.com'] } } } });
  assert.notEqual(bad.code, 0, 'a host name is not a CIDR');
  assert.match(bad.stderr, /cidrs/);
});

test("webhooks on: an ingress-only NetworkPolicy by default (webhook and probe ports), replaced by the full policy; clientAuth mounts the API server's CA and points the endpoint at it", async () => {
  const webhooks = { webhooks: { enabled: true, functions: { memcached: 'operless-memcached-prod-webhooks' } } };
  const on = await renderChart(helm, { values: { ...base, port: 9090, settings: webhooks } });
  assert.equal(on.code, 0, on.stderr);
  const policies = manifests(on.stdout).filter((m) => m.kind === 'NetworkPolicy');
  assert.deepEqual(
    policies.map((p) => p.metadata.name),
    ['operless-forwarder-webhook-ingress'],
    'on by default with webhooks',
  );
  const spec = policies[0]!.spec as { policyTypes: string[]; ingress: { ports: { port: number }[]; from?: unknown[] }[]; egress?: unknown };
  assert.deepEqual(spec.policyTypes, ['Ingress'], 'ingress rules only: no cluster addresses needed');
  assert.deepEqual(
    spec.ingress.map((i) => i.ports.map((p) => p.port)),
    [[9090], [9443]],
  );
  assert.equal(spec.egress, undefined);
  const from = [{ ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.128.0/17'] } }];
  const narrowed = manifests((await renderChart(helm, { values: { ...base, settings: webhooks, networkPolicy: { webhooksFrom: from } } })).stdout).find(
    (m) => m.kind === 'NetworkPolicy',
  )?.spec as typeof spec;
  assert.deepEqual(narrowed.ingress[1]!.from, from);
  const off = await renderChart(helm, { values: { ...base, settings: webhooks, networkPolicy: { webhookIngress: { enabled: false } } } });
  assert.ok(!manifests(off.stdout).some((m) => m.kind === 'NetworkPolicy'));
  const full = await renderChart(helm, { values: { ...base, settings: webhooks, networkPolicy: { enabled: true, apiServer: { cidrs: ['172.20.0.10/32'] } } } });
  assert.deepEqual(
    manifests(full.stdout)
      .filter((m) => m.kind === 'NetworkPolicy')
      .map((p) => p.metadata.name),
    ['operless-forwarder'],
    'the full policy replaces it',
  );
  assert.ok(!manifests((await renderChart(helm, { values: base })).stdout).some((m) => m.kind === 'NetworkPolicy'), 'no webhooks: no policy unless asked');

  const auth = await renderChart(helm, {
    values: { ...base, settings: webhooks, webhooks: { caBundle: 'Zm9v', clientAuth: { caConfigMap: 'apiserver-client-ca' } } },
  });
  assert.equal(auth.code, 0, auth.stderr);
  const objects = manifests(auth.stdout);
  const pod = (
    (objects.find((m) => m.kind === 'Deployment') ?? assert.fail('a Deployment is rendered')).spec as {
      template: { spec: { volumes: { name: string; configMap?: { name: string } }[]; containers: { volumeMounts: { name: string; mountPath: string }[] }[] } };
    }
  ).template.spec;
  assert.deepEqual(pod.volumes.find((v) => v.name === 'webhook-client-ca')?.configMap?.name, 'apiserver-client-ca');
  assert.equal(pod.containers[0]!.volumeMounts.find((m) => m.name === 'webhook-client-ca')?.mountPath, '/etc/operless-webhook-client-ca');
  const config = parse(String((objects.find((m) => m.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['forwarder.yaml'])) as {
    webhooks: { clientAuth: { caFile: string } };
  };
  assert.equal(config.webhooks.clientAuth.caFile, '/etc/operless-webhook-client-ca/ca.crt');
});

test("webhooks on: the readiness probe is the endpoint's own (/readyz/webhooks), the replicas spread over zones, a PodDisruptionBudget keeps one", async () => {
  type Pod = { readinessProbe: { httpGet: { path: string } } };
  type Spec = { template: { spec: { containers: Pod[]; topologySpreadConstraints?: { topologyKey: string; whenUnsatisfiable: string }[] } } };
  const spec = (stdout: string) => manifests(stdout).find((m) => m.kind === 'Deployment')?.spec as unknown as Spec;
  const plain = await renderChart(helm, { values: base });
  assert.equal(spec(plain.stdout).template.spec.containers[0]!.readinessProbe.httpGet.path, '/readyz');
  assert.equal(spec(plain.stdout).template.spec.topologySpreadConstraints, undefined);
  const on = await renderChart(helm, { values: { ...base, settings: { webhooks: { enabled: true, functions: { memcached: 'fn' } } } } });
  assert.equal(on.code, 0, on.stderr);
  assert.equal(
    spec(on.stdout).template.spec.containers[0]!.readinessProbe.httpGet.path,
    '/readyz/webhooks',
    'an unreachable queue must not empty the webhook Service',
  );
  assert.deepEqual(
    spec(on.stdout).template.spec.topologySpreadConstraints?.map((c) => [c.topologyKey, c.whenUnsatisfiable]),
    [['topology.kubernetes.io/zone', 'ScheduleAnyway']],
  );
  const pdb = manifests(on.stdout).find((m) => m.kind === 'PodDisruptionBudget');
  assert.equal((pdb?.spec as { maxUnavailable: number } | undefined)?.maxUnavailable, 1);
  const own = await renderChart(helm, {
    values: {
      ...base,
      settings: { webhooks: { enabled: true, functions: { memcached: 'fn' } } },
      topologySpreadConstraints: [{ maxSkew: 2, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: {} }],
    },
  });
  assert.deepEqual(
    spec(own.stdout).template.spec.topologySpreadConstraints?.map((c) => c.topologyKey),
    ['kubernetes.io/hostname'],
    'given constraints win',
  );
});

test('PrometheusRule: every metric its alerts name is one the forwarder registers; scoped to the release', async () => {
  const r = await renderChart(helm, { values: { ...base, prometheusRule: { enabled: true, labels: { release: 'kps' } } } });
  assert.equal(r.code, 0, r.stderr);
  const rule = manifests(r.stdout).find((m) => m.kind === 'PrometheusRule') as unknown as
    | { metadata: { labels: Record<string, string> }; spec: { groups: { rules: { alert: string; expr: string; labels: { severity: string } }[] }[] } }
    | undefined;
  assert.ok(rule, 'a PrometheusRule is rendered');
  assert.equal(rule.metadata.labels.release, 'kps');
  const rules = rule.spec.groups.flatMap((g) => g.rules);
  assert.deepEqual(
    rules.map((x) => x.alert),
    [
      'OperlessForwarderNoLeader',
      'OperlessForwarderNotReady',
      'OperlessForwarderKindNotServed',
      'OperlessForwarderSendsFailing',
      'OperlessForwarderDroppedMessages',
      'OperlessForwarderDroppedObjects',
    ],
  );
  const registered = new Set((await createForwarderMetrics().registry.getMetricsAsJSON()).map((m) => m.name));
  for (const { alert, expr } of rules) {
    const named = [...expr.matchAll(/\b(operless_forwarder_[a-z_]+)\b/g)].map((m) => m[1]!);
    assert.ok(named.length > 0, `${alert} names a forwarder metric`);
    for (const name of named) assert.ok(registered.has(name), `${alert}: ${name} is not a metric the forwarder registers`);
    for (const selector of expr.matchAll(/operless_forwarder_[a-z_]+\{([^}]*)\}/g)) {
      // The release's scope, then any matchers of the alert's own (state="waiting").
      assert.match(selector[1]!, /^namespace="operless", pod=~"operless-forwarder-\.\*"(, [a-z_]+="[a-z]+")*$/, `${alert} is scoped to this release`);
    }
    assert.equal((expr.match(/\(/g) ?? []).length, (expr.match(/\)/g) ?? []).length, `${alert}: balanced parentheses`);
  }
});

test('webhooks: only with settings.webhooks.enabled the chart adds the webhook port, the TLS Secret mount and the -webhook Service', async () => {
  const off = manifests((await renderChart(helm, { values: base })).stdout);
  assert.equal(
    off.some((m) => m.metadata.name.endsWith('-webhook')),
    false,
  );
  const rendered = await renderChart(helm, {
    values: { ...base, settings: { webhooks: { enabled: true, functions: { memcached: 'operless-memcached-prod-webhooks' } } } },
  });
  const on = manifests(rendered.stdout);
  const service = on.find((m) => m.kind === 'Service' && m.metadata.name === 'operless-forwarder-webhook');
  assert.deepEqual((service?.spec.ports as unknown[])?.[0], { name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' });
  const deployment = on.find((m) => m.kind === 'Deployment') as unknown as {
    spec: {
      template: {
        spec: {
          containers: { ports: { name: string; containerPort: number }[]; volumeMounts: { name: string; mountPath: string }[] }[];
          volumes: { name: string; secret?: { secretName: string } }[];
        };
      };
    };
  };
  const pod = deployment.spec.template.spec;
  assert.deepEqual(pod.containers[0]?.ports.find((p) => p.name === 'webhook')?.containerPort, 9443);
  assert.equal(pod.containers[0]?.volumeMounts.find((v) => v.name === 'webhook-tls')?.mountPath, '/etc/operless-webhook-tls');
  assert.equal(pod.volumes.find((v) => v.name === 'webhook-tls')?.secret?.secretName, 'operless-forwarder-webhook-tls');
});

const WEBHOOK_FUNCTIONS = { memcached: 'operless-memcached-prod-webhooks' };
const memcachedWebhooks = (extra: Record<string, unknown> = {}) => ({
  alias: 'memcached',
  apiVersion: 'cache.example.com/v1alpha1',
  plural: 'memcacheds',
  namespaced: true,
  default: {},
  validate: { failurePolicy: 'Ignore', timeoutSeconds: 5 },
  ...extra,
});
const withWebhooks = (webhooks: Record<string, unknown>) => ({ ...base, settings: { webhooks: { enabled: true, functions: WEBHOOK_FUNCTIONS } }, webhooks });
const plainCrd = () => readFileSync(join(CRD_DIR, 'memcacheds.cache.example.com.yaml'), 'utf8');

test('webhooks: the configurations the chart renders are the ones src/crd/webhooks.ts generates (defaults, selector, rules), calling the -webhook Service', async () => {
  const caBundle = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');
  const r = await renderChart(helm, { values: withWebhooks({ caBundle, resources: [memcachedWebhooks()] }) });
  assert.equal(r.code, 0, r.stderr);
  const rendered = manifests(r.stdout).filter((m) => m.kind.endsWith('WebhookConfiguration')) as unknown as Record<string, any>[];
  const expected = generateWebhookConfigurations({
    resource: MemcachedResource,
    operatorNamespace: 'operless',
    clientConfig: (route) => ({ service: { name: 'operless-forwarder-webhook', namespace: 'operless', path: `/memcached/${route}`, port: 443 }, caBundle }),
    default: {},
    validate: { failurePolicy: 'Ignore', timeoutSeconds: 5 },
  });
  // The same objects but for the name: the chart's carries the release and its namespace, so two releases never claim one configuration.
  assert.deepEqual(
    rendered.map((m) => ({ ...m, metadata: {} })),
    expected.map((m) => ({ ...m, metadata: {} })),
  );
  assert.deepEqual(
    rendered.map((m) => m.metadata.name),
    expected.map((m) => `operless-forwarder-operless-${(m.metadata as { name: string }).name}`),
  );
  // Namespace-scoped: only the watched namespaces are intercepted (the kind's own list before the release's).
  for (const [values, namespaces] of [
    [{ namespaces: ['team-a', 'team-b'] }, ['team-a', 'team-b']],
    [{ namespaces: ['team-a'], primaries: [{ ...base.primaries[0], namespaces: ['team-c'] }] }, ['team-c']],
  ] as const) {
    const scoped = await renderChart(helm, { values: { ...withWebhooks({ caBundle, resources: [memcachedWebhooks()] }), ...values } });
    assert.equal(scoped.code, 0, scoped.stderr);
    const got = manifests(scoped.stdout).filter((m) => m.kind.endsWith('WebhookConfiguration')) as unknown as Record<string, any>[];
    const want = generateWebhookConfigurations({
      resource: MemcachedResource,
      operatorNamespace: 'operless',
      namespaces,
      clientConfig: () => ({}),
      default: {},
      validate: {},
    });
    assert.deepEqual(
      got.map((m) => m.webhooks[0].namespaceSelector),
      want.map((m) => (m.webhooks as Record<string, unknown>[])[0]?.namespaceSelector),
    );
    assert.deepEqual(got[0]?.webhooks[0].namespaceSelector.matchExpressions[1], { key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces });
  }
  assert.equal(rendered[0]?.webhooks[0].failurePolicy, 'Fail', 'Fail and 10 s by default');
  assert.equal(rendered[0]?.webhooks[0].timeoutSeconds, 10);
  // Without conversion.crd the chart renders no CRD; without a `validate` entry no validating configuration.
  assert.equal(
    manifests(r.stdout).some((m) => m.kind === 'CustomResourceDefinition'),
    false,
  );
  const onlyDefault = await renderChart(helm, { values: withWebhooks({ caBundle, resources: [memcachedWebhooks({ validate: undefined })] }) });
  assert.deepEqual(
    manifests(onlyDefault.stdout)
      .filter((m) => m.kind.endsWith('WebhookConfiguration'))
      .map((m) => m.kind),
    ['MutatingWebhookConfiguration'],
  );
});

test('webhooks: with cert-manager, a Certificate for the Service (self-signed Issuer unless one is named) and the CA injector annotation on the configurations and the CRD', async () => {
  const r = await renderChart(helm, {
    values: withWebhooks({ certManager: { enabled: true }, resources: [memcachedWebhooks({ conversion: { crd: plainCrd(), preferredSpoke: true } })] }),
  });
  assert.equal(r.code, 0, r.stderr);
  const all = manifests(r.stdout) as unknown as Record<string, any>[];
  const certificate = all.find((m) => m.kind === 'Certificate');
  assert.equal(certificate?.spec.secretName, 'operless-forwarder-webhook-tls', 'the Secret the pods mount');
  assert.deepEqual(certificate?.spec.dnsNames, ['operless-forwarder-webhook.operless.svc', 'operless-forwarder-webhook.operless.svc.cluster.local']);
  assert.deepEqual(certificate?.spec.issuerRef, { name: 'operless-forwarder-webhook-selfsigned', kind: 'Issuer', group: 'cert-manager.io' });
  assert.ok(all.some((m) => m.kind === 'Issuer' && m.spec.selfSigned));
  for (const m of all.filter((o) => o.kind.endsWith('WebhookConfiguration') || o.kind === 'CustomResourceDefinition')) {
    assert.equal(m.metadata.annotations?.['cert-manager.io/inject-ca-from'], 'operless/operless-forwarder-webhook', `${m.kind} gets its caBundle injected`);
    const configs =
      m.kind === 'CustomResourceDefinition' ? [m.spec.conversion.webhook.clientConfig] : m.webhooks.map((w: Record<string, any>) => w.clientConfig);
    for (const config of configs) assert.equal(config.caBundle, undefined);
  }
  const crd = all.find((m) => m.kind === 'CustomResourceDefinition');
  assert.deepEqual(crd?.spec.conversion, {
    strategy: 'Webhook',
    webhook: {
      conversionReviewVersions: ['v1'],
      clientConfig: { service: { name: 'operless-forwarder-webhook', namespace: 'operless', path: '/memcached/convert', port: 443 } },
    },
  });
  assert.ok(
    crd?.spec.versions.every((v: { served: boolean }) => v.served),
    'every version served',
  );
  const named = await renderChart(helm, {
    values: withWebhooks({ certManager: { enabled: true, issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' } }, resources: [memcachedWebhooks()] }),
  });
  const namedAll = manifests(named.stdout) as unknown as Record<string, any>[];
  assert.equal(
    namedAll.some((m) => m.kind === 'Issuer'),
    false,
  );
  assert.deepEqual(namedAll.find((m) => m.kind === 'Certificate')?.spec.issuerRef, { name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
});

test('webhooks: a render that could not work stops with one message naming the value', async () => {
  const cases: [string, object, RegExp][] = [
    ['no trust', withWebhooks({ resources: [memcachedWebhooks()] }), /webhooks\.caBundle is required/],
    [
      'both trusts',
      withWebhooks({ caBundle: 'Zm9v', certManager: { enabled: true }, resources: [memcachedWebhooks()] }),
      /webhooks\.caBundle and webhooks\.certManager\.enabled are both set/,
    ],
    [
      'unknown alias',
      withWebhooks({ caBundle: 'Zm9v', resources: [memcachedWebhooks({ alias: 'other' })] }),
      /webhooks\.resources\[0\]\.alias: "other" is not a key of settings\.webhooks\.functions/,
    ],
    ['endpoint off', { ...base, webhooks: { caBundle: 'Zm9v', resources: [memcachedWebhooks()] } }, /settings\.webhooks\.enabled is not true/],
    [
      'not a CRD',
      withWebhooks({ caBundle: 'Zm9v', resources: [memcachedWebhooks({ conversion: { crd: 'kind: ConfigMap\n' } })] }),
      /webhooks\.resources\[0\]\.conversion\.crd: must be a CustomResourceDefinition/,
    ],
    [
      'another CRD',
      withWebhooks({ caBundle: 'Zm9v', resources: [memcachedWebhooks({ plural: 'caches', conversion: { crd: plainCrd() } })] }),
      /is the CRD of memcacheds\.cache\.example\.com, not of webhooks\.resources\[0\]/,
    ],
    [
      'a spoke as hub',
      withWebhooks({ caBundle: 'Zm9v', resources: [memcachedWebhooks({ apiVersion: 'cache.example.com/v1beta1', conversion: { crd: plainCrd() } })] }),
      /webhooks\.resources\[0\]\.apiVersion: must be the CRD's storage version/,
    ],
    [
      'a spoke above the hub',
      withWebhooks({ caBundle: 'Zm9v', resources: [memcachedWebhooks({ conversion: { crd: plainCrd() } })] }),
      /webhooks\.resources\[0\]\.conversion: v1beta1 of memcacheds\.cache\.example\.com outranks the storage version v1alpha1 in Kubernetes version priority.*hangs namespace deletion.*Make the newest version the hub.*webhooks\.resources\[0\]\.conversion\.preferredSpoke=true/,
    ],
    ['bad timeout', withWebhooks({ caBundle: 'Zm9v', resources: [memcachedWebhooks({ default: { timeoutSeconds: 31 } })] }), /timeoutSeconds/],
  ];
  for (const [name, values, message] of cases) {
    const r = await renderChart(helm, { values, kubeVersion: null });
    assert.notEqual(r.code, 0, `${name}: must not render`);
    assert.match(r.stderr, message, name);
  }
});

test("webhooks: the chart's version priority (a spoke above the storage version is refused) is src/crd/version-priority.ts's", async () => {
  const pairs: [string, string][] = [
    ['v1alpha1', 'v1beta1'],
    ['v1beta1', 'v1alpha1'],
    ['v1', 'v1beta2'],
    ['v1beta2', 'v1'],
    ['v2', 'v10'],
    ['v10', 'v2'],
    ['v1alpha2', 'v1alpha10'],
    ['v2beta1', 'v1'],
    ['v1', 'v1x'],
    ['v1alpha1', 'v1.1'],
    ['v3alpha1', 'v2alpha9'],
  ];
  // (A storage version that is not kube-like is refused by the values schema before this check.)
  for (const [storage, other] of pairs) {
    const crd = plainCrd()
      .replace(/name: v1beta1/, 'name: OTHER')
      .replace(/name: v1alpha1/, `name: ${storage}`)
      .replace(/name: OTHER/, `name: ${other}`);
    const r = await renderChart(helm, {
      values: withWebhooks({ caBundle: 'Zm9v', resources: [memcachedWebhooks({ apiVersion: `cache.example.com/${storage}`, conversion: { crd } })] }),
      kubeVersion: null,
    });
    const outranks = compareVersionPriority(other, storage) > 0;
    assert.equal(r.code !== 0, outranks, `${other} over ${storage}: ${outranks ? 'refused' : 'rendered'} (${r.stderr.slice(0, 200)})`);
    if (outranks) assert.match(r.stderr, new RegExp(`conversion: ${other} of memcacheds\\.cache\\.example\\.com outranks the storage version ${storage}`));
  }
});
