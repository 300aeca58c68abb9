import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../../support/fast-check.ts';
import { followUp, newMessage, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { REQUEUE_MARK_ANNOTATION, requeueMarkOf } from '../../../../src/contract/requeue-mark.ts';
import { decideFollowUp } from '../../../../src/core/reconcile/followup.ts';
import { resolveRetryPolicy } from '../../../../src/core/controller/retry-policy.ts';
import { done, requeueAfter } from '../../../../src/core/controller/result.ts';
import { isSupersededRequeue, MARK_MARGIN_MS, requeueStep } from '../../../../src/core/per-key/requeue-merge.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';

const NOW = 1_700_000_000_000;
const policy = resolveRetryPolicy({ baseSeconds: 1, capSeconds: 900, maxAttempts: 5 });
const base = newMessage({ cluster: 'c1', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'm', uid: 'u1' }, 'Modified', NOW - 5000);
const objectMarked = (mark?: number | string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'm', namespace: 'ns', uid: 'u1', ...(mark !== undefined ? { annotations: { other: 'x', [REQUEUE_MARK_ANNOTATION]: String(mark) } } : {}) },
});
const requeueIn = (seconds: number, message: ReconcileMessage = base, now = NOW) =>
  decideFollowUp({ message, ending: { type: 'result', result: requeueAfter(seconds) }, policy, now });
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
    decideFollowUp({ message: base, ending: { type: 'result', result: done() }, policy, now: NOW }),
    decideFollowUp({ message: base, ending: { type: 'error', error: new Error('x') }, policy, now: NOW, random: () => 0.5 }),
  ];
  for (const f of decided) assert.deepEqual(requeueStep(f, objectMarked(NOW + 60_000), NOW), { followUp: f });
});

test('a group is superseded only when it holds nothing but requeues due before the marked one', () => {
  const marked = objectMarked(NOW + 30_000);
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000)], marked), true);
  assert.equal(isSupersededRequeue([requeueMessage(NOW + 29_999)], marked), true, 'due before the mark: a later reconcile covered it');
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000), requeueMessage(NOW + 30_000)], marked), false, 'the marked one is in the group');
  assert.equal(
    isSupersededRequeue([requeueMessage(NOW + 40_000)], marked),
    false,
    'due after the mark: its own mark write failed (or a replaced earlier one left it), so it is reconciled',
  );
  assert.equal(
    isSupersededRequeue([followUp(base, { reason: 'Requeue', attempt: 0 })], marked),
    false,
    'a Requeue without a due time (a redriven one) is never dropped',
  );
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000), base], marked), false, 'a change of the object is in the group');
  assert.equal(isSupersededRequeue([followUp(base, { reason: 'Retry', attempt: 1, notBefore: NOW - 1 })], marked), false, 'retries are never replaced');
  assert.equal(isSupersededRequeue([requeueMessage(NOW - 1000)], objectMarked()), false, 'no mark: nothing is replaced');
  assert.equal(isSupersededRequeue([], marked), false);
  assert.equal(requeueMarkOf(marked), NOW + 30_000);
});

test("a tenant's mark: a value below the pending requeue supersedes nothing; a far one is written over by the next reconcile that asks for a requeue", () => {
  const pending = requeueMessage(NOW + 30_000);
  assert.equal(isSupersededRequeue([pending], objectMarked(1)), false, 'a tiny mark stops nothing');
  assert.equal(isSupersededRequeue([pending], objectMarked('999999999999999')), true, 'a huge one supersedes the pending requeue…');
  const step = requeueStep(requeueIn(30), objectMarked('999999999999999'), NOW);
  assert.ok(step.followUp.type === 'send', '…but merges nothing: the next reconcile (an event, the periodic Resync) sends a requeue');
  assert.equal(step.mark, NOW + 30_000, 'and writes its own mark over it');
});

/**
 * A model of one key in per-key mode: reconciles never overlap; each ends with done or
 * requeueAfter(d); changes of the object arrive at random times; SQS may deliver any requeue
 * twice; the FIFO queue drops a requeue of a due time it has seen (its deduplication id); a
 * mark write may fail (the requeue then stands unmarked, core/handler/key.ts). The real decisions
 * (`requeueStep`, `isSupersededRequeue`) run against a mark kept as the API server would. A
 * requeue in flight is *live* when it would be reconciled if delivered now. Properties:
 * whenever a reconcile asked for a requeue still to come, one is live — nothing is lost,
 * whatever mark writes failed — and, with no mark write failed, it is due no later than asked
 * (to within the clock margin); live requeues beyond the one a chain needs appear only when a
 * mark write fails or a requeue is sent due before a pending one (each such requeue then costs
 * at most one reconcile): never more than one plus the number of those events.
 */
