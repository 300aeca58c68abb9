/**
 * The EventBridge sink end to end, against a REAL kube-apiserver + etcd and a REAL EventBridge
 * emulator (moto's server, src/testing/eventbridge.ts): the forwarder (in-process, configured
 * with `sink: eventbridge` and the emulator's endpoint, its own EventBridge client from the
 * config) publishes each change of a Gadget to the bus; a rule for the kind sends it to a moto
 * SQS queue; the function (the runtime's own handler under the local Lambda runner, reading
 * that queue) reconciles and writes the status. Which broker served which hop: the bus, the
 * rules and both queues are moto's (a rule's SQS target can only be one of moto's queues);
 * the API server is the real one.
 *
 * The rule of the work queue is configured as serverless.yml does (InputPath `$.detail`);
 * moto ignores InputPath, so the function receives the whole event envelope there — the shape
 * the functions accept besides the bare message. A second rule passes the detail only (an
 * InputTransformer, which moto implements), and its queue gets the bare message, identical to
 * what the SQS sink sends. A hostile envelope on the work queue goes to the DLQ with the same
 * reason as any invalid message.
 *
 * Per-key ordering (a FIFO work queue): the rule delivers to the standard delay queue and the
 * mover moves each event into a moto FIFO queue, each under its own object key's group.
 *
 * Traces across the bus: with an SDK registered (the in-memory exporter here), each event
 * carries the forwarder's span as X-Ray's TraceHeader and as the detail's `traceparent`. moto
 * does not pass the TraceHeader on (its events code never reads it; AWS hands it to an SQS
 * target as AWSTraceHeader, which the functions read — unit-tested), so what is proven here is
 * the detail's copy: the function's reconcile continues the forwarder's trace from the whole
 * envelope (the work rule), and the detail-only rule's queue holds the same `traceparent`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { formatTraceparent } from '../../src/observability/trace-context.ts';
import { CreateArchiveCommand, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { replay } from '../../src/cli/commands/replay.ts';
import { startControlPlane, waitUntil, type ControlPlane } from '../../src/testing/index.ts';
import { EMULATOR_REGION, startEventBridge, type EventBridgeEmulator } from '../../src/testing/eventbridge.ts';
import { decodeMessage, encodeMessage, newMessage, objectKey } from '../../src/contract/message.ts';
import { toDelayMoverHandler } from '../../src/core/per-key/mover.ts';
import { messageGroupId } from '../../src/queue/fifo.ts';
import { DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { done } from '../../src/core/controller/result.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';
import { API_VERSION, GADGET_CRD, gadgetConfig, Objects } from './forwarder-env.ts';

const GADGET: KindRef = { apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true };
const BUS = 'operless-it';
const SOURCE = 'operless.it';
const NS = 'eb';

interface Gadget extends KubeObject {
  spec: { size?: number };
  status?: { reconciledGeneration?: number };
}

let cp: ControlPlane;
let eb: EventBridgeEmulator;
let sqs: SQSClient;
let workUrl: string;
let dlqUrl: string;
let auditUrl: string;
let forwarder: Forwarder | undefined;
let runner: LambdaRunner | undefined;
let objects: Objects;
let busArn: string;
let archiveArn: string;
const startedAt = new Date(Date.now() - 60_000).toISOString();
const spans = new InMemorySpanExporter();

before(async () => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
  // The forwarder's own EventBridge client takes its credentials from the SDK's chain.
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  [cp, eb] = await Promise.all([startControlPlane({ crds: [GADGET_CRD] }), startEventBridge()]);
  sqs = eb.sqs();
  objects = new Objects(cp.kubeConfig);
  await objects.createNamespace(NS);
  busArn = await eb.createBus(BUS);
  workUrl = await eb.routeToQueue({ bus: BUS, rule: 'gadget-work', source: SOURCE, kind: 'Gadget', queueName: 'work', input: { InputPath: '$.detail' } });
  auditUrl = await eb.routeToQueue({
    bus: BUS,
    rule: 'gadget-audit',
    source: SOURCE,
    kind: 'Gadget',
    queueName: 'audit',
    input: { InputTransformer: { InputPathsMap: { detail: '$.detail' }, InputTemplate: '<detail>' } },
  });
  dlqUrl = await eb.routeToQueue({ bus: BUS, rule: 'nothing', source: 'never', queueName: 'work-dlq' });
  archiveArn =
    (await eb.events().send(new CreateArchiveCommand({ ArchiveName: 'changes', EventSourceArn: busArn, EventPattern: JSON.stringify({ source: [SOURCE] }) })))
      .ArchiveArn ?? '';
});
after(async () => {
  await runner?.stop();
  await forwarder?.stop({ graceMs: 0 });
  await Promise.allSettled([cp?.stop(), eb?.stop()]);
  trace.disable();
});

async function receive(queueUrl: string): Promise<{ body: string; attributes: Record<string, string> }[]> {
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }));
  return (out.Messages ?? []).map((m) => ({
    body: m.Body ?? '',
    attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? ''])),
  }));
}

test('a change goes forwarder → bus → rule → queue → function, and the status is written', async () => {
  const base = gadgetConfig('', EMULATOR_REGION, { coalesceWindowMs: 0 });
  forwarder = startForwarder(
    {
      ...base,
      queue: { region: EMULATOR_REGION },
      sink: 'eventbridge',
      eventBus: { name: BUS, source: SOURCE, endpoint: eb.endpoint },
      primaries: base.primaries!.map((p) => ({ ...p, namespaces: [NS] })),
      owned: [],
    },
    { kubeConfig: cp.kubeConfig, logger: silentLogger },
  );
  await forwarder.ready;

  const handler = toSqsHandler(
    defineController<Gadget>({
      ...GADGET,
      reconcile: async (gadget, ctx) => {
        await ctx.updateStatus({ reconciledGeneration: gadget.metadata.generation });
        return done();
      },
    }),
    {
      queueUrl: workUrl,
      deadLetterQueueUrl: dlqUrl,
      clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: 'test' } }),
      sender: createSqsSender(sqs),
      log: silentLogger,
      metrics: noMetrics,
    },
  );
  runner = await startLambdaRunner({
    queueUrl: workUrl,
    sqs,
    handler,
    batchSize: 10,
    batchWindowSeconds: 0,
    maxConcurrency: 1,
    timeoutSeconds: 30,
    logger: silentLogger,
  });

  await objects.createGadget(NS, 'g1', { size: 1 });
  await objects.api.requestJson('PATCH', objects.gadgetPath(NS, 'g1'), { body: { spec: { size: 2 } }, contentType: 'application/merge-patch+json' });
  await waitUntil('the function to write the status of generation 2 from events routed by the bus', async () => {
    const g = await objects.api.requestJson<Gadget>('GET', objects.gadgetPath(NS, 'g1'));
    return g.status?.reconciledGeneration === 2;
  });

  // The detail-only rule's queue holds the bare messages, as the SQS sink would send them.
  const audit = await receive(auditUrl);
  assert.ok(audit.length > 0, 'the detail-only rule delivered nothing');
  for (const { body } of audit) {
    const decoded = decodeMessage(body);
    assert.ok(decoded.ok, `not a bare reconcile message: ${body}`);
    assert.equal(decoded.message.kind, 'Gadget');
    assert.ok(!('detail-type' in JSON.parse(body)), 'the detail-only rule delivered an envelope');
  }
  const sent = (await forwarder.metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'operless_forwarder_messages_sent_total');
  assert.ok(
    (sent?.values ?? []).some((v) => String(v.labels.queue).includes(BUS) && v.value > 0),
    `no message counted as sent to the bus: ${JSON.stringify(sent?.values)}`,
  );
  assert.equal(forwarder.readiness().ok, true, forwarder.readiness().reasons.join('; '));

  // One trace across the bus: the reconcile of the envelope continues the forwarder's span.
  const finished = spans.getFinishedSpans();
  const forwards = finished.filter((s) => s.name === 'operless.forward' && s.attributes['operless.key'] === `Gadget/${NS}/g1`);
  const continued = finished.filter(
    (s) =>
      s.name === 'operless.reconcile' &&
      forwards.some((f) => f.spanContext().spanId === s.parentSpanContext?.spanId && f.spanContext().traceId === s.spanContext().traceId),
  );
  assert.ok(
    continued.length > 0,
    `no reconcile continues a forward span: ${finished.map((s) => `${s.name} ${s.spanContext().traceId} parent ${s.parentSpanContext?.spanId}`).join('; ')}`,
  );
  const forwardParents = new Set(forwards.map((f) => formatTraceparent(f.spanContext())));
  for (const { body } of audit)
    assert.ok(forwardParents.has(JSON.parse(body).traceparent), `the detail-only rule's body carries no forward span's traceparent: ${body}`);
});

test('a hostile envelope on the work queue is dead-lettered with the reason of any invalid message', async () => {
  assert.ok(runner, 'the first test starts the function');
  const hostile = JSON.stringify({ source: SOURCE, 'detail-type': 'Reconcile Added', detail: { v: 1, kind: 'Gadget', name: 'Not A Name' } });
  await sqs.send(new SendMessageCommand({ QueueUrl: workUrl, MessageBody: hostile }));
  let dead: { body: string; attributes: Record<string, string> } | undefined;
  await waitUntil('the hostile envelope in the DLQ', async () => {
    dead = (await receive(dlqUrl)).find((m) => m.body === hostile);
    return dead !== undefined;
  });
  assert.equal(dead!.attributes[DLQ_ATTRIBUTE_REASON], 'InvalidMessage');
});

test('a bus that does not exist makes the forwarder not ready, naming the bus', async () => {
  const base = gadgetConfig('', EMULATOR_REGION, { coalesceWindowMs: 0 });
  const lost = startForwarder(
    {
      ...base,
      queue: { region: EMULATOR_REGION },
      sink: 'eventbridge',
      eventBus: { name: 'no-such-bus', source: SOURCE, endpoint: eb.endpoint },
      primaries: base.primaries!.map((p) => ({ ...p, namespaces: [NS] })),
      owned: [],
    },
    { kubeConfig: cp.kubeConfig, logger: silentLogger },
  );
  try {
    await lost.ready;
    await waitUntil('readiness to name the missing bus', () => lost.readiness().reasons.some((r) => r.includes('eventbridge:no-such-bus')));
    assert.equal(lost.readiness().ok, false);
  } finally {
    await lost.stop({ graceMs: 0 });
  }
});

test('operless replay sends the archived changes to the bus again, and its rules deliver them', async () => {
  const result = await replay(
    [
      '--archive',
      archiveArn,
      '--bus',
      busArn,
      '--from',
      startedAt,
      '--to',
      new Date().toISOString(),
      '--name',
      'it-replay',
      '--wait',
      '--timeout',
      '60',
      '--json',
    ],
    eb.events(),
  );
  assert.equal(result.exitCode ?? 0, 0, result.output);
  assert.equal(JSON.parse(result.output).state, 'COMPLETED');
  // The audit rule's queue gets the archived Gadget events again (moto replays them untransformed: whole events).
  let replayed: string[] = [];
  await waitUntil('the replayed events in the audit queue', async () => {
    replayed = [...replayed, ...(await receive(auditUrl)).map((m) => m.body).filter((b) => b.includes('"replay-name": "it-replay"'))];
    return replayed.length > 0;
  });
  for (const body of replayed) {
    const decoded = decodeMessage(body);
    assert.ok(decoded.ok && decoded.message.kind === 'Gadget', body);
  }
});

// Issue 29 item 9: with per-key ordering the work queue is FIFO, and a rule's
// SqsParameters.MessageGroupId is one static string, so serverless.yml points the rule at the
// standard delay queue and the mover moves each event into the FIFO queue grouped by its key.
// That path, on moto: rule → standard queue → mover (under the local Lambda runner) → FIFO queue.
test('per-key: the rule delivers to the standard delay queue, and the mover moves each event into the FIFO work queue grouped by its own key', async () => {
  const bus = `${BUS}-per-key`;
  await eb.createBus(bus);
  const delayUrl = await eb.routeToQueue({
    bus,
    rule: 'gadget-per-key',
    source: SOURCE,
    kind: 'Gadget',
    queueName: 'pk-delay',
    // serverless.yml's InputPath $.detail, which moto ignores; its InputTransformer gives the same body.
    input: { InputTransformer: { InputPathsMap: { detail: '$.detail' }, InputTemplate: '<detail>' } },
  });
  const { QueueUrl: fifoUrl = '' } = await sqs.send(
    new CreateQueueCommand({
      QueueName: 'pk-work.fifo',
      Attributes: { FifoQueue: 'true', DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' },
    }),
  );
  const mover = await startLambdaRunner({
    queueUrl: delayUrl,
    sqs,
    batchSize: 10,
    batchWindowSeconds: 0,
    maxConcurrency: 1,
    timeoutSeconds: 30,
    logger: silentLogger,
    handler: toDelayMoverHandler({ queueUrl: fifoUrl, delayQueueUrl: delayUrl, sender: createSqsSender(sqs), log: silentLogger }),
  });
  try {
    const sent = ['a', 'b', 'a', 'c'].map((name, i) =>
      encodeMessage(newMessage({ cluster: 'test', apiVersion: API_VERSION, kind: 'Gadget', namespace: NS, name }, 'Modified', 1_767_225_600_000 + i)),
    );
    const out = await eb
      .events()
      .send(new PutEventsCommand({ Entries: sent.map((detail) => ({ EventBusName: bus, Source: SOURCE, DetailType: 'Reconcile Modified', Detail: detail })) }));
    assert.equal(out.FailedEntryCount ?? 0, 0, JSON.stringify(out.Entries));
    const moved: { body: string; group: string }[] = [];
    await waitUntil('every event moved into the FIFO work queue', async () => {
      const got = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: fifoUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageSystemAttributeNames: ['MessageGroupId'] }),
      );
      for (const m of got.Messages ?? []) {
        moved.push({ body: m.Body ?? '', group: m.Attributes?.MessageGroupId ?? '' });
        await sqs.send(new DeleteMessageCommand({ QueueUrl: fifoUrl, ReceiptHandle: m.ReceiptHandle }));
      }
      return moved.length >= sent.length;
    });
    // (moto's transformer re-serialises the detail with spaces: compare the messages, not the bytes)
    const canonical = (body: string) => JSON.stringify(JSON.parse(body));
    assert.deepEqual(moved.map((m) => canonical(m.body)).sort(), sent.map(canonical).sort(), 'each event moved once');
    for (const { body, group } of moved) {
      const decoded = decodeMessage(body);
      assert.ok(decoded.ok, body);
      assert.equal(group, messageGroupId(objectKey(decoded.message)), "the group is the event's own object key");
    }
    assert.equal(new Set(moved.map((m) => m.group)).size, 3, 'three objects, three groups: not one static group for the kind');
  } finally {
    await mover.stop();
  }
});
