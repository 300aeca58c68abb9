import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../support/fast-check.ts';
import { followUp, newMessage, type ReconcileMessage } from '../../../src/contract/message.ts';
import { REQUEUE_MARK_ANNOTATION, requeueMarkOf } from '../../../src/contract/requeue-mark.ts';
import { decideFollowUp } from '../../../src/core/followup.ts';
import { resolveRetryPolicy } from '../../../src/core/backoff.ts';
import { done, requeueAfter } from '../../../src/core/result.ts';
import { isSupersededRequeue, MARK_MARGIN_MS, requeueStep } from '../../../src/core/requeue-merge.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const NOW = 1_700_000_000_000;
const policy = resolveRetryPolicy({ baseSeconds: 1, capSeconds: 900, maxAttempts: 5 });
const base = newMessage({ cluster: 'c1', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'm', uid: 'u1' }, 'Modified', NOW - 5000);
const objectMarked = (mark?: number | string): KubeObject => ({
  apiVersion: 'v1', kind: 'ConfigMap',
  metadata: { name: 'm', namespace: 'ns', uid: 'u1', ...(mark !== undefined ? { annotations: { other: 'x', [REQUEUE_MARK_ANNOTATION]: String(mark) } } : {}) },
});
const requeueIn = (seconds: number, message: ReconcileMessage = base, now = NOW) =>
  decideFollowUp({ message, outcome: { type: 'result', result: requeueAfter(seconds) }, policy, now });
const requeueMessage = (notBefore: number): ReconcileMessage => followUp(base, { reason: 'Requeue', attempt: 0, notBefore });

test('with no pending requeue, a requeue is sent carrying its due time, and that due time is to be marked', () => {
  const step = requeueStep(requeueIn(30), objectMarked(), NOW);
  assert.ok(step.followUp.type === 'send');
  assert.equal(step.followUp.message.notBefore, NOW + 30_000);
  assert.equal(step.followUp.delaySeconds, 30);
  assert.equal(step.mark, NOW + 30_000);
});

test('a requeue due no earlier than the pending one still ahead is merged into it: nothing sent, nothing marked', () => {
  for (const pending of [NOW + 30_000, NOW + 10_000, NOW + MARK_MARGIN_MS + 1]) {
    const step = requeueStep(requeueIn(30), objectMarked(pending), NOW);
    assert.deepEqual(step, { followUp: { type: 'none', label: 'requeue_merged' } }, `pending at +${pending - NOW} ms`);
  }
});

test('the earliest due wins: a requeue due before the pending one is sent and marked', () => {
  const step = requeueStep(requeueIn(5), objectMarked(NOW + 30_000), NOW);
  assert.ok(step.followUp.type === 'send');
  assert.equal(step.mark, NOW + 5_000);
});

test('a mark in the past or not a whole number of ms holds nothing back', () => {
  for (const mark of [NOW - 1, NOW, 'soon', '-5', '1e12', '']) {
    const step = requeueStep(requeueIn(30), objectMarked(mark), NOW);
    assert.equal(step.followUp.type, 'send', `mark ${mark}`);
    assert.equal(step.mark, NOW + 30_000);
  }
});

test('a pending requeue due within the clock margin may have run already: it is replaced by one due 1 ms after it', () => {
  const pending = NOW + MARK_MARGIN_MS;
  const step = requeueStep(requeueIn(30), objectMarked(pending), NOW);
  assert.ok(step.followUp.type === 'send');
  assert.equal(step.mark, pending + 1);
  assert.equal(step.followUp.message.notBefore, pending + 1);
  assert.equal(step.followUp.delaySeconds, 2, 'the delay reaches the new due time');
});

test('every other follow-up passes unchanged and marks nothing', () => {
  const decided = [
    decideFollowUp({ message: base, outcome: { type: 'result', result: done() }, policy, now: NOW }),
    decideFollowUp({ message: base, outcome: { type: 'error', error: new Error('x') }, policy, now: NOW, random: () => 0.5 }),
  ];
  for (const f of decided) assert.deepEqual(requeueStep(f, objectMarked(NOW + 60_000), NOW), { followUp: f });
});

