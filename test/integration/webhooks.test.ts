/**
 * Admission and conversion webhooks against a REAL kube-apiserver, through the shipped path:
 * the API server calls the HTTPS webhook endpoint of two forwarder replicas (`startForwarder`
 * with leader election and `webhooks` enabled; defaulting goes to one, validation and
 * conversion to the other, so the follower serves too; a serving certificate from a test CA
 * read from files, trusted through `caBundle`, at https://127.0.0.1:<port>), which invokes the webhook
 * function with the AWS SDK's Lambda client against the local Lambda Invoke API; the function
 * reads the cluster as a ServiceAccount that may only get namespaces and list Memcacheds.
 *
 * The webhook configurations and the CRD's conversion stanza are the Helm chart's
 * (`helm template` with the checked-in CRD, v1beta1 listed as not served), applied as rendered
 * but for `clientConfig.service`, which becomes the replica's URL (no Service routing here);
 * the rendered objects are also accepted as they are by a server-side dry run.
 *
 * Certificate rotation: the serving certificate is mounted as kubelet mounts a Secret (the
 * `..data` symlink swapped by one rename); a new CA's pair swapped in and every caBundle set
 * to the new CA keeps admission and conversion answering with the same replicas.
 *
 * Covers: defaulting on create (through v1alpha1 and v1beta1), a denial with the handler's
 * message at kubectl level (a read-backed namespace cap; a spec check), objects written as
 * v1alpha1 read as v1beta1 and back with patches through either version, the failure policy
 * with the function down (writes refused with the webhook's name; the operator's namespace
 * still writable), and hostile requests to the endpoint.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { provision, startControlPlane, waitUntil, type ControlPlane } from '../../src/testing/index.ts';
import { renderChart } from '../../src/build/forwarder-chart.ts';
import { CRD_DIR } from '../../src/resources.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/testing/x509.ts';
import { silentLogger } from '../../src/observability/log.ts';
import type { LambdaInvokeServer } from '../../src/local/lambda-invoke-server.ts';
import { startMemcachedWebhookFunction } from '../support/memcached-webhook-function.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { startMemoryQueueServer, type MemoryQueueServer } from '../../src/local/memory-queue-server.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import { lambdaInvoker } from '../../src/forwarder/webhook/lambda-invoker.ts';
import { MemcachedResource } from '../../src/memcached/types.ts';
import { MAX_PODS_LABEL } from '../../src/memcached/webhook.ts';

const OPERATOR_NS = 'operless-system';
const APPS = 'apps';
const CAPPED = 'capped';
const FUNCTION = 'memcached-webhook';

let cp: ControlPlane;
let caPem: string;
let invokeServer: LambdaInvokeServer;
/** Two forwarder replicas with leader election: the webhooks are pointed at both, so the follower serves too. */
let replicas: Forwarder[] = [];
/** The chart's webhook objects as rendered (Service, configurations, CRD with its conversion stanza). */
let rendered: Record<string, any>[] = [];
/** What a plain install (the checked-in CRD, no webhook) answered before the chart's objects were applied. */
let plainInstall: { alpha: { code: number | null; stderr: string }; beta: { code: number | null; stderr: string } };
let queue: MemoryQueueServer;
const tlsDir = mkdtempSync(join(tmpdir(), 'operless-webhook-tls-'));

const memcached = (name: string, namespace: string, spec: Record<string, unknown>, version = 'v1alpha1') =>
  JSON.stringify({ apiVersion: `cache.example.com/${version}`, kind: 'Memcached', metadata: { name, namespace }, spec });

async function kubectlOk(args: string[], input?: string): Promise<string> {
  const res = await cp.kubectl(args, input === undefined ? {} : { input });
  assert.equal(res.code, 0, `kubectl ${args.join(' ')} failed: ${res.stderr}`);
  return res.stdout;
}

