/**
 * Blackholes, not only resets: a connection that accepts and never answers, in front of the
 * REAL broker (ElasticMQ) and the REAL kube-apiserver, through the loopback stall proxy
 * (test/support/stall-proxy.ts).
 *
 * - The forwarder's lane: while the queue's connections stall, SendMessageBatch ends within
 *   `send.requestTimeoutMs`, the batch goes back to the buffer, `/readyz` turns 503 naming the
 *   queue; once the path passes traffic again the lane recovers and every change made before,
 *   during and after the stall is in the queue. Also when the response headers come and the
 *   body stalls (the batch then reached the broker: a duplicate is allowed, a loss is not).
 * - The function's follow-up sender, with the retry settings it has on Lambda (no
 *   `AWS_MAX_ATTEMPTS`: the SDK's standard mode, 3 attempts), fails with a QueueSendError
 *   after its 3 attempts (its records are retried), and sends again once the path heals.
 * - The function itself (`toSqsHandler`, run by the local Lambda runner) with those retry
 *   settings and its request timeout in production's proportion to the function timeout
 *   (10 s of a 60 s function; here 1.5 s of 9 s): every invocation on a blackholed queue
 *   answers before the function timeout, though each stalled call now takes 3 attempts; its
 *   records come back and, once the queue answers, every object is reconciled, the queue
 *   drains and the DLQ holds nothing. Before the fix the retries of the failed follow-up send
 *   and of the visibility change after it (`shortenRetryWait`) stacked past the timeout.
 * - An API-server request and a watch's opening through a stalling proxy fail with a
 *   `Timeout` KubeApiError naming the bound, on a new connection and on a pooled one.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import type { ForwarderConfigInput } from '../../src/forwarder/config/config.ts';
import { isKubeApiError } from '../../src/kube/errors.ts';
import { kubeConfigAuth } from '../../src/kube/kubeconfig.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { lazySqsSender, QueueSendError } from '../../src/queue/sender.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';
import { done, requeueAfter } from '../../src/core/controller/result.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { startLambdaRunner, type InvocationReport } from '../../src/local/lambda-runner.ts';
import { startStallProxy, type StallMode, type StallProxy } from '../support/stall-proxy.ts';
import { GADGET_CRD, Objects, collect, gadgetConfig } from './forwarder-env.ts';

const SEND_TIMEOUTS = { connectTimeoutMs: 500, requestTimeoutMs: 1500 };
let cp: ControlPlane;
let broker: Broker;
let objects: Objects;
let sqsProxy: StallProxy;
let kubeProxy: StallProxy;
let counter = 0;
const savedEnv = { ...process.env };

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD] }), startBroker({ queues: [] })]);
  objects = new Objects(cp.kubeConfig);
  const brokerUrl = new URL(broker.endpoint);
  const apiUrl = new URL(cp.server);
  [sqsProxy, kubeProxy] = await Promise.all([
    startStallProxy({ host: brokerUrl.hostname, port: Number(brokerUrl.port) }),
    startStallProxy({ host: apiUrl.hostname, port: Number(apiUrl.port) }),
  ]);
  // The forwarder's own SQS clients (not a test client) use the SDK's credential chain.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' });
});
after(async () => {
  process.env = savedEnv;
  await Promise.all([sqsProxy?.close(), kubeProxy?.close()]);
  await Promise.all([cp?.stop(), broker?.stop()]);
});

/** A queue reached through the stall proxy, and a forwarder on it built from config alone (its own SQS client, its own timeouts). */
async function forwarderBehindProxy(): Promise<{ ns: string; brokerQueueUrl: string; queueUrl: string; forwarder: Forwarder }> {
  counter += 1;
  const ns = `blackhole-${counter}`;
  await objects.createNamespace(ns);
  const brokerQueueUrl = await broker.createQueue({ name: ns });
  const queueUrl = `${sqsProxy.url()}${new URL(brokerQueueUrl).pathname}`;
  const base = gadgetConfig(queueUrl, broker.region);
  const config: ForwarderConfigInput = {
    ...base,
    queue: { url: queueUrl, region: broker.region, endpoint: sqsProxy.url() },
    primaries: base.primaries!.map((p) => ({ ...p, namespaces: [ns] })),
    owned: base.owned!.map((o) => ({ ...o, namespaces: [ns] })),
    send: { backoffInitialMs: 100, backoffMaxMs: 1000, ...SEND_TIMEOUTS },
  };
  const forwarder = startForwarder(config, { kubeConfig: cp.kubeConfig, logger: silentLogger });
  await forwarder.ready;
  return { ns, brokerQueueUrl, queueUrl, forwarder };
}

