import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pickMetrics, sumMetrics } from '../../../src/cli/prometheus.ts';

const TEXT = `# HELP operless_forwarder_messages_sent_total Messages accepted by the queue, by reason.
# TYPE operless_forwarder_messages_sent_total counter
operless_forwarder_messages_sent_total{reason="Added"} 1
operless_forwarder_messages_sent_total{reason="Owned",extra="a b"} 2.5

# TYPE operless_forwarder_leader gauge
operless_forwarder_leader 1
operless_forwarder_forward_lag_seconds_bucket{le="0.05"} 3
operless_forwarder_forward_lag_seconds_bucket{le="+Inf"} 4
operless_forwarder_buffer_depth 0 1700000000000
garbage line here
weird_value NaN
`;

test('samples of one metric are summed over their labels; histograms keep their series names', () => {
  const totals = sumMetrics(TEXT);
  assert.equal(totals.get('operless_forwarder_messages_sent_total'), 3.5);
  assert.equal(totals.get('operless_forwarder_leader'), 1);
  assert.equal(totals.get('operless_forwarder_forward_lag_seconds_bucket'), 7);
  assert.equal(totals.get('operless_forwarder_buffer_depth'), 0, 'a timestamp after the value is ignored');
  assert.equal(totals.has('garbage'), false);
  assert.equal(totals.has('weird_value'), false);
});

test('picking leaves out metrics the exposition did not have', () => {
  const picked = pickMetrics(sumMetrics(TEXT), ['operless_forwarder_leader', 'operless_forwarder_relists_total']);
  assert.deepEqual(picked, { operless_forwarder_leader: 1 });
  assert.deepEqual(pickMetrics(sumMetrics(''), ['x']), {});
});