async function getJson(resource: string, name: string, namespace: string): Promise<{ apiVersion: string; spec: Record<string, unknown> }> {
  return JSON.parse(await kubectlOk(['get', resource, name, '-n', namespace, '-o', 'json'])) as { apiVersion: string; spec: Record<string, unknown> };
}

let secretGeneration = 0;
/**
 * Writes a mounted Secret as kubelet's atomic writer does: the files in a new timestamped
 * directory, `..data` swapped to it by one rename, each key a symlink `<key> → ..data/<key>`,
 * the previous directory removed.
 */
function mountSecret(dir: string, files: Record<string, string>): void {
  const generation = `..gen-${++secretGeneration}`;
  mkdirSync(join(dir, generation));
  for (const [key, text] of Object.entries(files)) writeFileSync(join(dir, generation, key), text, { mode: 0o600 });
  symlinkSync(generation, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const key of Object.keys(files)) {
    try {
      lstatSync(join(dir, key));
    } catch {
      symlinkSync(join('..data', key), join(dir, key));
    }
  }
  for (const old of readdirSync(dir).filter((name) => name.startsWith('..gen-') && name !== generation))
    rmSync(join(dir, old), { recursive: true, force: true });
}

/** The chart rendered for the reference operator's webhooks, trusting `caBundle` (base64 PEM). */
async function renderWebhookChart(caBundle: string): Promise<Record<string, any>[]> {
  const provisioned = await provision({ targets: ['helm'] });
  assert.ok(provisioned.helm, 'helm is provisioned');
  const r = await renderChart(provisioned.helm, {
    namespace: OPERATOR_NS,
    values: {
      clusterId: 'test',
      queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
      primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
      settings: { webhooks: { enabled: true, functions: { memcached: FUNCTION } } },
      webhooks: {
        caBundle,
        resources: [
          {
            alias: 'memcached',
            apiVersion: 'cache.example.com/v1alpha1',
            plural: 'memcacheds',
            namespaced: true,
            default: {},
            validate: {},
            conversion: { crd: readFileSync(join(CRD_DIR, 'memcacheds.cache.example.com.yaml'), 'utf8'), preferredSpoke: true },
          },
        ],
      },
    },
  });
  assert.equal(r.code, 0, r.stderr);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Record<string, any>)
    .filter((o) => o && typeof o === 'object');
}

/** A rendered object with every `clientConfig.service` replaced by the URL `urlOf(path)` (no Service routing in the test environment). */
function pointedAt(object: Record<string, any>, urlOf: (path: string) => string): Record<string, any> {
  const copy = structuredClone(object);
  const configs =
    copy.kind === 'CustomResourceDefinition' ? [copy.spec.conversion.webhook.clientConfig] : copy.webhooks.map((w: Record<string, any>) => w.clientConfig);
  for (const config of configs) {
    config.url = urlOf(config.service.path);
    delete config.service;
  }
  return copy;
}

