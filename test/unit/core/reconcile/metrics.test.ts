import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEmfMetrics, FUNCTION_METRICS, resultLabel } from '../../../../src/core/reconcile/metrics.ts';

test('one EMF line per reconcile with controller-runtime names and dimensions', () => {
  const lines: string[] = [];
  const m = createEmfMetrics({ namespace: 'Test', write: (l) => lines.push(l), now: () => 1234 });
  m.reconcile({ controller: 'memcached', label: 'success', durationSeconds: 0.25, lagSeconds: 1.5 });
  assert.equal(lines.length, 1);
  const doc = JSON.parse(lines[0]!);
  assert.equal(doc._aws.Timestamp, 1234);
  const directives = doc._aws.CloudWatchMetrics;
  assert.deepEqual(directives[0], { Namespace: 'Test', Dimensions: [['controller', 'result']], Metrics: [{ Name: 'reconcile_total', Unit: 'Count' }] });
  assert.deepEqual(directives[1].Dimensions, [['controller']]);
  assert.deepEqual(
    directives[1].Metrics.map((x: { Name: string }) => x.Name),
    ['reconcile_time_seconds', 'reconcile_errors_total', 'terminal_reconcile_errors_total', 'queue_lag_seconds'],
  );
  assert.equal(doc.controller, 'memcached');
  assert.equal(doc.result, 'success');
  assert.equal(doc.reconcile_total, 1);
  assert.equal(doc.reconcile_time_seconds, 0.25);
  assert.equal(doc.reconcile_errors_total, 0);
  assert.equal(doc.queue_lag_seconds, 1.5);
  // every metric named in a directive has a value on the line (EMF requires it)
  for (const d of directives) for (const metric of d.Metrics) assert.equal(typeof doc[metric.Name], 'number', metric.Name);
});

test('terminal errors count as errors and terminal errors', () => {
  const lines: string[] = [];
  createEmfMetrics({ write: (l) => lines.push(l) }).reconcile({ controller: 'c', label: 'terminal_error', durationSeconds: 1 });
  const doc = JSON.parse(lines[0]!);
  assert.equal(doc.result, 'error');
  assert.equal(doc.reconcile_errors_total, 1);
  assert.equal(doc.terminal_reconcile_errors_total, 1);
  assert.equal('queue_lag_seconds' in doc, false);
});

test("result labels map onto controller-runtime's", () => {
  assert.equal(resultLabel('success'), 'success');
  assert.equal(resultLabel('requeue_after'), 'requeue_after');
  for (const l of ['error', 'conflict', 'throttled', 'terminal_error', 'retries_exhausted'] as const) assert.equal(resultLabel(l), 'error');
});

test('a failing writer never throws into the reconcile', () => {
  const m = createEmfMetrics({
    write: () => {
      throw new Error('stdout closed');
    },
  });
  assert.doesNotThrow(() => m.reconcile({ controller: 'c', label: 'success', durationSeconds: 0 }));
  assert.doesNotThrow(() => m.deadLetter('c', 'TerminalError'));
});

test('an unmarked requeue (per-key mode, its mark write failed) is one count per controller', () => {
  const lines: string[] = [];
  createEmfMetrics({ namespace: 'Test', write: (l) => lines.push(l), now: () => 1 }).unmarkedRequeue?.('memcached');
  const doc = JSON.parse(lines[0]!);
  assert.deepEqual(doc._aws.CloudWatchMetrics, [
    { Namespace: 'Test', Dimensions: [['controller']], Metrics: [{ Name: 'unmarked_requeues_total', Unit: 'Count' }] },
  ]);
  assert.deepEqual([doc.controller, doc.unmarked_requeues_total], ['memcached', 1]);
});

test('every line publishes metrics of the catalogue, under its unit and dimensions, and every catalogue metric is published by some call', () => {
  const lines: string[] = [];
  const m = createEmfMetrics({ namespace: 'Test', write: (l) => lines.push(l), now: () => 1 });
  m.reconcile({ controller: 'c', label: 'terminal_error', durationSeconds: 0.1, lagSeconds: 2, resyncRepaired: true });
  m.deadLetter('c', 'TerminalError');
  m.deferred('c', 'rate_limited');
  m.timerTick?.('c', 'health', 'success');
  m.unmarkedRequeue?.('c');
  const published = new Map<string, { unit: string; dimensions: string[] }>();
  for (const line of lines) {
    const doc = JSON.parse(line) as { _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] } } & Record<
      string,
      unknown
    >;
    for (const d of doc._aws.CloudWatchMetrics) {
      for (const metric of d.Metrics) {
        published.set(metric.Name, { unit: metric.Unit, dimensions: d.Dimensions[0] ?? [] });
        for (const dimension of d.Dimensions[0] ?? []) assert.equal(typeof doc[dimension], 'string', `${metric.Name}: dimension ${dimension} has a value`);
      }
    }
  }
  const catalogue = new Map(Object.entries(FUNCTION_METRICS).map(([name, x]) => [name, { unit: x.unit, dimensions: [...x.dimensions] }]));
  assert.deepEqual(published, catalogue);
});