test('model: nothing lost when marks fail, and no pile beyond one live requeue per failed mark or earlier replacement', () => {
  const step = fc.record({
    gapMs: fc.integer({ min: 0, max: 40_000 }),
    kind: fc.constantFrom('change', 'deliver', 'duplicate'),
    result: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
    markFails: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  });
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 80 }), (steps) => {
      let now = NOW;
      let mark: number | undefined;
      let asked: number | undefined; // due time the last reconcile asked for, undefined after done()
      let failedMarks = 0;
      let spawns = 0; // failed marks and earlier replacements: what may leave an extra live requeue
      const inFlight: ReconcileMessage[] = []; // requeues sent and not yet delivered
      const delivered: ReconcileMessage[] = []; // requeues delivered once (SQS may deliver again)
      const object = () => objectMarked(mark);
      const live = () => inFlight.filter((m) => !isSupersededRequeue([m], object()));
      // A requeue asked while a marked one is due earlier merges into it (nothing sent): that
      // requeue's reconcile, which runs after the ask and reads newer state, answers it — as
      // controller-runtime's AddAfter keeps only the earliest. Its answer (done) ends the ask.
      let mergedInto: number | undefined; // the marked due time the ask merged into
      let mergedAsk: number | undefined; // the ask it answers (another ask since is not answered by it)
      const reconcile = (message: ReconcileMessage, seconds: number | undefined, markFails: boolean) => {
        if (message.reason === 'Requeue' && message.notBefore === mergedInto && asked === mergedAsk) asked = undefined;
        const marked = mark;
        const decided = decideFollowUp({ message, ending: { type: 'result', result: seconds === undefined ? done() : requeueAfter(seconds) }, policy, now });
        const { followUp: f, mark: toMark } = requeueStep(decided, object(), now);
        if (seconds !== undefined) asked = Math.min(asked === undefined || asked <= now ? Number.POSITIVE_INFINITY : asked, now + seconds * 1000);
        else if (asked !== undefined && asked <= now) asked = undefined;
        if (f.type === 'none' && f.label === 'requeue_merged') {
          mergedInto = marked;
          mergedAsk = asked;
        }
        // The FIFO queue drops a requeue whose deduplication id (its key and due time) it has seen.
        if (f.type === 'send' && ![...inFlight, ...delivered].some((m) => m.notBefore === f.message.notBefore)) inFlight.push(f.message);
        if (toMark === undefined) return;
        if (markFails) {
          failedMarks++;
          spawns++;
          return;
        }
        if (live().some((m) => (m.notBefore ?? 0) > toMark)) spawns++;
        mark = toMark;
      };
      for (const s of steps) {
        now += s.gapMs;
        const due = inFlight.filter((m) => (m.notBefore ?? 0) <= now).sort((a, b) => (a.notBefore ?? 0) - (b.notBefore ?? 0));
        if (s.kind === 'change') {
          reconcile(base, s.result, s.markFails);
        } else if (s.kind === 'deliver' && due.length > 0) {
          const m = due[0]!;
          inFlight.splice(inFlight.indexOf(m), 1);
          delivered.push(m);
          if (!isSupersededRequeue([m], object())) reconcile(m, s.result, s.markFails);
        } else if (s.kind === 'duplicate' && delivered.length > 0) {
          const m = delivered[delivered.length - 1]!;
          if (!isSupersededRequeue([m], object())) reconcile(m, s.result, s.markFails);
        }
        const liveNow = live();
        assert.ok(liveNow.length <= 1 + spawns, `live requeues (${liveNow.length}) beyond one per failed mark or earlier replacement (${spawns})`);
        if (asked !== undefined && asked > now) {
          assert.ok(liveNow.length >= 1, 'a requeue was asked for and is still to come: one is live');
          if (failedMarks === 0) {
            assert.ok(
              liveNow.some((m) => (m.notBefore ?? 0) <= asked! + MARK_MARGIN_MS),
              'a live requeue is due no later than asked (to within the clock margin)',
            );
          }
        }
      }
    }),
    fcParameters(),
  );
});
