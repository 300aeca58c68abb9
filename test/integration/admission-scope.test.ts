/**
 * What the API server sends to the webhooks, against a REAL kube-apiserver with
 * kube-controller-manager (garbage collector, namespace controller): the chart's webhook
 * configurations and CRD conversion stanza (`helm template`), pointed at a forwarder's HTTPS
 * webhook endpoint, which invokes the webhook function through the AWS SDK's Lambda client
 * against the local Lambda Invoke API (as webhooks.test.ts, with one replica).
 *
 * Covers, in order:
 * 1. A converted LIST larger than one Lambda invocation (30 Memcacheds with 250,000-byte
 *    annotations, ~7.5 MB) read at the converted version returns every object; measured: the
 *    API server (v1.34) converts each item in a ConversionReview of its own.
 * 2. With the function DOWN: writes that leave the spec alone never reach the webhooks (the
 *    configurations' matchConditions) — a finalizer add, the per-key mark annotation, a
 *    finalizer removal of an object being deleted — while a spec change is still refused
 *    (failurePolicy Fail).
 * 3. The preferred version: the reference operator's CRD (v1alpha1 hub and storage, v1beta1
 *    spoke) rendered with `conversion.preferredSpoke: true` makes v1beta1 discovery's preferred
 *    version, so with the function down plain `kubectl get memcacheds` fails and namespace
 *    deletion stalls; with the storage version preferred (v1beta1 no longer served), the stalled
 *    namespace and a new one with a finalized object are deleted with the function still down.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
import type { WebhookInvoker } from '../../src/forwarder/webhook/server.ts';
import { MemcachedResource } from '../../src/memcached/types.ts';

const OPERATOR_NS = 'operless-system';
const BIG = 'big';
const APPS = 'apps';
const FUNCTION = 'memcached-webhook';
const FINALIZER = 'cache.example.com/finalizer';
const HUB = 'memcacheds.v1alpha1.cache.example.com';
const BIG_COUNT = 30;
const ANNOTATION_BYTES = 250_000;

let cp: ControlPlane;
let invokeServer: LambdaInvokeServer | undefined;
let forwarder: Forwarder;
let queue: MemoryQueueServer;
let crdFile: string;
const tlsDir = mkdtempSync(join(tmpdir(), 'operless-admission-scope-'));

const memcached = (name: string, namespace: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  metadata: { name, namespace, ...metadata },
  spec,
});

async function kubectlOk(args: string[], input?: string): Promise<string> {
  const res = await cp.kubectl(args, input === undefined ? {} : { input });
  assert.equal(res.code, 0, `kubectl ${args.join(' ')} failed: ${res.stderr}`);
  return res.stdout;
}

/** A rendered object with every `clientConfig.service` replaced by `url + path` (no Service routing here). */
function pointedAt(object: Record<string, any>, url: string): Record<string, any> {
  const copy = structuredClone(object);
  const configs =
    copy.kind === 'CustomResourceDefinition' ? [copy.spec.conversion.webhook.clientConfig] : copy.webhooks.map((w: Record<string, any>) => w.clientConfig);
  for (const config of configs) {
    config.url = `${url}${config.service.path}`;
    delete config.service;
  }
  return copy;
}

/** The conversion reviews as the API server sent them (objects, bytes), observed on their way to the real invoker. */
const reviews: { objects: number; bytes: number }[] = [];
function observed(invoke: WebhookInvoker): WebhookInvoker {
  return (name, payload, signal) => {
    const objects = (payload as { review?: { request?: { objects?: unknown } } }).review?.request?.objects;
    if (Array.isArray(objects)) reviews.push({ objects: objects.length, bytes: Buffer.byteLength(JSON.stringify(payload)) });
    return invoke(name, payload, signal);
  };
}