before(async () => {
  cp = await startControlPlane();
  const ca = await createCertificateAuthority('operless-webhook-test-ca');
  caPem = ca.certPem;
  const serving = await issueCertificate(ca, { commonName: 'operless-webhooks', hosts: ['127.0.0.1'], usage: 'server' });
  for (const ns of [OPERATOR_NS, APPS, CAPPED]) await kubectlOk(['create', 'namespace', ns]);
  await kubectlOk(['label', 'namespace', CAPPED, `${MAX_PODS_LABEL}=3`]);

  // The function's identity: get namespaces, list Memcacheds, nothing else.
  const webhookFunction = await startMemcachedWebhookFunction(cp, OPERATOR_NS, FUNCTION);
  invokeServer = webhookFunction.invokeServer;
  const lambda = webhookFunction.lambda;
  // The serving certificate from files, as a mounted Secret.
  const certFile = join(tlsDir, 'tls.crt');
  const keyFile = join(tlsDir, 'tls.key');
  mountSecret(tlsDir, { 'tls.crt': serving.certPem, 'tls.key': serving.keyPem });
  const caBundle = Buffer.from(caPem).toString('base64');
  rendered = await renderWebhookChart(caBundle);
  // A plain install first: the checked-in CRD (v1beta1 listed, not served), no webhook running.
  await cp.installCrds([join(CRD_DIR, 'memcacheds.cache.example.com.yaml')]);
  plainInstall = {
    alpha: await cp.kubectl(['create', '-f', '-'], { input: memcached('before-webhooks', APPS, { size: 1 }) }),
    beta: await cp.kubectl(['get', 'memcacheds.v1beta1.cache.example.com', '-n', APPS]),
  };

  queue = await startMemoryQueueServer({ queues: [{ name: 'work' }] });
  const queueUrl = queue.queueUrl('work');
  for (const identity of ['replica-a', 'replica-b']) {
    const forwarder = startForwarder(
      {
        clusterId: 'test',
        queue: { url: queueUrl, region: queue.region },
        primaries: [{ apiVersion: MemcachedResource.kindRef.apiVersion, kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
        resyncOnStart: false,
        leaderElection: { enabled: true, namespace: OPERATOR_NS, identity, leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 1 },
        server: { port: 0, host: '127.0.0.1' },
        webhooks: { enabled: true, host: '127.0.0.1', port: 0, certFile, keyFile, functions: { memcached: FUNCTION } },
      },
      {
        kubeConfig: cp.kubeConfig,
        queue: createSqsQueue({ queueUrl, region: queue.region, client: queue.sqs() }),
        logger: silentLogger,
        invokeWebhook: lambdaInvoker({ client: lambda }),
      },
    );
    replicas.push(forwarder);
    await forwarder.ready;
  }
  assert.equal(replicas.filter((r) => r.isLeader()).length, 1, 'one leader, one follower');
  // Conversion and validation through one replica, defaulting through the other: both serve, leader or not.
  const urlOf = (path: string) => `${replicas[path.endsWith('/default') ? 1 : 0]?.webhookUrl}${path}`;
  const crd = rendered.find((o) => o.kind === 'CustomResourceDefinition');
  assert.ok(crd, 'the chart renders the CRD with its conversion stanza');
  await cp.installCrds([pointedAt(crd, urlOf)]);
  const configurations = rendered.filter((o) => /^(Mutating|Validating)WebhookConfiguration$/.test(o.kind));
  assert.equal(configurations.length, 2);
  for (const configuration of configurations) await kubectlOk(['apply', '-f', '-'], JSON.stringify(pointedAt(configuration, urlOf)));
  // The API server picks configurations up asynchronously: wait until a server-side dry run is defaulted.
  await waitUntil(
    'the defaulting webhook is called',
    async () => {
      const res = await cp.kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], { input: memcached('probe', APPS, { size: 1 }) });
      return res.code === 0 && (JSON.parse(res.stdout) as { spec: { resources?: unknown } }).spec.resources !== undefined;
    },
    { timeoutMs: 30_000 },
  );
});

after(async () => {
  for (const forwarder of replicas) await forwarder.stop({ graceMs: 0 });
  await queue?.stop();
  await invokeServer?.close();
  await cp?.stop();
  rmSync(tlsDir, { recursive: true, force: true });
});

