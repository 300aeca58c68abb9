/**
 * Webhook availability is its own (issue 29, item 4), with the forwarder as the image runs it
 * (the bundle, a child process), a REAL kube-apiserver, a REAL broker (ElasticMQ) reached
 * through the loopback stall proxy (test/support/stall-proxy.ts), and the local Lambda Invoke
 * API as the webhook function:
 *
 * - while the queue's connections stall, `/readyz` fails naming the queue, and `/readyz/webhooks`
 *   (the chart's readiness probe with webhooks on) stays ready and the endpoint keeps answering
 *   and invoking — an SQS outage is not an admission outage;
 * - on SIGTERM (the queue healthy again, so nothing holds the shutdown) `/readyz/webhooks` turns
 *   not ready at once while the endpoint goes on answering for `webhooks.drainSeconds`, each
 *   answer closing its connection; then the process exits 0.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { FORWARDER_NODE_FLAGS } from '../../src/build/forwarder-node-flags.ts';
import { createCertificateAuthority, issueCertificate, type KeyPair } from '../../src/testing/x509.ts';
import { startLambdaInvokeServer, type LambdaInvokeServer } from '../../src/local/lambda-invoke-server.ts';
import { startStallProxy, type StallProxy } from '../support/stall-proxy.ts';
import { spawnLogged, type LoggedChild } from './forwarder-env.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const MEMCACHED_CRD = join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml');
const FUNCTION = 'availability-webhook';
const NS = 'apps';
const QUEUE = 'availability';
const DRAIN_SECONDS = 4;

let cp: ControlPlane;
let broker: Broker;
let sqsProxy: StallProxy;
let ca: KeyPair;
let invokeServer: LambdaInvokeServer;
let forwarder: LoggedChild;
let webhookUrl: string;
let probesUrl: string;
const work = mkdtempSync(join(tmpdir(), 'webhook-availability-'));
const children = new Set<ChildProcess>();
let invocations = 0;

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [MEMCACHED_CRD] }), startBroker({ queues: [{ name: QUEUE }] })]);
  await cp.kubectl(['create', 'namespace', NS]);
  const brokerUrl = new URL(broker.endpoint);
  sqsProxy = await startStallProxy({ host: brokerUrl.hostname, port: Number(brokerUrl.port) });
  ca = await createCertificateAuthority('operless-availability-test-ca');
  const serving = await issueCertificate(ca, { commonName: 'operless-availability', hosts: ['127.0.0.1'], usage: 'server' });
  writeFileSync(join(work, 'tls.crt'), serving.certPem);
  writeFileSync(join(work, 'tls.key'), serving.keyPem, { mode: 0o600 });
  invokeServer = await startLambdaInvokeServer({
    functions: {
      [FUNCTION]: (event) => {
        invocations++;
        const review = (event as { review: { request?: { uid?: string } } }).review;
        return { review: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request?.uid ?? '', allowed: true } } };
      },
    },
  });
  const bundle = (await bundleForwarder(join(work, 'forwarder.mjs'))).outFile;
  const queueUrl = `${sqsProxy.url()}${new URL(broker.queueUrl(QUEUE)).pathname}`;
  const config = {
    clusterId: 'availability',
    queue: { url: queueUrl, region: broker.region, endpoint: sqsProxy.url() },
    primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
    leaderElection: { enabled: false },
    resyncOnStart: false,
    coalesceWindowMs: 100,
    server: { port: 0, host: '127.0.0.1' },
    send: { backoffInitialMs: 100, backoffMaxMs: 1000, connectTimeoutMs: 500, requestTimeoutMs: 1500 },
    shutdownGraceMs: 10_000,
    webhooks: {
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      certFile: join(work, 'tls.crt'),
      keyFile: join(work, 'tls.key'),
      functions: { memcached: FUNCTION },
      lambdaEndpoint: invokeServer.endpoint,
      drainSeconds: DRAIN_SECONDS,
    },
  };
  writeFileSync(join(work, 'forwarder.yaml'), stringify(config));
  forwarder = spawnLogged([...FORWARDER_NODE_FLAGS, bundle], {
    cwd: work,
    env: {
      PATH: process.env.PATH,
      OPERLESS_FORWARDER_CONFIG: join(work, 'forwarder.yaml'),
      KUBECONFIG: cp.kubeconfigPath,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: broker.region,
    },
  });
  children.add(forwarder.child);
  webhookUrl = String((await forwarder.line(/^webhook endpoint serving$/, 60_000)).url);
  probesUrl = String((await forwarder.line(/^forwarder running$/, 60_000)).probes);
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await sqsProxy?.close();
  await invokeServer?.close();
  await Promise.all([cp?.stop(), broker?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

async function probe(path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${probesUrl}${path}`);
  return { status: res.status, text: await res.text() };
}

/** An admission review to the validate route, as the API server sends it (a kept-alive agent, as its client keeps connections). */
const agent = new https.Agent({ keepAlive: true });
function review(): Promise<{ status: number; connection: string | undefined }> {
  const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'availability', operation: 'CREATE' } });
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${webhookUrl}/memcached/validate?timeout=10s`,
      { method: 'POST', ca: ca.certPem, agent, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

test('the queue unreachable: /readyz fails naming it, /readyz/webhooks stays ready and the endpoint answers', async () => {
  assert.equal((await probe('/readyz/webhooks')).status, 200);
  sqsProxy.setMode('stall');
  const memcached = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'during-stall', namespace: NS }, spec: { size: 1 } };
  const created = await cp.kubectl(['create', '-f', '-'], { input: JSON.stringify(memcached) });
  assert.equal(created.code, 0, created.stderr);
  await waitUntil(
    '/readyz names the unreachable queue',
    async () => {
      const readyz = await probe('/readyz');
      return readyz.status === 503 && readyz.text.includes(`queue unreachable: ${QUEUE}`);
    },
    { timeoutMs: 30_000 },
  );
  const webhooks = await probe('/readyz/webhooks');
  assert.equal(webhooks.status, 200, `webhook readiness is its own: ${webhooks.text}`);
  const before = invocations;
  assert.equal((await review()).status, 200);
  assert.equal(invocations, before + 1, 'the function answers while the queue is unreachable');
  sqsProxy.setMode('pass');
  await waitUntil('the queue reachable again', async () => (await probe('/readyz')).status === 200, { timeoutMs: 30_000 });
});

test('SIGTERM: /readyz/webhooks turns not ready at once while the endpoint answers for the drain period, then the process exits 0', async () => {
  assert.equal((await review()).status, 200);
  forwarder.child.kill('SIGTERM');
  await waitUntil(
    '/readyz/webhooks says the endpoint drains',
    async () => {
      const res = await fetch(`${probesUrl}/readyz/webhooks`).catch(() => undefined);
      return res?.status === 503 && (await res.text()).includes('drains');
    },
    { timeoutMs: 10_000 },
  );
  // Within the drain window (the probe just said it drains): requests are still answered, each closing its connection.
  const during = await review();
  assert.equal(during.status, 200, 'a request in the drain window is answered');
  assert.equal(during.connection, 'close', 'the answer closes the connection, so the caller reconnects to a replica that stays');
  const again = await review();
  assert.equal(again.status, 200, 'and the next one too, on a new connection');
  const drained = await forwarder.line(/^forwarder stopped$/, 30_000);
  assert.equal(drained.unsent, 0);
  assert.equal(await forwarder.exited, 0);
});
