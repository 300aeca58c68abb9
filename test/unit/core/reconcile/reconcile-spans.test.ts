/**
 * The function continues the trace a record carries (src/core/reconcile/reconcile-spans.ts): the key's
 * `operless.reconcile` span is the child of the record's `traceparent` (or of its
 * `AWSTraceHeader` when no traceparent), the follow-up it sends is an `operless.followup`
 * span whose context the requeue carries on (same trace id), a coalesced key links the other
 * records' contexts, and a hostile trace attribute starts a new trace instead of failing
 * anything. Without an SDK the spans are no-ops and the received context passes through unchanged. Spans: the SDK's in-memory
 * exporter; the cluster and the queue: the unit fakes.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { SQSRecord } from 'aws-lambda';
import { encodeMessage, newMessage } from '../../../../src/contract/message.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../../../src/core/handler/handler.ts';
import { requeueAfter } from '../../../../src/core/controller/result.ts';
import type { KindRef } from '../../../../src/kube/types.ts';
import { silentLogger } from '../../../../src/observability/log.ts';
import { noMetrics } from '../../../../src/core/reconcile/metrics.ts';
import { parseTraceparent } from '../../../../src/observability/trace-context.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord } from '../fakes.ts';

const WIDGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const TP = `00-${TRACE}-00f067aa0ba902b7-01`;

after(() => trace.disable());

function withAttributes(record: SQSRecord, traceparent?: string, awsTraceHeader?: string): SQSRecord {
  return {
    ...record,
    ...(traceparent === undefined ? {} : { messageAttributes: { traceparent: { stringValue: traceparent, dataType: 'String' } } }),
    ...(awsTraceHeader === undefined ? {} : { attributes: { ...record.attributes, AWSTraceHeader: awsTraceHeader } }),
  } as SQSRecord;
}

async function run(records: (body: string) => SQSRecord[]) {
  const cluster = fakeCluster();
  const sender = recordingSender();
  const widget = cluster.put(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name: 'a', namespace: 'ns' }, spec: {} });
  const handler = toSqsHandler(defineController({ ...WIDGET, reconcile: async () => requeueAfter(30) }), {
    queueUrl: 'http://q/work',
    deadLetterQueueUrl: 'http://q/dlq',
    clients: async () => cluster.client,
    sender,
    log: silentLogger,
    metrics: noMetrics,
  });
  const body = encodeMessage(
    newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'ns', name: 'a', uid: widget.metadata.uid }, 'Modified', Date.now()),
  );
  const answer = await handler({ Records: records(body) }, lambdaContext());
  assert.deepEqual(answer.batchItemFailures, []);
  return sender.sent;
}

function withExporter<T>(body: (exporter: InMemorySpanExporter) => Promise<T>): Promise<T> {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  return body(exporter).finally(() => trace.disable());
}

test('without an SDK the requeue passes the received context on unchanged, and carries none when none came', async () => {
  const sent = await run((body) => [withAttributes(sqsRecord(body), TP)]);
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.trace?.traceparent, TP);
  const none = await run((body) => [sqsRecord(body)]);
  assert.equal(none[0]!.trace, undefined);
});

test("the reconcile continues the record's traceparent and the requeue carries the trace on", () =>
  withExporter(async (exporter) => {
    const sent = await run((body) => [withAttributes(sqsRecord(body), TP), withAttributes(sqsRecord(body), `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`)]);
    const spans = exporter.getFinishedSpans();
    const reconcile = spans.find((s) => s.name === 'operless.reconcile')!;
    const followUp = spans.find((s) => s.name === 'operless.followup')!;
    assert.equal(reconcile.spanContext().traceId, TRACE);
    assert.equal(reconcile.parentSpanContext?.spanId, '00f067aa0ba902b7');
    assert.deepEqual(
      reconcile.links.map((l) => l.context.traceId),
      ['1'.repeat(32)],
      'the coalesced record is linked',
    );
    assert.equal(followUp.parentSpanContext?.spanId, reconcile.spanContext().spanId);
    const carried = parseTraceparent(sent[0]!.trace?.traceparent);
    assert.equal(carried?.traceId, TRACE);
    assert.equal(carried?.spanId, followUp.spanContext().spanId);
    assert.match(sent[0]!.trace?.awsTraceHeader ?? '', new RegExp(`^Root=1-${TRACE.slice(0, 8)}-${TRACE.slice(8)};Parent=`));
  }));

test('AWSTraceHeader is the parent when there is no traceparent; a hostile attribute starts a new trace', () =>
  withExporter(async (exporter) => {
    await run((body) => [withAttributes(sqsRecord(body), undefined, `Root=1-${TRACE.slice(0, 8)}-${TRACE.slice(8)};Parent=53995c3f42cd8ad8;Sampled=1`)]);
    const fromXray = exporter.getFinishedSpans().find((s) => s.name === 'operless.reconcile')!;
    assert.equal(fromXray.spanContext().traceId, TRACE);
    assert.equal(fromXray.parentSpanContext?.spanId, '53995c3f42cd8ad8');
    exporter.reset();
    await run((body) => [withAttributes(sqsRecord(body), 'x'.repeat(55), 'Root=garbage')]);
    const fresh = exporter.getFinishedSpans().find((s) => s.name === 'operless.reconcile')!;
    assert.equal(fresh.parentSpanContext, undefined);
    assert.notEqual(fresh.spanContext().traceId, TRACE);
  }));

test('a record from EventBridge continues the traceparent its body carries: the bare detail and the whole envelope alike', () =>
  withExporter(async (exporter) => {
    const withTrace = (body: string, traceparent: string) => JSON.stringify({ ...JSON.parse(body), traceparent });
    await run((body) => [sqsRecord(withTrace(body, TP))]);
    const fromDetail = exporter.getFinishedSpans().find((s) => s.name === 'operless.reconcile')!;
    assert.equal(fromDetail.spanContext().traceId, TRACE);
    assert.equal(fromDetail.parentSpanContext?.spanId, '00f067aa0ba902b7');
    exporter.reset();
    const envelope = (body: string) =>
      JSON.stringify({
        version: '0',
        id: 'e1',
        'detail-type': 'Reconcile Modified',
        source: 'operless',
        account: '1',
        time: 't',
        region: 'r',
        resources: [],
        detail: JSON.parse(withTrace(body, TP)),
      });
    await run((body) => [sqsRecord(envelope(body))]);
    const fromEnvelope = exporter.getFinishedSpans().find((s) => s.name === 'operless.reconcile')!;
    assert.equal(fromEnvelope.parentSpanContext?.spanId, '00f067aa0ba902b7');
    exporter.reset();
    // The message attribute wins over the body; a hostile body field starts a new trace.
    await run((body) => [withAttributes(sqsRecord(withTrace(body, `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`)), TP)]);
    assert.equal(exporter.getFinishedSpans().find((s) => s.name === 'operless.reconcile')!.parentSpanContext?.spanId, '00f067aa0ba902b7');
    exporter.reset();
    await run((body) => [sqsRecord(withTrace(body, '00-zz'))]);
    assert.equal(exporter.getFinishedSpans().find((s) => s.name === 'operless.reconcile')!.parentSpanContext, undefined);
  }));