test('a plain install (the checked-in CRD, no webhook running) serves v1alpha1 only', () => {
  assert.equal(plainInstall.alpha.code, 0, plainInstall.alpha.stderr);
  assert.notEqual(plainInstall.beta.code, 0, 'v1beta1 is not served without the conversion webhook');
  assert.match(plainInstall.beta.stderr, /the server doesn't have a resource type|could not find the requested resource|NotFound/i);
});

test("the chart's webhook objects as rendered (Service clientConfig, every version served) are accepted by the API server", async () => {
  const kinds = ['Service', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'CustomResourceDefinition'];
  const objects = rendered.filter((o) => kinds.includes(o.kind) && (o.kind !== 'Service' || o.metadata.name.endsWith('-webhook')));
  assert.deepEqual(objects.map((o) => o.kind).sort(), [...kinds].sort());
  const crd = objects.find((o) => o.kind === 'CustomResourceDefinition');
  assert.deepEqual(
    crd?.spec.versions.map((v: { name: string; served: boolean; storage: boolean }) => [v.name, v.served, v.storage]),
    [
      ['v1alpha1', true, true],
      ['v1beta1', true, false],
    ],
  );
  assert.equal(crd?.metadata.annotations['helm.sh/resource-policy'], 'keep');
  // The Service is new; the configurations and the CRD exist (pointed at the replicas' URLs): replaced as rendered.
  const service = await cp.kubectl(['apply', '--dry-run=server', '-n', OPERATOR_NS, '-f', '-'], {
    input: JSON.stringify(objects.find((o) => o.kind === 'Service')),
  });
  assert.equal(service.code, 0, service.stderr);
  const replaced = await cp.kubectl(['replace', '--dry-run=server', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects.filter((o) => o.kind !== 'Service') }),
  });
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.equal((replaced.stdout.match(/replaced \(server dry run\)/g) ?? []).length, 3, replaced.stdout);
});

test('defaulting: resources appear on create when not given (through v1alpha1 and v1beta1); given ones are kept', async () => {
  await kubectlOk(['apply', '-f', '-'], memcached('plain', APPS, { size: 1 }));
  const plain = await getJson('memcacheds.v1alpha1.cache.example.com', 'plain', APPS);
  assert.deepEqual(plain.spec.resources, { requests: { cpu: '100m', memory: '96Mi' }, limits: { memory: '96Mi' } });

  await kubectlOk(['apply', '-f', '-'], memcached('beta', APPS, { replicas: 1, memoryLimitMB: 128 }, 'v1beta1'));
  const beta = await getJson('memcacheds.v1beta1.cache.example.com', 'beta', APPS);
  assert.deepEqual(beta.spec.resources, { requests: { cpu: '100m', memory: '160Mi' }, limits: { memory: '160Mi' } });

  const given = { limits: { memory: '512Mi' } };
  await kubectlOk(['apply', '-f', '-'], memcached('given', APPS, { size: 1, resources: given }));
  assert.deepEqual((await getJson('memcacheds.v1alpha1.cache.example.com', 'given', APPS)).spec.resources, given);
});

test("validation: a write past the namespace cap (read from the namespace label) is denied with the handler's message", async (t) => {
  await kubectlOk(['apply', '-f', '-'], memcached('first', CAPPED, { size: 2 }));
  const denied = await cp.kubectl(['apply', '-f', '-'], { input: memcached('second', CAPPED, { size: 2 }) });
  assert.notEqual(denied.code, 0, 'the second Memcached must be refused');
  t.diagnostic(`kubectl: ${denied.stderr.trim()}`);
  assert.match(denied.stderr, /denied the request/);
  assert.match(denied.stderr, /namespace capped allows at most 3 memcached pods/);
  assert.match(denied.stderr, /spec\.size may be at most 1, not 2/);
  // Within the cap it is admitted, also through v1beta1 (converted to the hub before validation).
  await kubectlOk(['apply', '-f', '-'], memcached('second', CAPPED, { replicas: 1 }, 'v1beta1'));
  const raised = await cp.kubectl(['patch', 'memcacheds.v1beta1.cache.example.com', 'second', '-n', CAPPED, '--type=merge', '-p', '{"spec":{"replicas":2}}']);
  assert.notEqual(raised.code, 0);
  assert.match(raised.stderr, /at most 1, not 2/);
});

test('validation: a spec check refuses the write before it reaches the controller', async () => {
  const res = await cp.kubectl(['apply', '-f', '-'], {
    input: memcached('tight', APPS, { size: 1, memoryLimitMB: 128, resources: { limits: { memory: '64Mi' } } }),
  });
  assert.notEqual(res.code, 0);
  assert.match(res.stderr, /OOM-killed/);
});

