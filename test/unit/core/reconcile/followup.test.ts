import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../../support/fast-check.ts';
import { MAX_WAIT_SECONDS, messageProblem, newMessage, followUp, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { decideFollowUp, deferred, redelay, CONFLICT_RETRY_SECONDS, type ReconcileEnding } from '../../../../src/core/reconcile/followup.ts';
import { resolveRetryPolicy } from '../../../../src/core/controller/retry-policy.ts';
import { done, requeueAfter } from '../../../../src/core/controller/result.ts';
import { TerminalError } from '../../../../src/core/controller/errors.ts';
import { KubeApiError } from '../../../../src/kube/errors.ts';

const NOW = 1_700_000_000_000;
const policy = resolveRetryPolicy({ baseSeconds: 1, capSeconds: 900, maxAttempts: 5 });
const base = newMessage(
  { cluster: 'c1', apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'ns', name: 'm', uid: 'u1' },
  'Modified',
  NOW - 5000,
);
const at = (attempt: number): ReconcileMessage => followUp(base, { reason: attempt ? 'Retry' : 'Modified', attempt });
const decide = (message: ReconcileMessage, outcome: ReconcileEnding) =>
  decideFollowUp({ message, ending: outcome, policy, now: NOW, random: () => 1 - Number.EPSILON });
const apiError = (status: number, retryAfterSeconds?: number) =>
  new KubeApiError({ status, reason: 'x', message: 'boom', request: 'GET /x', retryAfterSeconds });

test('done and a vanished object send nothing', () => {
  assert.deepEqual(decide(base, { type: 'result', result: done() }), { type: 'none', label: 'success' });
  assert.deepEqual(decide(base, { type: 'gone', why: 'NotFound' }), { type: 'none', label: 'success' });
  assert.deepEqual(decide(at(3), { type: 'gone', why: 'UidChanged' }), { type: 'none', label: 'success' });
});

test('requeueAfter sends a Requeue with attempt reset to 0 and the delay rounded up', () => {
  const f = decide(at(3), { type: 'result', result: requeueAfter(2.5) });
  assert.equal(f.type, 'send');
  if (f.type !== 'send') return;
  assert.equal(f.delaySeconds, 3);
  assert.equal(f.message.reason, 'Requeue');
  assert.equal(f.message.attempt, 0);
  assert.equal(f.message.notBefore, undefined);
  assert.equal(f.message.observedAt, base.observedAt, 'observedAt is kept so lag covers the whole chain');
  assert.equal(f.label, 'requeue_after');
});

test('requeueAfter(0) still waits one second (no hot loop)', () => {
  const f = decide(base, { type: 'result', result: requeueAfter(0) });
  assert.equal(f.type === 'send' && f.delaySeconds, 1);
});

test('requeueAfter longer than 900 s carries notBefore', () => {
  const f = decide(base, { type: 'result', result: requeueAfter(7200) });
  assert.ok(f.type === 'send');
  assert.equal(f.delaySeconds, 900);
  assert.equal(f.message.notBefore, NOW + 7_200_000);
});

test('an error retries with attempt + 1 and exponential backoff', () => {
  const delays = [0, 1, 2, 3].map((a) => {
    const f = decide(at(a), { type: 'error', error: new Error('flaky') });
    assert.ok(f.type === 'send');
    assert.equal(f.message.reason, 'Retry');
    assert.equal(f.message.attempt, a + 1);
    assert.equal(f.label, 'error');
    return f.delaySeconds;
  });
  assert.deepEqual(delays, [1, 2, 4, 8]);
});

test('after maxAttempts failed runs the message goes to the DLQ with the error', () => {
  const f = decide(at(4), { type: 'error', error: new Error('still broken') });
  assert.equal(f.type, 'deadLetter');
  assert.ok(f.type === 'deadLetter');
  assert.equal(f.reason, 'RetriesExhausted');
  assert.match(f.error, /gave up after 5 attempts: still broken/);
});

test('TerminalError goes to the DLQ at once, whatever the attempt', () => {
  const f = decide(base, { type: 'error', error: new TerminalError('memoryLimitMB exceeds the memory limit', { reason: 'InvalidSpec' }) });
  assert.deepEqual(f, { type: 'deadLetter', label: 'terminal_error', reason: 'TerminalError', error: 'memoryLimitMB exceeds the memory limit' });
});

test('409 Conflict retries after one second, whatever the backoff would be', () => {
  const f = decide(at(3), { type: 'error', error: apiError(409) });
  assert.ok(f.type === 'send');
  assert.equal(f.delaySeconds, CONFLICT_RETRY_SECONDS);
  assert.equal(f.message.attempt, 4);
  assert.equal(f.label, 'conflict');
});

test('429 with Retry-After waits that long and does not use up an attempt', () => {
  const f = decide(at(4), { type: 'error', error: apiError(429, 17) });
  assert.ok(f.type === 'send');
  assert.equal(f.delaySeconds, 17);
  assert.equal(f.message.attempt, 4);
  assert.equal(f.label, 'throttled');
});

test('5xx with Retry-After waits that long and counts as an attempt', () => {
  const f = decide(at(1), { type: 'error', error: apiError(503, 30) });
  assert.ok(f.type === 'send');
  assert.equal(f.delaySeconds, 30);
  assert.equal(f.message.attempt, 2);
});

test('a Retry-After longer than MAX_RETRY_AFTER_SECONDS is capped, also on a KubeApiError built by hand', () => {
  for (const [status, attempt] of [
    [429, 4],
    [503, 2],
  ] as const) {
    for (const seconds of [3600, 1e12, Number.POSITIVE_INFINITY]) {
      const f = decide(at(1), { type: 'error', error: apiError(status, seconds) });
      assert.ok(f.type === 'send');
      assert.equal(f.delaySeconds, 300, `${status} Retry-After ${seconds}`);
      assert.equal(f.message.notBefore, undefined);
      assert.equal(messageProblem(f.message, NOW), undefined);
      assert.equal(f.message.attempt, status === 429 ? 1 : attempt);
    }
  }
});

test("a requeueAfter longer than the contract's MAX_WAIT_SECONDS waits MAX_WAIT_SECONDS", () => {
  const f = decide(base, { type: 'result', result: requeueAfter(30 * 24 * 3600) });
  assert.ok(f.type === 'send');
  assert.equal(f.message.notBefore, NOW + MAX_WAIT_SECONDS * 1000);
  assert.equal(messageProblem(f.message, NOW), undefined);
});

test('a not-due message is re-sent unchanged except for the hop', () => {
  const m = { ...followUp(base, { reason: 'Requeue', attempt: 0, notBefore: NOW + 4000 * 1000 }), notBefore: NOW + 4000 * 1000 };
  const f = redelay(m, NOW);
  assert.ok(f.type === 'send');
  assert.equal(f.delaySeconds, 900);
  assert.equal(f.message.notBefore, m.notBefore);
  assert.equal(f.message.reason, 'Requeue');
  assert.equal(f.label, 'not_due');
});

test('a deferred key is handed back with no delay and the same attempt', () => {
  const f = deferred(at(2));
  assert.ok(f.type === 'send');
  assert.equal(f.delaySeconds, 0);
  assert.equal(f.message.attempt, 2);
  assert.equal(f.label, 'deferred');
});

test('property: every follow-up message is valid, and delays stay within SQS limits', () => {
  const outcomes = fc.oneof(
    fc.constant<ReconcileEnding>({ type: 'result', result: done() }),
    fc.double({ min: 0, max: 1e9, noNaN: true }).map((s): ReconcileEnding => ({ type: 'result', result: requeueAfter(s) })),
    fc
      .constantFrom(0, 400, 409, 429, 500, 503)
      .chain((status) =>
        fc
          .option(fc.oneof(fc.integer({ min: 1, max: 100_000 }), fc.double({ min: 1e5, noNaN: true })), { nil: undefined })
          .map((ra): ReconcileEnding => ({ type: 'error', error: apiError(status, ra) })),
      ),
    fc.constant<ReconcileEnding>({ type: 'error', error: new Error('x') }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 20 }), outcomes, fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, outcome, r) => {
      const f = decideFollowUp({ message: at(attempt), ending: outcome, policy, now: NOW, random: () => r });
      if (f.type !== 'send') return;
      assert.ok(Number.isInteger(f.delaySeconds) && f.delaySeconds >= 0 && f.delaySeconds <= 900);
      assert.ok(f.message.attempt <= Math.max(attempt, policy.maxAttempts));
      if (f.message.notBefore !== undefined) assert.equal(f.delaySeconds, 900);
      assert.equal(messageProblem(f.message, NOW), undefined, 'the contract accepts every follow-up (notBefore bounded)');
    }),
    fcParameters(),
  );
});
