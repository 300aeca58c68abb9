/**
 * One trace across every hop, against a REAL kube-apiserver + etcd and a REAL SQS broker
 * (ElasticMQ): the forwarder (in-process, SQS sink) sends a spec change of a Gadget with the
 * `traceparent` of its `operless.forward` span; the function (the runtime's handler under the
 * local Lambda runner) continues it in `operless.reconcile`, requeues once, and the requeue's
 * `operless.followup` context comes back through the queue to the next reconcile. The spans are
 * collected by the OpenTelemetry SDK's in-memory exporter registered in this process (forwarder
 * and function both run here); the test asserts that forward → reconcile → follow-up →
 * reconcile form one trace, each the parent of the next, with the reconcile's GET and status
 * write as `kube` spans under it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { defineController } from '../../src/core/controller.ts';
import { toSqsHandler } from '../../src/core/handler.ts';
import { done, requeueAfter } from '../../src/core/result.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { createSqsQueue, createSqsSender } from '../../src/queue/sqs.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/metrics.ts';
import { API_VERSION, GADGET_CRD, gadgetConfig, Objects } from './forwarder-env.ts';

const GADGET: KindRef = { apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true };
const NS = 'traced';

interface Gadget extends KubeObject {
  spec: { size?: number };
  status?: { reconciled?: number };
}

const exporter = new InMemorySpanExporter();
let cp: ControlPlane;
let broker: Broker;
let forwarder: Forwarder | undefined;
let runner: LambdaRunner | undefined;

before(async () => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD] }), startBroker({ queues: [] })]);
});
after(async () => {
  await runner?.stop();
  await forwarder?.stop({ graceMs: 0 });
  await Promise.allSettled([cp?.stop(), broker?.stop()]);
  trace.disable();
});

test('a spec change is one trace: forward → reconcile → follow-up → reconcile of the requeue', async () => {
  const objects = new Objects(cp.kubeConfig);
  await objects.createNamespace(NS);
  const dlqUrl = await broker.createQueue({ name: 'traced-dlq' });
  const queueUrl = await broker.createQueue({ name: 'traced', dlq: { name: 'traced-dlq', maxReceiveCount: 5 } });
  const sqs = broker.sqs();
  const base = gadgetConfig(queueUrl, broker.region, { coalesceWindowMs: 0 });
  forwarder = startForwarder({ ...base, primaries: base.primaries!.map((p) => ({ ...p, namespaces: [NS] })), owned: [] }, {
    kubeConfig: cp.kubeConfig, queue: createSqsQueue({ queueUrl, region: broker.region, client: sqs }), logger: silentLogger,
  });
  await forwarder.ready;
  const handler = toSqsHandler(defineController<Gadget>({
    ...GADGET,
    reconcile: async (gadget, ctx) => {
      const count = (gadget.status?.reconciled ?? 0) + 1;
      await ctx.updateStatus({ reconciled: count });
      return ctx.message.reason === 'Requeue' ? done() : requeueAfter(1);
    },
  }), {
    queueUrl, deadLetterQueueUrl: dlqUrl, sender: createSqsSender(sqs), log: silentLogger, metrics: noMetrics,
    clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: 'test' } }),
  });
  runner = await startLambdaRunner({ queueUrl, sqs, handler, batchSize: 10, batchWindowSeconds: 0, maxConcurrency: 1, timeoutSeconds: 30, logger: silentLogger });

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
  const kube = named('kube GET').concat(named('kube PATCH')).filter((s) => s.parentSpanContext?.spanId === chain[1]!.spanContext().spanId);
  assert.ok(kube.some((s) => s.name === 'kube GET'), 'the GET of the live object');
  assert.ok(kube.some((s) => s.name === 'kube PATCH' && String(s.attributes['url.path']).endsWith('/status')), 'the status write');
});