test('conversion: written as v1alpha1, read as v1beta1 and back; patches through either version round-trip', async () => {
  await kubectlOk(['apply', '-f', '-'], memcached('conv', APPS, { size: 2 }));
  const asBeta = await getJson('memcacheds.v1beta1.cache.example.com', 'conv', APPS);
  assert.equal(asBeta.apiVersion, 'cache.example.com/v1beta1');
  assert.equal(asBeta.spec.replicas, 2);
  assert.equal(asBeta.spec.size, undefined);

  await kubectlOk(['patch', 'memcacheds.v1beta1.cache.example.com', 'conv', '-n', APPS, '--type=merge', '-p', '{"spec":{"replicas":1}}']);
  const asAlpha = await getJson('memcacheds.v1alpha1.cache.example.com', 'conv', APPS);
  assert.equal(asAlpha.spec.size, 1);
  assert.equal(asAlpha.spec.replicas, undefined);

  await kubectlOk(['patch', 'memcacheds.v1alpha1.cache.example.com', 'conv', '-n', APPS, '--type=merge', '-p', '{"spec":{"size":3}}']);
  assert.equal((await getJson('memcacheds.v1beta1.cache.example.com', 'conv', APPS)).spec.replicas, 3);
  // A list through v1beta1 converts every item.
  const list = JSON.parse(await kubectlOk(['get', 'memcacheds.v1beta1.cache.example.com', '-n', APPS, '-o', 'json'])) as {
    items: { spec: Record<string, unknown> }[];
  };
  assert.ok(list.items.length >= 2 && list.items.every((item) => typeof item.spec.replicas === 'number' && item.spec.size === undefined));
});

