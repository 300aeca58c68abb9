/**
 * The benchmark reads controller-runtime's reconcile counts from the Go operator's metrics text
 * and its start-up lines from stdout: the pure parsers, on text shaped like what
 * prometheus/client_golang serves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { metricSamples, parseRequestTotals } from '../../../bench/lib/apiserver-metrics.ts';
import { parseOperatorLine, parseQueueDepth, parseReconcileTotals } from '../../../bench/lib/controller-runtime.ts';

const EXPOSITION = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="memcached",result="error"} 3
controller_runtime_reconcile_total{controller="memcached",result="requeue"} 0
controller_runtime_reconcile_total{controller="memcached",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="memcached",result="success"} 1234
controller_runtime_reconcile_total{controller="other",result="success"} 99
controller_runtime_reconcile_time_seconds_bucket{controller="memcached",le="0.005"} 17
controller_runtime_reconcile_total_extra{controller="memcached"} 5
workqueue_depth{controller="memcached",name="memcached"} 0
`;

test('reconciles are summed over every result of the named controller only', () => {
  assert.deepEqual(parseReconcileTotals(EXPOSITION, 'memcached'), {
    total: 1237,
    byResult: { error: 3, requeue: 0, requeue_after: 0, success: 1234 },
  });
  assert.equal(parseReconcileTotals(EXPOSITION, 'other').total, 99);
  assert.deepEqual(parseReconcileTotals('', 'memcached'), { total: 0, byResult: {} });
});

test("the work queue's depth is the named controller's only, and absent when not exposed", () => {
  const text = `${EXPOSITION}workqueue_depth{controller="other",name="other"} 40\nworkqueue_depth_extra{name="memcached"} 9\n`;
  assert.equal(parseQueueDepth(text, 'memcached'), 0);
  assert.equal(parseQueueDepth(text, 'other'), 40);
  assert.equal(parseQueueDepth('workqueue_depth{name="memcached"} 1234\n', 'memcached'), 1234, 'labelled by name only');
  assert.equal(parseQueueDepth(text.replace('name="memcached"} 0', 'name="memcached"} 17'), 'memcached'), 17);
  assert.equal(parseQueueDepth('', 'memcached'), undefined);
});

test('samples of one metric: labels with escaped quotes, values in exponent form, no label set', () => {
  const text = 'm{a="x\\"y",b="2"} 1.5e+03\nm 7\nm_other 1\n# m{a="z"} 9\nm{a="nan"} not-a-number\n';
  assert.deepEqual(metricSamples(text, 'm'), [
    { labels: { a: 'x\\"y', b: '2' }, value: 1500 },
    { labels: {}, value: 7 },
  ]);
});

test('apiserver_request_total still parses by verb and resource through the shared parser', () => {
  const text =
    'apiserver_request_total{code="200",resource="pods",subresource="",verb="LIST"} 4\napiserver_request_total{code="200",resource="memcacheds",subresource="status",verb="PUT"} 2\n';
  assert.deepEqual(
    [...parseRequestTotals(text)],
    [
      ['LIST pods', 4],
      ['PUT memcacheds/status', 2],
    ],
  );
});

test('the operator announces its metrics address and readiness; anything else is ignored', () => {
  assert.deepEqual(parseOperatorLine('{"address":"127.0.0.1:40123","event":"metrics"}'), { event: 'metrics', address: '127.0.0.1:40123' });
  assert.deepEqual(parseOperatorLine('{"event":"ready"}'), { event: 'ready' });
  for (const line of ['', 'ready', '{"event":"metrics"}', '{"event":"other"}', '{not json', '{"event":"metrics","address":5}']) {
    assert.equal(parseOperatorLine(line), undefined, line);
  }
});
