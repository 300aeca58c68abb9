/**
 * Trace context on the forwarder's hop (observability/trace-context.ts, forwarder/sink/forward-spans.ts):
 * `traceparent` parsed and formatted per W3C (hostile values ignored), the X-Ray header of the
 * same context; the sender starts one span per message from its `observedAt` and ends it with
 * the queue's answer; each entry carries its span's context to the queue adapter, which writes
 * the `traceparent` attribute and the `AWSTraceHeader` system attribute (SQS) or `TraceHeader`
 * (EventBridge). Without an SDK registered the entries carry nothing. Spans are collected with
 * the SDK's in-memory exporter.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { trace, TraceFlags } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { awsTraceHeader, formatTraceparent, parseTraceparent } from '../../../src/observability/trace-context.ts';
import { forwardSpans } from '../../../src/forwarder/sink/forward-spans.ts';
import { newMessage } from '../../../src/contract/message.ts';
import { batchInput } from '../../../src/queue/sqs-port.ts';
import { putEventsInput } from '../../../src/queue/eventbridge-port.ts';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const message = newMessage({ cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'x' }, 'Modified', 1_700_000_000_000);
const batch = [
  { id: 'a', body: '{"reason":"Modified"}', message },
  { id: 'b', body: '{"reason":"Modified"}', message: { ...message, name: 'y' } },
];

after(() => trace.disable());

test('traceparent round-trips; malformed, zero or hostile values are ignored', () => {
  const ctx = parseTraceparent(TP);
  assert.deepEqual(ctx, { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.SAMPLED, isRemote: true });
  assert.equal(formatTraceparent(ctx!), TP);
  assert.equal(awsTraceHeader(ctx!), 'Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1');
  for (const bad of [
    undefined,
    42,
    '',
    TP.toUpperCase(),
    `${TP} `,
    '01' + TP.slice(2),
    `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
    `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
    'x'.repeat(10_000),
  ]) {
    assert.equal(parseTraceparent(bad), undefined, String(bad).slice(0, 60));
  }
});

test('without an SDK the entries carry no trace context', () => {
  const spans = forwardSpans(batch, 'work');
  assert.deepEqual(spans.trace('a'), {});
  spans.end([]);
});

test('with an SDK: a span per message from observedAt, its context on the entry, ended with the answer', () => {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  try {
    const spans = forwardSpans(batch, 'work');
    const { trace: a } = spans.trace('a');
    assert.match(a?.traceparent ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.match(a?.awsTraceHeader ?? '', /^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=1$/);
    spans.end([{ id: 'b', code: 'Throttled' }]);
    spans.fail(new Error('late')); // already ended: no second end
    const finished = exporter.getFinishedSpans();
    assert.equal(finished.length, 2);
    const [first, second] = finished;
    assert.equal(first!.name, 'operless.forward');
    assert.equal(first!.attributes['operless.key'], 'ConfigMap/ns/x');
    assert.equal(first!.startTime[0], 1_700_000_000, 'the span starts when the change was observed');
    assert.equal(first!.status.code, 1);
    assert.equal(second!.status.code, 2);
    assert.equal(parseTraceparent(a!.traceparent)?.spanId, first!.spanContext().spanId);

    // The adapters write it where each service carries it.
    const sqs = batchInput('http://q', [{ id: 'a', body: '{}', trace: a! }]).Entries![0]!;
    assert.deepEqual(sqs.MessageAttributes, { traceparent: { DataType: 'String', StringValue: a!.traceparent } });
    assert.deepEqual(sqs.MessageSystemAttributes, { AWSTraceHeader: { DataType: 'String', StringValue: a!.awsTraceHeader } });
    assert.equal(putEventsInput({ bus: 'b', source: 's' }, [{ id: 'a', body: '{}', trace: a! }]).input.Entries![0]!.TraceHeader, a!.awsTraceHeader);
  } finally {
    trace.disable();
  }
});