test('the endpoint refuses hostile requests without invoking the function', async () => {
  const before = invokeServer.invocations[FUNCTION] ?? 0;
  const call = (path: string, body: string, method = 'POST') =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = https.request(`${replicas[0]?.webhookUrl}${path}`, { method, ca: caPem, headers: { 'Content-Type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.once('error', reject);
      req.end(body);
    });
  assert.equal((await call('/memcached/validate', '{not json')).status, 400);
  assert.equal((await call('/other/validate', '{}')).status, 404);
  assert.equal((await call('/memcached/../validate', '{}')).status, 404);
  assert.equal((await call('/memcached/validate', '', 'GET')).status, 405);
  const oversized = await call('/memcached/validate', `{"pad":"${'x'.repeat(6 * 1024 * 1024)}"}`);
  assert.equal(oversized.status, 413);
  assert.match(oversized.text, /larger than 4194304, the limit of the validate route/);
  assert.equal(invokeServer.invocations[FUNCTION] ?? 0, before);
  const refused = await call(
    '/memcached/validate',
    JSON.stringify({ kind: 'AdmissionReview', apiVersion: 'admission.k8s.io/v1', request: { uid: 'x', operation: 'NUKE' } }),
  );
  assert.equal(refused.status, 400);
  assert.match(refused.text, /request\.operation must be one of/);
  assert.equal((JSON.parse(refused.text) as { kind: string; code: number }).kind, 'Status');
});

test("certificate rotation: a new CA's pair swapped in as kubelet does and every caBundle updated: admission and conversion keep answering without a restart; an invalid pair is not served", async (t) => {
  const reloads = async (result: string) => {
    let sum = 0;
    for (const replica of replicas) sum += (await replica.metrics.webhookCertificateReloads.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
    return sum;
  };
  const reloadedBefore = await reloads('reloaded');
  const newCa = await createCertificateAuthority('operless-webhook-test-ca-rotated');
  const rotated = await issueCertificate(newCa, { commonName: 'operless-webhooks', hosts: ['127.0.0.1'], usage: 'server' });
  mountSecret(tlsDir, { 'tls.crt': rotated.certPem, 'tls.key': rotated.keyPem });
  await waitUntil('both replicas serve the new pair', async () => (await reloads('reloaded')) >= reloadedBefore + replicas.length, { timeoutMs: 30_000 });
  // As the CA injector does: every caBundle now names the new CA only, so the old certificate is no longer trusted.
  const caBundle = Buffer.from(newCa.certPem).toString('base64');
  const urlOf = (path: string) => `${replicas[path.endsWith('/default') ? 1 : 0]?.webhookUrl}${path}`;
  const withBundle = (object: Record<string, any>) => {
    const copy = pointedAt(object, urlOf);
    const configs =
      copy.kind === 'CustomResourceDefinition' ? [copy.spec.conversion.webhook.clientConfig] : copy.webhooks.map((w: Record<string, any>) => w.clientConfig);
    for (const config of configs) config.caBundle = caBundle;
    return copy;
  };
  const objects = rendered.filter((o) => /^(Mutating|Validating)WebhookConfiguration$|^CustomResourceDefinition$/.test(o.kind)).map(withBundle);
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  await waitUntil(
    'admission through the rotated certificate',
    async () => {
      const res = await cp.kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], { input: memcached('rotated', APPS, { size: 1 }) });
      return res.code === 0 && (JSON.parse(res.stdout) as { spec: { resources?: unknown } }).spec.resources !== undefined;
    },
    { timeoutMs: 30_000 },
  );
  await waitUntil(
    'conversion through the rotated certificate',
    async () => (await cp.kubectl(['get', 'memcacheds.v1beta1.cache.example.com', 'conv', '-n', APPS, '-o', 'json'])).code === 0,
    { timeoutMs: 30_000 },
  );
  assert.equal((await getJson('memcacheds.v1beta1.cache.example.com', 'conv', APPS)).apiVersion, 'cache.example.com/v1beta1');

  // A certificate with another certificate's key: logged, counted, the previous pair kept.
  const invalidBefore = await reloads('invalid');
  const stranger = await issueCertificate(newCa, { commonName: 'stranger', hosts: ['127.0.0.1'], usage: 'server' });
  mountSecret(tlsDir, { 'tls.crt': rotated.certPem, 'tls.key': stranger.keyPem });
  await waitUntil('both replicas refuse the mismatched pair', async () => (await reloads('invalid')) >= invalidBefore + replicas.length, { timeoutMs: 30_000 });
  await kubectlOk(['apply', '-f', '-'], memcached('after-invalid', APPS, { size: 1 }));
  assert.ok(
    (await getJson('memcacheds.v1beta1.cache.example.com', 'after-invalid', APPS)).spec.resources !== undefined,
    'defaulted and converted with the pair still served',
  );
  t.diagnostic(`reloaded ${(await reloads('reloaded')) - reloadedBefore}, refused ${(await reloads('invalid')) - invalidBefore} (two replicas)`);
});

test("function down: failurePolicy Fail refuses writes naming the webhook; the operator's namespace keeps working", async (t) => {
  await invokeServer.close();
  const res = await cp.kubectl(['apply', '-f', '-'], { input: memcached('while-down', APPS, { size: 1 }) });
  assert.notEqual(res.code, 0, 'with failurePolicy Fail a write must not pass unchecked');
  t.diagnostic(`kubectl: ${res.stderr.trim()}`);
  assert.match(res.stderr, /failed calling webhook "default\.memcacheds\.cache\.example\.com"/);
  assert.match(res.stderr, /webhook function memcached \(default\): cannot invoke it/, "the forwarder's reason reaches the user");
  // Excluded by the namespace selector: the operator can still write in its own namespace.
  await kubectlOk(['apply', '-f', '-'], memcached('operator-own', OPERATOR_NS, { size: 1 }));
  const own = await getJson('memcacheds.v1alpha1.cache.example.com', 'operator-own', OPERATOR_NS);
  assert.equal(own.spec.resources, undefined, 'not defaulted: the webhook is not called there');
});