test('a group is superseded only when it holds nothing but requeues other than the marked one', () => {
  const marked = objectMarked(NOW + 30_000);
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000)], marked), true);
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000), requeueMessage(NOW + 30_000)], marked), false, 'the marked one is in the group');
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000), base], marked), false, 'a change of the object is in the group');
  assert.equal(isSupersededRequeue([followUp(base, { reason: 'Retry', attempt: 1, notBefore: NOW - 1 })], marked), false, 'retries are never replaced');
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000)], objectMarked()), false, 'no mark: nothing is replaced');
  assert.equal(isSupersededRequeue([], marked), false);
  assert.equal(requeueMarkOf(marked), NOW + 30_000);
});

/**
 * A model of one key in per-key mode: reconciles never overlap; each ends with done or
 * requeueAfter(d); changes of the object arrive at random times; SQS may deliver any requeue
 * twice; the FIFO queue drops a requeue of a due time it has seen (its deduplication id). The
 * real decisions (`requeueStep`, `isSupersededRequeue`) run against a mark kept as the API
 * server would. Properties: at any time at most one requeue in flight is live (the rest are
 * replaced and will not reconcile), and whenever a reconcile asked for a requeue still to
 * come, one is live and due no later than asked (to within the clock margin) — nothing is lost.
 */
test('model: at most one live pending requeue per key, and never none when one was asked for', () => {
  const step = fc.record({
    gapMs: fc.integer({ min: 0, max: 40_000 }),
    kind: fc.constantFrom('change', 'deliver', 'duplicate'),
    result: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
  });
  fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 80 }), (steps) => {
    let now = NOW;
    let mark: number | undefined;
    let asked: number | undefined; // due time the last reconcile asked for, undefined after done()
    const inFlight: ReconcileMessage[] = []; // requeues sent and not yet delivered
    const delivered: ReconcileMessage[] = []; // requeues delivered once (SQS may deliver again)
    const object = () => objectMarked(mark);
    const reconcile = (message: ReconcileMessage, seconds: number | undefined) => {
      const decided = decideFollowUp({ message, outcome: { type: 'result', result: seconds === undefined ? done() : requeueAfter(seconds) }, policy, now });
      const { followUp: f, mark: toMark } = requeueStep(decided, object(), now);
      if (seconds !== undefined) asked = Math.min(asked === undefined || asked <= now ? Number.POSITIVE_INFINITY : asked, now + seconds * 1000);
      else if (asked !== undefined && asked <= now) asked = undefined;
      // The FIFO queue drops a requeue whose deduplication id (its key and due time) it has seen.
      if (f.type === 'send' && ![...inFlight, ...delivered].some((m) => m.notBefore === f.message.notBefore)) inFlight.push(f.message);
      if (toMark !== undefined) mark = toMark;
    };
    for (const s of steps) {
      now += s.gapMs;
      const due = inFlight.filter((m) => (m.notBefore ?? 0) <= now).sort((a, b) => (a.notBefore ?? 0) - (b.notBefore ?? 0));
      if (s.kind === 'change') {
        reconcile(base, s.result);
      } else if (s.kind === 'deliver' && due.length > 0) {
        const m = due[0]!;
        inFlight.splice(inFlight.indexOf(m), 1);
        delivered.push(m);
        if (!isSupersededRequeue([m], object())) reconcile(m, s.result);
      } else if (s.kind === 'duplicate' && delivered.length > 0) {
        const m = delivered[delivered.length - 1]!;
        if (!isSupersededRequeue([m], object())) {
          // Only the marked requeue is ever reconciled twice, and only while it is still the mark.
          assert.equal(m.notBefore, mark);
          reconcile(m, s.result);
        }
      }
      const liveNow = inFlight.filter((m) => m.notBefore === mark);
      assert.ok(liveNow.length <= 1, `at most one live pending requeue (${liveNow.length})`);
      if (asked !== undefined && asked > now) {
        assert.equal(liveNow.length, 1, 'a requeue was asked for and is still to come: one is live');
        assert.ok((liveNow[0]!.notBefore ?? 0) <= asked + MARK_MARGIN_MS, 'the live requeue is due no later than asked (to within the clock margin)');
      }
    }
  }), fcParameters());
});
