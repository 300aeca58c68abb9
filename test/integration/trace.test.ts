/**
 * One trace across every hop, against a REAL kube-apiserver + etcd and a REAL SQS broker
 * (ElasticMQ): the forwarder (in-process, SQS sink) sends a spec change of a Gadget with the
 * `traceparent` of its `operless.forward` span; the function (the runtime's handler under the
 * local Lambda runner) continues it in `operless.reconcile`, requeues once, and the requeue's
 * `operless.followup` context comes back through the queue to the next reconcile. The spans are
 * collected by the OpenTelemetry SDK's in-memory exporter registered in this process (forwarder
 * and function both run here); the test asserts that forward → reconcile → follow-up →
 * reconcile form one trace, each the parent of the next, with the reconcile's GET and status
 * write as `kube` spans under it. The same spans fed to `npm start --traces`'s printer
 * (src/devloop/trace-tree.ts) print that chain as a tree.
 *
 * Then the same path with the exporter the product registers itself from the standard OTEL_*
 * variables (src/observability/otel-start.ts: OTLP/HTTP, protobuf), against a REAL OTLP receiver —
 * the OpenTelemetry Collector built from its Go modules (src/testing/otel-collector.ts, cached
 * like the other binaries): a spec change's forward → reconcile → follow-up → reconcile arrives
 * there as one trace. The batch processor's schedule is set to 10 minutes, so what arrives was
 * sent by the flush each invocation does before it answers (forwarder and function share this
 * process's one SDK, so the function's flush carries the forwarder's finished spans too).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { traceTreeExporter } from '../../src/devloop/trace-tree.ts';
import { resetTracingForTests, startTracingFromEnv } from '../../src/observability/otel-start.ts';
import { startOtelCollector, type OtelCollector, type ReceivedSpan } from '../../src/testing/otel-collector.ts';
import { provision, startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { done, requeueAfter } from '../../src/core/controller/result.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { createSqsQueue, createSqsSender } from '../../src/queue/sqs.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';
import { API_VERSION, GADGET_CRD, gadgetConfig, Objects } from './forwarder-env.ts';

const GADGET: KindRef = { apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true };
const NS = 'traced';

interface Gadget extends KubeObject {
  spec: { size?: number };
  status?: { reconciled?: number };
}

const exporter = new InMemorySpanExporter();
const printed: string[] = [];
let cp: ControlPlane;
let broker: Broker;
let forwarder: Forwarder | undefined;
let runner: LambdaRunner | undefined;

before(
  async () => {
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({
        spanProcessors: [new SimpleSpanProcessor(exporter), new SimpleSpanProcessor(traceTreeExporter((line) => printed.push(line), 200))],
      }),
    );
    // The collector is built once (cached in ~/.cache/operless like the other binaries): here, beside
    // the control plane, under a hook timeout that allows a first build on a loaded machine.
    [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD] }), startBroker({ queues: [] }), provision({ targets: ['otelcol'] })]);
    await new Objects(cp.kubeConfig).createNamespace(NS);
  },
  { timeout: 30 * 60_000 },
);
after(async () => {
  await runner?.stop();
  await forwarder?.stop({ graceMs: 0 });
  await Promise.allSettled([cp?.stop(), broker?.stop()]);
  trace.disable();
});

test('a spec change is one trace: forward → reconcile → follow-up → reconcile of the requeue', async () => {
  const objects = new Objects(cp.kubeConfig);
  const dlqUrl = await broker.createQueue({ name: 'traced-dlq' });
  const queueUrl = await broker.createQueue({ name: 'traced', dlq: { name: 'traced-dlq', maxReceiveCount: 5 } });
  const sqs = broker.sqs();
  const base = gadgetConfig(queueUrl, broker.region, { coalesceWindowMs: 0 });
  forwarder = startForwarder(
    { ...base, primaries: base.primaries!.map((p) => ({ ...p, namespaces: [NS] })), owned: [] },
    {
      kubeConfig: cp.kubeConfig,
      queue: createSqsQueue({ queueUrl, region: broker.region, client: sqs }),
      logger: silentLogger,
    },
  );
  await forwarder.ready;
  const handler = toSqsHandler(
    defineController<Gadget>({
      ...GADGET,
      reconcile: async (gadget, ctx) => {
        const count = (gadget.status?.reconciled ?? 0) + 1;
        await ctx.updateStatus({ reconciled: count });
        return ctx.message.reason === 'Requeue' ? done() : requeueAfter(1);
      },
    }),
    {
      queueUrl,
      deadLetterQueueUrl: dlqUrl,
      sender: createSqsSender(sqs),
      log: silentLogger,
      metrics: noMetrics,
      clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: 'test' } }),
    },
  );
  runner = await startLambdaRunner({
    queueUrl,
    sqs,
    handler,
    batchSize: 10,
    batchWindowSeconds: 0,
    maxConcurrency: 1,
    timeoutSeconds: 30,
    logger: silentLogger,
  });

  await objects.createGadget(NS, 'g1', { size: 1 });
  const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
  let chain: ReadableSpan[] = [];
  await waitUntil('forward → reconcile → follow-up → reconcile in one trace', () => {
    for (const forward of named('operless.forward')) {
      const childOf = (parent: ReadableSpan, name: string) => named(name).find((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
      const reconcile = childOf(forward, 'operless.reconcile');
      const followUp = reconcile && childOf(reconcile, 'operless.followup');
      const requeued = followUp && childOf(followUp, 'operless.reconcile');
      if (requeued) {
        chain = [forward, reconcile, followUp, requeued];
        return true;
      }
    }
    return false;
  });
  assert.equal(new Set(chain.map((s) => s.spanContext().traceId)).size, 1, 'one trace id over every hop');
  assert.equal(chain[0]!.attributes['operless.key'], `Gadget/${NS}/g1`);
  assert.equal(chain[3]!.attributes['operless.reason'], 'Requeue');
  // Inside the reconcile: the GET of the live object and the status write, as kube spans.
  const kube = named('kube GET')
    .concat(named('kube PATCH'))
    .filter((s) => s.parentSpanContext?.spanId === chain[1]!.spanContext().spanId);
  assert.ok(
    kube.some((s) => s.name === 'kube GET'),
    'the GET of the live object',
  );
  assert.ok(
    kube.some((s) => s.name === 'kube PATCH' && String(s.attributes['url.path']).endsWith('/status')),
    'the status write',
  );
  // `npm start -- --traces` prints this chain as a tree.
  const traceId = chain[0]!.spanContext().traceId;
  await waitUntil(
    'the printed tree of the trace',
    () => printed.some((l) => l.startsWith(`trace ${traceId}`)) && printed.some((l) => /^ {5}[ │] {2}└─ operless\.reconcile .*Requeue/.test(l)),
  );
  const tree = printed.slice(printed.findLastIndex((l) => l.startsWith(`trace ${traceId}`)));
  assert.match(tree[1]!, /^ {2}operless\.forward Gadget\/traced\/g1 Added/);
  assert.ok(
    tree.some((l) => /^ {2}└─ operless\.reconcile Gadget\/traced\/g1 Added/.test(l)),
    tree.join('\n'),
  );
  assert.ok(
    tree.some((l) => /^ {5}[├└]─ operless\.followup → send/.test(l)),
    tree.join('\n'),
  );
});

/** The spans of `collector` chained forward → reconcile → follow-up → reconcile (reason `Requeue`), for `reason` of `key`. */
function receivedChain(collector: OtelCollector, key: string, reason: string): ReceivedSpan[] | undefined {
  const spans = collector.spans();
  const childOf = (parent: ReceivedSpan, name: string) =>
    spans.find((s) => s.name === name && s.parentSpanId === parent.spanId && s.traceId === parent.traceId);
  for (const forward of spans.filter(
    (s) => s.name === 'operless.forward' && s.attributes['operless.key'] === key && s.attributes['operless.reason'] === reason,
  )) {
    const reconcile = childOf(forward, 'operless.reconcile');
    const followUp = reconcile && childOf(reconcile, 'operless.followup');
    const requeued = followUp && childOf(followUp, 'operless.reconcile');
    if (requeued) return [forward, reconcile, followUp, requeued];
  }
  return undefined;
}

