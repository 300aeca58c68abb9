import { test } from 'node:test';
import assert from 'node:assert/strict';
import { costPerMillionReconciles, PRICES } from '../../../bench/lib/cost.ts';

test('costPerMillionReconciles: SQS requests at the standard rate, or the FIFO rate for per-key ordering', () => {
  const traffic = { reconciles: 1000, sqsRequests: 710, invocations: 100, billedMs: 100_000, memoryMB: 256 };
  const standard = costPerMillionReconciles(traffic);
  const fifo = costPerMillionReconciles({ ...traffic, fifo: true });
  assert.equal(standard.sqsRequestsPerReconcile, 0.71);
  assert.ok(Math.abs(standard.sqs - 0.71 * PRICES.sqsPerMillionRequests) < 1e-9);
  assert.ok(Math.abs(fifo.sqs - 0.71 * PRICES.sqsFifoPerMillionRequests) < 1e-9);
  assert.ok(fifo.total > standard.total);
  assert.equal(fifo.lambdaDuration, standard.lambdaDuration);
});