async function readyz(forwarder: Forwarder): Promise<{ status: number; text: string }> {
  const res = await fetch(`${forwarder.url}/readyz`);
  return { status: res.status, text: await res.text() };
}

/** Before / during / after a stall of the queue's connections in `mode`: the lane goes not-ready naming the queue, then recovers with nothing lost. */
async function stallCase(mode: StallMode): Promise<void> {
  const { ns, brokerQueueUrl, queueUrl, forwarder } = await forwarderBehindProxy();
  try {
    const names = (phase: string) => [1, 2, 3].map((i) => `${phase}-${i}`);
    for (const name of names('before')) await objects.createGadget(ns, name);
    await waitUntil('the changes made before the stall were sent', () => forwarder.pending() === 0, { timeoutMs: 30_000 });

    sqsProxy.setMode(mode);
    for (const name of names('during')) await objects.createGadget(ns, name);
    await waitUntil(
      `/readyz names the unreachable queue while its connections stall (${JSON.stringify(mode)})`,
      () => forwarder.readiness().reasons.some((r) => r.startsWith(`queue unreachable: ${queueUrl.split('/').at(-1)} `)),
      { timeoutMs: 30_000, context: () => `readiness: ${JSON.stringify(forwarder.readiness())}; pending ${forwarder.pending()}` },
    );
    const probe = await readyz(forwarder);
    assert.equal(probe.status, 503);
    assert.match(probe.text, new RegExp(`queue unreachable: ${queueUrl.split('/').at(-1)} `));
    assert.ok(forwarder.pending() > 0, 'the changes made during the stall wait in the buffer');
    assert.ok((await metric(forwarder, 'operless_forwarder_send_errors_total')) > 0, 'the stalled sends ended as failed requests');

    sqsProxy.setMode('pass');
    for (const name of names('after')) await objects.createGadget(ns, name);
    await waitUntil('the lane recovered: ready, nothing pending', () => forwarder.readiness().ok && forwarder.pending() === 0, {
      timeoutMs: 30_000,
      context: () => `readiness: ${JSON.stringify(forwarder.readiness())}; pending ${forwarder.pending()}`,
    });
    const wanted = [...names('before'), ...names('during'), ...names('after')];
    const got = await collect(broker.sqs(), brokerQueueUrl, { until: (all) => wanted.every((n) => all.some((m) => m.name === n)), timeoutMs: 30_000 });
    const added = new Set(got.filter((m) => m.reason === 'Added').map((m) => m.name));
    assert.deepEqual(
      wanted.filter((n) => !added.has(n)),
      [],
      'every change made before, during and after the stall reached the queue',
    );
    assert.equal((await readyz(forwarder)).status, 200);
  } finally {
    sqsProxy.setMode('pass');
    await forwarder.stop({ graceMs: 2000 });
  }
}

async function metric(forwarder: Forwarder, name: string): Promise<number> {
  const m = (await forwarder.metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? []).reduce((n, v) => n + v.value, 0);
}

/** A failure, not a 15-minute hang, where the SDK would wait forever (main before the timeouts). */
const GUARD = { timeout: 120_000 };

test(
  'forwarder: a queue whose connections accept and never answer marks the lane not-ready within send.requestTimeoutMs; it recovers with nothing lost',
  GUARD,
  async () => {
    await stallCase('stall');
  },
);

test('forwarder: a queue that answers the headers and stalls the body: the same, no loss (a duplicate is allowed)', GUARD, async () => {
  await stallCase('stall-after-headers');
});

/**
 * The SQS settings the function has on Lambda: no `AWS_MAX_ATTEMPTS` nor `AWS_RETRY_MODE`, so
 * the SDK's standard retry mode with 3 attempts. Set for one test, restored after it.
 */
function withProductionRetries(): () => void {
  const saved = { AWS_MAX_ATTEMPTS: process.env.AWS_MAX_ATTEMPTS, AWS_RETRY_MODE: process.env.AWS_RETRY_MODE };
  delete process.env.AWS_MAX_ATTEMPTS;
  delete process.env.AWS_RETRY_MODE;
  process.env.AWS_ENDPOINT_URL_SQS = sqsProxy.url();
  process.env.AWS_REGION = broker.region;
  return () => {
    delete process.env.AWS_ENDPOINT_URL_SQS;
    for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
  };
}

