/**
 * `npm start -- --traces` (src/devloop/trace-tree.ts): a trace printed as a tree — children
 * under their parents in start order, each span once, a span whose parent is missing as a
 * root — and the exporter printing a trace once it goes quiet, again whole when it grows.
 * Real spans from the SDK feed the exporter here; the dev loop itself is checked by hand and
 * by test/integration/trace.test.ts (the printer on the real pipeline).
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { context, trace } from '@opentelemetry/api';
import { formatTraceTree, startTracePrinter, type TreeSpan } from '../../../src/devloop/trace-tree.ts';
import { waitUntil } from '../../../src/testing/wait.ts';

afterEach(() => trace.disable());

const span = (spanId: string, parentSpanId: string | undefined, name: string, startMs: number, attributes: Record<string, unknown> = {}): TreeSpan => ({
  traceId: 't'.repeat(32),
  spanId,
  parentSpanId,
  name,
  startMs,
  durationMs: 5,
  attributes,
  failed: false,
});

test('children sit under their parents in start order; every span once; an orphan is a root', () => {
  const lines = formatTraceTree([
    span('c', 'b', 'kube GET', 1010, { 'url.path': '/apis/x/v1/namespaces/n/gadgets/g', 'http.response.status_code': 200 }),
    span('a', undefined, 'operless.forward', 1000, { 'operless.key': 'Gadget/n/g', 'operless.reason': 'Modified' }),
    span('d', 'b', 'operless.followup', 1030, { 'operless.followup': 'send' }),
    span('b', 'a', 'operless.reconcile', 1005, { 'operless.key': 'Gadget/n/g', 'operless.reason': 'Modified' }),
    span('e', 'd', 'operless.reconcile', 2000, { 'operless.reason': 'Requeue', 'operless.attempt': 0 }),
    span('f', 'gone', 'operless.reconcile', 3000, { 'operless.reason': 'Retry' }),
  ]);
  assert.match(lines[0]!, /^trace t{32} Gadget\/n\/g: 6 spans, 2005 ms$/);
  assert.deepEqual(
    lines.slice(1).map((l) => l.replace(/ \(\+.*$/, '')),
    [
      '  operless.forward Gadget/n/g Modified',
      '  └─ operless.reconcile Gadget/n/g Modified',
      '     ├─ kube GET /apis/x/v1/namespaces/n/gadgets/g → 200',
      '     └─ operless.followup → send',
      '        └─ operless.reconcile Requeue',
      '  operless.reconcile Retry',
    ],
  );
  assert.match(lines[3]!, /\(\+10 ms, 5\.0 ms\)$/);
  assert.deepEqual(formatTraceTree([]), []);
});

test('the printer prints a trace once it goes quiet, and again whole when it grows', async () => {
  const lines: string[] = [];
  const printer = startTracePrinter((line) => lines.push(line), 50);
  const tracer = trace.getTracer('test');
  const root = tracer.startSpan('operless.forward', { attributes: { 'operless.key': 'Gadget/n/g' } });
  const child = tracer.startSpan('operless.reconcile', {}, trace.setSpan(context.active(), root));
  child.end();
  root.end();
  await waitUntil('the first print', () => lines.length === 3, { timeoutMs: 5000 });
  tracer.startSpan('operless.followup', {}, trace.setSpan(context.active(), child)).end();
  await waitUntil('the second print', () => lines.length === 7, { timeoutMs: 5000 });
  assert.match(lines[3]!, /: 3 spans/);
  assert.match(lines[6]!, /^ {5}└─ operless\.followup/);
  await printer.stop();
});
