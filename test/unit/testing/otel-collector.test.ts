/**
 * The test collector's helpers (src/testing/otel-collector.ts): its configuration (OTLP/HTTP on
 * the loopback port given, the file exporter, no telemetry server on a fixed port) and the
 * reading of the file exporter's OTLP JSON lines (a line still being written is skipped).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { collectorConfig, parseExportedSpans } from '../../../src/testing/otel-collector.ts';

test('the configuration listens on the loopback port given and writes to the file given, with no telemetry server', () => {
  const yaml = collectorConfig(4321, '/tmp/x/traces.jsonl');
  assert.match(yaml, /endpoint: 127\.0\.0\.1:4321/);
  assert.match(yaml, /path: "\/tmp\/x\/traces\.jsonl"/);
  assert.match(yaml, /metrics:\n\s+level: none/);
  assert.doesNotMatch(yaml, /grpc/);
});

test('spans are read from OTLP JSON lines with their service name; a partial line is skipped', () => {
  const line = JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: 'a'.repeat(32),
                spanId: 'b'.repeat(16),
                name: 'operless.forward',
                attributes: [{ key: 'operless.key', value: { stringValue: 'Gadget/n/g' } }],
              },
              {
                traceId: 'a'.repeat(32),
                spanId: 'c'.repeat(16),
                parentSpanId: 'b'.repeat(16),
                name: 'operless.reconcile',
                attributes: [{ key: 'operless.attempt', value: { intValue: '2' } }],
              },
            ],
          },
        ],
      },
    ],
  });
  const spans = parseExportedSpans(`${line}\n{"resourceSpans":[{"resou`);
  assert.deepEqual(
    spans.map((s) => [s.serviceName, s.name, s.parentSpanId]),
    [
      ['svc', 'operless.forward', ''],
      ['svc', 'operless.reconcile', 'b'.repeat(16)],
    ],
  );
  assert.equal(spans[0]!.attributes['operless.key'], 'Gadget/n/g');
  assert.equal(spans[1]!.attributes['operless.attempt'], 2);
});