/** The attempts the SDK made for a failed send (its `$metadata.attempts`), or undefined. */
function attemptsOf(err: unknown): number | undefined {
  const cause = (err as { cause?: { $metadata?: { attempts?: number } } }).cause;
  return cause?.$metadata?.attempts;
}

test('function: with production retry settings the follow-up sender fails with a QueueSendError after 3 attempts on a stalled queue connection and sends again once it heals', async () => {
  const brokerQueueUrl = await broker.createQueue({ name: `followups-${++counter}` });
  const queueUrl = `${sqsProxy.url()}${new URL(brokerQueueUrl).pathname}`;
  const restore = withProductionRetries();
  try {
    const sender = lazySqsSender(undefined, SEND_TIMEOUTS);
    sqsProxy.setMode('stall');
    await assert.rejects(sender.send(queueUrl, { body: '{"stalled":true}' }), (err: unknown) => {
      assert.ok(err instanceof QueueSendError && err.queueUrl === queueUrl, String(err));
      assert.equal(attemptsOf(err), 3, 'the SDK retried as on Lambda: 3 attempts, each ended by the request timeout');
      return true;
    });
    sqsProxy.setMode('pass');
    await sender.send(queueUrl, { body: '{"healed":true}' });
    const out = await broker.sqs().send(new ReceiveMessageCommand({ QueueUrl: brokerQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }));
    assert.deepEqual(
      (out.Messages ?? []).map((m) => m.Body),
      ['{"healed":true}'],
      'the send that timed out never reached the broker; the next one did',
    );
  } finally {
    sqsProxy.setMode('pass');
    restore();
  }
});

const CONFIGMAPS: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
/** Production's request timeout is a sixth of the function timeout (10 s of 60 s): the same here. */
const FUNCTION_TIMEOUT_SECONDS = (SEND_TIMEOUTS.requestTimeoutMs * 6) / 1000;