test('a spec change arrives as one trace at a real OTLP receiver, exported by the SDK the OTEL_* variables turn on', async () => {
  await runner?.stop();
  await forwarder?.stop({ graceMs: 0 });
  trace.disable();
  resetTracingForTests();
  const collector = await startOtelCollector();
  const variables = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.otlpHttpEndpoint, OTEL_BSP_SCHEDULE_DELAY: '600000', OTEL_SERVICE_NAME: 'operless-trace-it' };
  Object.assign(process.env, variables);
  try {
    // What the forwarder's main does at start; the function's handler gets the same SDK at its first invocation.
    const tracing = await startTracingFromEnv(process.env, 'operless-forwarder');
    assert.equal(tracing.mode, 'sdk');
    const queueUrl = await broker.createQueue({ name: 'traced-otlp' });
    const sqs = broker.sqs();
    const base = gadgetConfig(queueUrl, broker.region, { coalesceWindowMs: 0 });
    forwarder = startForwarder(
      { ...base, primaries: base.primaries!.map((p) => ({ ...p, namespaces: [NS] })), owned: [], resyncOnStart: false },
      {
        kubeConfig: cp.kubeConfig,
        queue: createSqsQueue({ queueUrl, region: broker.region, client: sqs }),
        logger: silentLogger,
      },
    );
    await forwarder.ready;
    const handler = toSqsHandler(
      defineController<Gadget>({
        ...GADGET,
        reconcile: async (gadget, ctx) => {
          await ctx.updateStatus({ reconciled: (gadget.status?.reconciled ?? 0) + 1 });
          return ctx.message.reason === 'Requeue' ? done() : requeueAfter(1);
        },
      }),
      {
        queueUrl,
        sender: createSqsSender(sqs),
        log: silentLogger,
        metrics: noMetrics,
        clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: 'test' } }),
      },
    );
    runner = await startLambdaRunner({
      queueUrl,
      sqs,
      handler,
      batchSize: 10,
      batchWindowSeconds: 0,
      maxConcurrency: 1,
      timeoutSeconds: 30,
      logger: silentLogger,
    });

    // Its own object: created, reconciled and requeued once (two status writes), then its spec changes.
    const objects = new Objects(cp.kubeConfig);
    await objects.createGadget(NS, 'g2', { size: 1 });
    await waitUntil(
      'g2 reconciled on creation and once more by its requeue',
      async () => ((await objects.api.requestJson<Gadget>('GET', objects.gadgetPath(NS, 'g2'))).status?.reconciled ?? 0) >= 2,
    );
    await objects.api.requestJson('PATCH', objects.gadgetPath(NS, 'g2'), { body: { spec: { size: 5 } }, contentType: 'application/merge-patch+json' });
    let chain: ReceivedSpan[] | undefined;
    await waitUntil(
      'forward → reconcile → follow-up → reconcile of the spec change at the collector',
      () => (chain = receivedChain(collector, `Gadget/${NS}/g2`, 'Modified')) !== undefined,
    );
    assert.equal(new Set(chain!.map((s) => s.traceId)).size, 1);
    assert.deepEqual(
      chain!.map((s) => s.serviceName),
      Array(4).fill('operless-trace-it'),
    );
    assert.equal(chain![3]!.attributes['operless.reason'], 'Requeue');
    await tracing.shutdown(2000);
  } finally {
    for (const name of Object.keys(variables)) delete process.env[name];
    await collector.stop();
  }
});