before(async () => {
  cp = await startControlPlane({ controllers: true });
  const ca = await createCertificateAuthority('operless-admission-scope-ca');
  const serving = await issueCertificate(ca, { commonName: 'operless-webhooks', hosts: ['127.0.0.1'], usage: 'server' });
  for (const ns of [OPERATOR_NS, BIG, APPS]) await kubectlOk(['create', 'namespace', ns]);
  const webhookFunction = await startMemcachedWebhookFunction(cp, OPERATOR_NS, FUNCTION);
  invokeServer = webhookFunction.invokeServer;
  const lambda = webhookFunction.lambda;
  const certFile = join(tlsDir, 'tls.crt');
  const keyFile = join(tlsDir, 'tls.key');
  writeFileSync(certFile, serving.certPem);
  writeFileSync(keyFile, serving.keyPem, { mode: 0o600 });

  crdFile = join(CRD_DIR, 'memcacheds.cache.example.com.yaml');
  const helm = (await provision({ targets: ['helm'] })).helm;
  assert.ok(helm, 'helm is provisioned');
  const values = (conversion: Record<string, unknown>) => ({
    clusterId: 'test',
    queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
    primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
    settings: { webhooks: { enabled: true, functions: { memcached: FUNCTION } } },
    webhooks: {
      caBundle: Buffer.from(ca.certPem).toString('base64'),
      resources: [
        { alias: 'memcached', apiVersion: 'cache.example.com/v1alpha1', plural: 'memcacheds', namespaced: true, default: {}, validate: {}, conversion },
      ],
    },
  });
  // The reference operator's CRD (a v1beta1 spoke above its v1alpha1 hub) is refused as it is…
  const refused = await renderChart(helm, { namespace: OPERATOR_NS, values: values({ crd: readFileSync(crdFile, 'utf8') }) });
  assert.notEqual(refused.code, 0);
  assert.match(
    refused.stderr,
    /webhooks\.resources\[0\]\.conversion: v1beta1 of memcacheds\.cache\.example\.com outranks the storage version v1alpha1 in Kubernetes version priority/,
  );
  // …and rendered when acknowledged: the layout whose consequences test 3 measures.
  const r = await renderChart(helm, { namespace: OPERATOR_NS, values: values({ crd: readFileSync(crdFile, 'utf8'), preferredSpoke: true }) });
  assert.equal(r.code, 0, r.stderr);
  const rendered = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Record<string, any>)
    .filter((o) => o && typeof o === 'object');

  // The kind exists before the forwarder watches it (the chart's CRD then adds the conversion stanza).
  await cp.installCrds([crdFile]);
  queue = await startMemoryQueueServer({ queues: [{ name: 'work' }] });
  const queueUrl = queue.queueUrl('work');
  forwarder = startForwarder(
    {
      clusterId: 'test',
      queue: { url: queueUrl, region: queue.region },
      primaries: [{ apiVersion: MemcachedResource.kindRef.apiVersion, kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
      resyncOnStart: false,
      leaderElection: {
        enabled: true,
        namespace: OPERATOR_NS,
        identity: 'replica-a',
        leaseDurationSeconds: 15,
        renewDeadlineSeconds: 10,
        retryPeriodSeconds: 1,
      },
      server: { port: 0, host: '127.0.0.1' },
      webhooks: { enabled: true, host: '127.0.0.1', port: 0, certFile, keyFile, functions: { memcached: FUNCTION } },
    },
    {
      kubeConfig: cp.kubeConfig,
      queue: createSqsQueue({ queueUrl, region: queue.region, client: queue.sqs() }),
      logger: silentLogger,
      invokeWebhook: observed(lambdaInvoker({ client: lambda })),
    },
  );
  await forwarder.ready;
  const url = forwarder.webhookUrl as string;
  const crd = rendered.find((o) => o.kind === 'CustomResourceDefinition');
  assert.ok(crd);
  await cp.installCrds([pointedAt(crd, url)]);
  const configurations = rendered.filter((o) => /^(Mutating|Validating)WebhookConfiguration$/.test(o.kind));
  assert.equal(configurations.length, 2);
  for (const configuration of configurations) {
    assert.deepEqual(
      configuration.webhooks[0].matchConditions.map((c: { name: string }) => c.name),
      ['not-being-deleted', 'create-or-spec-change'],
    );
    await kubectlOk(['apply', '-f', '-'], JSON.stringify(pointedAt(configuration, url)));
  }
  await waitUntil(
    'the defaulting webhook is called',
    async () => {
      const res = await cp.kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], { input: JSON.stringify(memcached('probe', APPS, { size: 1 })) });
      return res.code === 0 && (JSON.parse(res.stdout) as { spec: { resources?: unknown } }).spec.resources !== undefined;
    },
    { timeoutMs: 30_000 },
  );
});