test('function: with production retry settings on a blackholed queue every invocation answers before the function timeout; its records come back and every object is reconciled once the queue answers, nothing in the DLQ', {
  timeout: 240_000,
}, async (t) => {
  const name = `fn-blackhole-${++counter}`;
  const ns = `fn-blackhole-${counter}`;
  const brokerQueueUrl = await broker.createQueue({
    name,
    visibilityTimeoutSeconds: FUNCTION_TIMEOUT_SECONDS + 1,
    dlq: { name: `${name}-dlq`, maxReceiveCount: 10 },
  });
  const brokerDlqUrl = broker.queueUrl(`${name}-dlq`);
  const proxied = (url: string) => `${sqsProxy.url()}${new URL(url).pathname}`;
  await objects.createNamespace(ns);
  const admin = await createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath } })('admin');
  const created = await Promise.all(
    [0, 1, 2, 3].map((i) => admin.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns } })),
  );
  // Each object needs one follow-up accepted by the queue: a change asks for a requeue, the requeue is done.
  const reconciled: { name: string; reason: string }[] = [];
  const controller = defineController<KubeObject>({
    ...CONFIGMAPS,
    async reconcile(cm, ctx) {
      reconciled.push({ name: cm.metadata.name, reason: ctx.message.reason });
      return ctx.message.reason === 'Requeue' ? done() : requeueAfter(1);
    },
  });
  const restore = withProductionRetries();
  const reports: InvocationReport[] = [];
  const runner = await startLambdaRunner({
    // The event source mapping's receives and deletes are the Lambda service's, not the function's network path: straight to the broker.
    queueUrl: brokerQueueUrl,
    sqs: broker.sqs(),
    handler: toSqsHandler(controller, {
      queueUrl: proxied(brokerQueueUrl),
      deadLetterQueueUrl: proxied(brokerDlqUrl),
      clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: 'it' } }),
      // The function's own sender, as on Lambda, with the request timeout of this scale.
      sender: lazySqsSender(undefined, SEND_TIMEOUTS),
      log: silentLogger,
      metrics: noMetrics,
    }),
    batchSize: 10,
    batchWindowSeconds: 1,
    maxConcurrency: 1,
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
    logger: silentLogger,
    onInvoke: (report) => reports.push(report),
  });
  try {
    sqsProxy.setMode('stall');
    const entries = created.map((cm, i) => ({
      Id: String(i),
      MessageBody: encodeMessage(
        newMessage({ cluster: 'it', apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: cm.metadata.name, uid: cm.metadata.uid }, 'Modified'),
      ),
    }));
    await broker.sqs().send(new SendMessageBatchCommand({ QueueUrl: brokerQueueUrl, Entries: entries }));
    // Every record was in an invocation that ended while the queue was a blackhole.
    await waitUntil(
      'every record was handled by an invocation that ended during the blackhole',
      () => {
        const seen = new Set(reports.flatMap((r) => [...r.deleted, ...r.retried]));
        return reports.length > 0 && reports.reduce((n, r) => n + r.records, 0) >= created.length && seen.size >= created.length;
      },
      { timeoutMs: 120_000, context: () => JSON.stringify(reports.map(({ stats: _s, ...r }) => r)) },
    );
    const during = [...reports];
    sqsProxy.setMode('pass');
    assert.deepEqual(
      during.filter((r) => r.outcome === 'timeout').map((r) => r.error),
      [],
      'no invocation ran into the function timeout while every SQS call stalled',
    );
    assert.equal(
      during.reduce((n, r) => n + r.deleted.length, 0),
      0,
      'nothing was acknowledged while no follow-up could be sent: every record comes back',
    );

    await waitUntil(
      'every object had its requeue reconciled and the queue drained',
      async () => {
        const requeued = new Set(reconciled.filter((r) => r.reason === 'Requeue').map((r) => r.name));
        const attrs = (await broker.sqs().send(new GetQueueAttributesCommand({ QueueUrl: brokerQueueUrl, AttributeNames: ['All'] }))).Attributes ?? {};
        const left =
          Number(attrs.ApproximateNumberOfMessages) + Number(attrs.ApproximateNumberOfMessagesNotVisible) + Number(attrs.ApproximateNumberOfMessagesDelayed);
        return requeued.size === created.length && left === 0;
      },
      { timeoutMs: 120_000, context: () => `reconciled: ${JSON.stringify(reconciled)}` },
    );
    assert.deepEqual(
      reports.filter((r) => r.outcome === 'timeout').map((r) => r.error),
      [],
      'no invocation ran into the function timeout, after the blackhole either',
    );
    const letters = await broker.sqs().send(new ReceiveMessageCommand({ QueueUrl: brokerDlqUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    assert.deepEqual(letters.Messages ?? [], [], 'nothing in the DLQ');
    t.diagnostic(
      `function on a blackholed queue: ${during.length} invocations during the blackhole (longest ${Math.max(...during.map((r) => r.durationMs))} ms of a ${FUNCTION_TIMEOUT_SECONDS * 1000} ms timeout), ${reports.length} in all, ${reconciled.length} reconciles`,
    );
  } finally {
    sqsProxy.setMode('pass');
    await runner.stop();
    restore();
  }
});

test('API server: a request and a watch opening through a stalling proxy fail with a Timeout naming the bound; after it heals they work', async () => {
  const boundMs = 1500;
  const transport = createTransport({ ...kubeConfigAuth(cp.kubeConfig), server: kubeProxy.url('https') });
  const isTimeout = (err: unknown): boolean => {
    assert.ok(isKubeApiError(err), String(err));
    assert.equal(err.reason, 'Timeout');
    assert.match(err.message, new RegExp(`no response from the API server at ${kubeProxy.url('https')} within ${boundMs} ms`));
    return true;
  };
  const list = () => transport.request({ method: 'GET', path: '/api/v1/namespaces', query: { limit: 1 }, timeoutMs: boundMs });
  const abort = new AbortController();
  try {
    kubeProxy.setMode('stall'); // new connections: accepted, the TLS handshake is never answered
    await assert.rejects(list(), isTimeout);
    await assert.rejects(
      transport.watch({ path: '/api/v1/namespaces', signal: abort.signal, timeoutMs: boundMs }, () => {}),
      isTimeout,
    );

    kubeProxy.setMode('pass');
    assert.equal((await list()).status, 200, 'a new connection works once the path heals');
    kubeProxy.setMode('stall'); // the pooled, established TLS connection goes dead
    await assert.rejects(list(), isTimeout);
    kubeProxy.setMode('pass');
    assert.equal((await list()).status, 200);
    const events: string[] = [];
    const handle = await transport.watch({ path: '/api/v1/namespaces', signal: abort.signal, timeoutMs: boundMs }, (e) => events.push(e.type));
    await waitUntil('the watch delivers the existing namespaces', () => events.includes('ADDED'), { timeoutMs: 10_000 });
    abort.abort();
    await handle.ended;
  } finally {
    abort.abort();
    kubeProxy.setMode('pass');
    await transport.close();
  }
});
