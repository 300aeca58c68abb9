/** The backlog estimate and the coalescing window it implies (src/forwarder/coalesce/backlog.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BacklogEstimator, coalescingWindowMs } from '../../../src/forwarder/coalesce/backlog.ts';
import { Coalescer } from '../../../src/forwarder/coalesce/coalescer.ts';
import { newMessage } from '../../../src/contract/message.ts';

const sample = (at: number, visible: number, sentTotal: number, inFlight = 0, delayed = 0) => ({ at, visible, inFlight, delayed, sentTotal });

test('no samples, one sample, or an empty queue: no backlog', () => {
  const b = new BacklogEstimator();
  assert.equal(b.waitMs(0), 0);
  b.observe(sample(0, 500, 0));
  assert.equal(b.waitMs(0), 0, 'one sample gives no drain rate yet');
  b.observe(sample(2000, 0, 600));
  assert.equal(b.waitMs(2000), 0, 'nothing visible');
});

test('the wait is what is visible over what drained: sent minus the growth of the queue', () => {
  const b = new BacklogEstimator({ smoothing: 1, staleAfterMs: 10_000 });
  b.observe(sample(0, 1000, 0, 10));
  // 2 s later: 200 more were sent, the queue shrank by 100 → 300 left it: 0.15 per ms.
  b.observe(sample(2000, 900, 200, 10));
  assert.equal(b.waitMs(2000), 900 / 0.15);
  // In flight and delayed messages are still in the queue: moving between counts is not a drain.
  b.observe(sample(4000, 800, 200, 110));
  assert.equal(b.waitMs(4000), Number.POSITIVE_INFINITY, 'nothing left the queue: it does not drain');
});

test('the drain rate is smoothed; a stale estimate counts as no backlog; reset forgets', () => {
  const b = new BacklogEstimator({ smoothing: 0.5, staleAfterMs: 5000 });
  b.observe(sample(0, 100, 0));
  b.observe(sample(1000, 100, 100)); // 0.1 per ms
  b.observe(sample(2000, 100, 300)); // 0.2 per ms → smoothed 0.15
  assert.ok(Math.abs(b.waitMs(2000) - 100 / 0.15) < 1e-6);
  assert.equal(b.waitMs(7001), 0, 'no sample for longer than staleAfterMs');
  b.reset();
  assert.equal(b.waitMs(2000), 0);
});

test('other producers only make the drain look slower (a longer window), never negative', () => {
  const b = new BacklogEstimator({ smoothing: 1, staleAfterMs: 10_000 });
  b.observe(sample(0, 100, 0));
  b.observe(sample(1000, 400, 0)); // someone else added 300, we sent none
  assert.equal(b.waitMs(1000), Number.POSITIVE_INFINITY);
});

test('the window is the configured one, widened to the wait, capped', () => {
  assert.equal(coalescingWindowMs(500, 30_000, 0), 500);
  assert.equal(coalescingWindowMs(500, 30_000, 200), 500, 'never below the configured window');
  assert.equal(coalescingWindowMs(500, 30_000, 12_000), 12_000);
  assert.equal(coalescingWindowMs(500, 30_000, Number.POSITIVE_INFINITY), 30_000);
  assert.equal(coalescingWindowMs(500, 500, 12_000), 500, 'max = configured: widening off');
});

test('the coalescer opens each window with the length of the moment; nothing is dropped', () => {
  let windowMs = 500;
  const c = new Coalescer(() => windowMs);
  const m = (reason: 'Owned' | 'Modified') => newMessage({ cluster: 'c', apiVersion: 'v1', kind: 'K', namespace: 'n', name: 'a' }, reason, 0);
  assert.ok(c.offer(m('Owned'), 0).send, 'leading edge');
  assert.equal(c.offer(m('Owned'), 100).heldUntil, 500);
  assert.equal(c.takeDue(500).length, 1, 'trailing after the 500 ms window');
  windowMs = 20_000; // a backlog appeared
  assert.equal(c.offer(m('Owned'), 600).heldUntil, 1000, 'the open window keeps the length it was opened with');
  assert.equal(c.takeDue(1000).length, 1);
  assert.equal(c.offer(m('Owned'), 1100).heldUntil, 21_000, 'the window opened at 1000 took the new length');
  assert.deepEqual(c.takeDue(5000), [], 'held, not dropped');
  assert.equal(c.takeDue(21_000).length, 1);
});

test('when the backlog clears, open windows are cut to the new length (not before now) and report the earliest due', () => {
  const c = new Coalescer(() => 20_000);
  const m = (name: string) => newMessage({ cluster: 'c', apiVersion: 'v1', kind: 'K', namespace: 'n', name }, 'Owned', 0);
  c.offer(m('a'), 0);
  c.offer(m('a'), 100); // held until 20 000
  c.offer(m('b'), 5000);
  c.offer(m('b'), 5100); // held until 25 000
  c.offer(m('idle'), 0); // open, nothing held
  assert.equal(c.shortenTo(500, 6000), 6000, 'a window older than 500 ms ends now');
  assert.equal(c.nextDueAt(), 6000);
  assert.equal(c.takeDue(6000).length, 2, 'both held messages are due; nothing dropped');
  assert.equal(c.shortenTo(30_000, 7000), undefined, 'a longer length never extends a window');
  const d = new Coalescer(() => 20_000);
  d.offer(m('a'), 0);
  d.offer(m('a'), 10);
  assert.equal(d.shortenTo(8000, 1000), 8000, 'cut to its opening + the new length');
  assert.deepEqual(d.takeDue(7999), []);
  assert.equal(d.takeDue(8000).length, 1);
});

test('a sample with counts that are not finite numbers ≥ 0 is ignored: the window stays a finite number within its bounds', () => {
  const b = new BacklogEstimator();
  b.observe({ at: 0, visible: 100, inFlight: 0, delayed: 0, sentTotal: 0 });
  b.observe({ at: 1000, visible: 90, inFlight: 0, delayed: 0, sentTotal: 0 });
  const before = b.waitMs(1000);
  for (const garbage of [Number.NaN, -1, Number.POSITIVE_INFINITY, undefined as unknown as number]) {
    b.observe({ at: 2000, visible: garbage, inFlight: 0, delayed: 0, sentTotal: 10 });
    assert.equal(b.waitMs(1000), before);
  }
  assert.equal(coalescingWindowMs(500, 30_000, Number.NaN), 500);
  assert.equal(coalescingWindowMs(500, 30_000, Number.POSITIVE_INFINITY), 30_000);
});