after(async () => {
  await forwarder?.stop({ graceMs: 0 });
  await queue?.stop();
  await invokeServer?.close();
  await cp?.stop();
  rmSync(tlsDir, { recursive: true, force: true });
});

test('a converted LIST larger than one Lambda invocation returns every object; the API server sends each object in a review of its own', async (t) => {
  const items = Array.from({ length: BIG_COUNT }, (_, i) =>
    memcached(`big-${String(i).padStart(2, '0')}`, BIG, { size: 1 }, { annotations: { 'example.com/blob': String(i % 10).repeat(ANNOTATION_BYTES) } }),
  );
  for (const item of items) await kubectlOk(['create', '-f', '-'], JSON.stringify(item));
  // Nothing else may read the kind at v1beta1 (the garbage collector's informers read the
  // preferred version) and the API server starts afresh, so this list is converted now.
  await cp.stopControllerManager();
  // Started again whatever happens here: the next tests need its namespace controller.
  t.after(() => cp.startControllerManager());
  // Counted from the restart: a review the restarted API server sends before the LIST asks (a
  // full run once saw none during the LIST itself) converts these objects too, one per review.
  reviews.splice(0);
  await cp.restartApiServer();
  const res = await cp.kubectl(['get', 'memcacheds.v1beta1.cache.example.com', '-n', BIG, '-o', 'json']);
  assert.equal(res.code, 0, `the converted list failed: ${res.stderr.slice(0, 500)}`);
  const list = JSON.parse(res.stdout) as {
    items: { apiVersion: string; metadata: { name: string; annotations: Record<string, string> }; spec: Record<string, unknown> }[];
  };
  assert.ok(Buffer.byteLength(res.stdout) > 6_291_456, 'the list is larger than one invocation');
  assert.deepEqual(
    list.items.map((i) => i.metadata.name),
    items.map((i) => i.metadata.name),
  );
  for (const [n, item] of list.items.entries()) {
    assert.equal(item.apiVersion, 'cache.example.com/v1beta1');
    assert.equal(item.spec.replicas, 1);
    assert.equal(item.spec.size, undefined);
    assert.equal(item.metadata.annotations['example.com/blob'], String(n % 10).repeat(ANNOTATION_BYTES));
  }
  const sent = reviews.splice(0);
  t.diagnostic(
    `${list.items.length} objects, ${Buffer.byteLength(res.stdout)} bytes of JSON; ${sent.length} conversion reviews, at most ${Math.max(...sent.map((r) => r.objects))} object(s) and ${Math.max(...sent.map((r) => r.bytes))} bytes each`,
  );
  // Measured on kube-apiserver v1.34: every item of the LIST is converted in a review of its own
  // (and kept converted: a second list sends none). A review of many objects is chunked by the
  // forwarder's invoker (test/unit/forwarder/conversion-split.test.ts).
  assert.ok(sent.length >= BIG_COUNT, `${sent.length} reviews for ${BIG_COUNT} objects`);
  assert.ok(sent.every((r) => r.objects === 1 && r.bytes < 6_291_456));
});

