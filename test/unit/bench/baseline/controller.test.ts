/** The baseline's work-queue step per reconcile outcome: client-go's Forget, AddAfter or AddRateLimited. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workQueueStep } from '../../../../bench/baseline/controller.ts';
import { TerminalError } from '../../../../src/core/controller/errors.ts';
import { done, requeueAfter } from '../../../../src/core/controller/result.ts';

test('a gone object and a plain success are forgotten', () => {
  assert.deepEqual(workQueueStep({ type: 'gone', why: 'NotFound' }), { result: 'gone' });
  assert.deepEqual(workQueueStep({ type: 'gone', why: 'UidChanged' }), { result: 'gone' });
  assert.deepEqual(workQueueStep({ type: 'result', result: done() }), { result: 'success' });
});

test('requeueAfter is queued again after its delay in ms', () => {
  assert.deepEqual(workQueueStep({ type: 'result', result: requeueAfter(30) }), { result: 'requeue_after', delayMs: 30_000 });
});

test('a terminal error is not retried; any other error is retried with backoff', () => {
  const terminal = new TerminalError('bad spec', { reason: 'InvalidSpec' });
  assert.deepEqual(workQueueStep({ type: 'error', error: terminal }), { result: 'terminal_error', error: terminal });
  const transient = new Error('connection reset');
  assert.deepEqual(workQueueStep({ type: 'error', error: transient }), { result: 'error', error: transient });
});