test('function down: finalizer add, the per-key mark and a finalizer removal of an object being deleted pass; a spec change is refused', async (t) => {
  await kubectlOk(['create', '-f', '-'], JSON.stringify(memcached('kept', APPS, { size: 1 })));
  await kubectlOk(['create', '-f', '-'], JSON.stringify(memcached('doomed', APPS, { size: 1 }, { finalizers: [FINALIZER] })));
  await invokeServer?.close();
  invokeServer = undefined;
  // The operator's writes, through the hub version as its client makes them.
  await kubectlOk(['patch', HUB, 'kept', '-n', APPS, '--type=merge', '-p', JSON.stringify({ metadata: { finalizers: [FINALIZER] } })]);
  await kubectlOk([
    'patch',
    HUB,
    'kept',
    '-n',
    APPS,
    '--type=merge',
    '-p',
    JSON.stringify({ metadata: { annotations: { 'operless.dev/requeue-at': '2026-12-03T20:00:00.000Z' } } }),
  ]);
  await kubectlOk(['delete', HUB, 'doomed', '-n', APPS, '--wait=false']);
  await kubectlOk(['patch', HUB, 'doomed', '-n', APPS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  await waitUntil('the finalized object is gone', async () => (await cp.kubectl(['get', HUB, 'doomed', '-n', APPS])).code !== 0, { timeoutMs: 30_000 });
  const kept = JSON.parse(await kubectlOk(['get', HUB, 'kept', '-n', APPS, '-o', 'json'])) as {
    metadata: { finalizers?: string[]; annotations?: Record<string, string> };
  };
  assert.deepEqual(kept.metadata.finalizers, [FINALIZER]);
  assert.equal(kept.metadata.annotations?.['operless.dev/requeue-at'], '2026-12-03T20:00:00.000Z');
  // A spec change still needs the webhooks: refused, naming the webhook.
  const changed = await cp.kubectl(['patch', HUB, 'kept', '-n', APPS, '--type=merge', '-p', '{"spec":{"size":2}}']);
  assert.notEqual(changed.code, 0, 'with failurePolicy Fail a spec change must not pass unchecked');
  t.diagnostic(`spec change: ${changed.stderr.trim()}`);
  assert.match(changed.stderr, /failed calling webhook "default\.memcacheds\.cache\.example\.com"/);
  const created = await cp.kubectl(['create', '-f', '-'], { input: JSON.stringify(memcached('new', APPS, { size: 1 })) });
  assert.notEqual(created.code, 0, 'a create is refused too');
});

test('function down, a spoke preferred (preferredSpoke: true): plain kubectl get fails and namespace deletion stalls; the hub version still reads', async (t) => {
  const discovery = JSON.parse(await kubectlOk(['get', '--raw', '/apis/cache.example.com'])) as { preferredVersion: { version: string } };
  assert.equal(discovery.preferredVersion.version, 'v1beta1');
  const plain = await cp.kubectl(['get', 'memcacheds', '-n', APPS]);
  t.diagnostic(`kubectl get memcacheds: exit ${plain.code}: ${plain.stderr.trim().slice(0, 300)}`);
  assert.notEqual(plain.code, 0);
  assert.match(plain.stderr, /conversion webhook/);
  await kubectlOk(['get', HUB, '-n', APPS]);
  await kubectlOk(['delete', 'namespace', BIG, '--wait=false']);
  let condition = '';
  await waitUntil(
    'the namespace controller reports that it cannot delete the Memcacheds',
    async () => {
      const ns = JSON.parse(await kubectlOk(['get', 'namespace', BIG, '-o', 'json'])) as {
        status: { conditions?: { type: string; status: string; message: string }[] };
      };
      const failed = ns.status.conditions?.find(
        (c) => (c.type === 'NamespaceDeletionContentFailure' || c.type === 'NamespaceDeletionDiscoveryFailure') && c.status === 'True',
      );
      condition = failed ? `${failed.type}: ${failed.message}` : '';
      return failed !== undefined;
    },
    { timeoutMs: 90_000 },
  );
  t.diagnostic(condition.slice(0, 400));
  assert.match(condition, /conversion webhook/);
  assert.equal((await cp.kubectl(['get', 'namespace', BIG])).code, 0, 'the namespace is still there');
});

test('function down, the storage version preferred: the stalled namespace and one with a finalized object are deleted', async () => {
  // The sound layout for this CRD: nothing served above the storage version (the checked-in CRD, v1beta1 not served).
  await cp.installCrds([crdFile]);
  await waitUntil(
    'discovery prefers the storage version',
    async () => {
      const discovery = JSON.parse(await kubectlOk(['get', '--raw', '/apis/cache.example.com'])) as { preferredVersion: { version: string } };
      return discovery.preferredVersion.version === 'v1alpha1';
    },
    { timeoutMs: 30_000 },
  );
  // The operator finalizes: it removes its finalizer from the object the namespace controller deletes.
  await kubectlOk(['delete', 'namespace', APPS, '--wait=false']);
  await waitUntil(
    'the finalized Memcached is being deleted',
    async () => {
      const res = await cp.kubectl(['get', HUB, 'kept', '-n', APPS, '-o', 'json']);
      return res.code === 0 && (JSON.parse(res.stdout) as { metadata: { deletionTimestamp?: string } }).metadata.deletionTimestamp !== undefined;
    },
    { timeoutMs: 60_000 },
  );
  await kubectlOk(['patch', HUB, 'kept', '-n', APPS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  for (const ns of [BIG, APPS]) {
    await waitUntil(`namespace ${ns} is deleted`, async () => (await cp.kubectl(['get', 'namespace', ns])).code !== 0, { timeoutMs: 120_000 });
  }
});
