/**
 * Per-object timers, the pure part (core/controller/timer.ts): validation naming the field, which chains a
 * reconcile starts, what a due tick does (run, superseded, the next due time without drift),
 * ticks grouped apart from the object's other messages, and the forwarder ignoring timer marks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSRecord } from 'aws-lambda';
import { decodeMessage, encodeMessage, newMessage } from '../../../../src/contract/message.ts';
import { REQUEUE_MARK_ANNOTATION, withoutRuntimeMarks } from '../../../../src/contract/requeue-mark.ts';
import { timerMarkAnnotation, timerMarkOf } from '../../../../src/contract/timer-mark.ts';
import { groupBatch } from '../../../../src/core/reconcile/batch.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { done } from '../../../../src/core/controller/result.ts';
import { nextTickDue, resolveTimers, TIMER_LATE_MS, tickDue, tickMessage, tickStep, timersToStart } from '../../../../src/core/controller/timer.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';

const KIND = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true } as const;
const run = async () => {};
const withMark = (mark?: number, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'a',
    namespace: 'n',
    uid: 'u1',
    ...(mark === undefined ? {} : { annotations: { [timerMarkAnnotation('health')]: String(mark) } }),
    ...extra,
  },
});

test('defineController validates timers, naming the field', () => {
  const define = (timers: unknown) => defineController({ ...KIND, reconcile: async () => done(), timers: timers as never });
  assert.deepEqual(define(undefined).timers, []);
  assert.equal(define([{ name: 'health', everySeconds: 300, run }]).timers[0]?.name, 'health');
  const cases: [unknown, RegExp][] = [
    [{}, /timers must be a list/],
    [[null], /timers\[0\] must be \{ name, everySeconds, run \}/],
    [[{ name: 'Health', everySeconds: 300, run }], /timers\[0\]\.name must be a DNS-1123 label/],
    [
      [
        { name: 'h', everySeconds: 300, run },
        { name: 'h', everySeconds: 60, run },
      ],
      /timers\[1\]\.name "h" is declared twice/,
    ],
    [[{ name: 'h', everySeconds: 0.5, run }], /timers\[0\]\.everySeconds must be a whole number of seconds from 1 to 604800, got 0.5/],
    [[{ name: 'h', everySeconds: 604801, run }], /timers\[0\]\.everySeconds/],
    [[{ name: 'h', everySeconds: '300', run }], /timers\[0\]\.everySeconds .* got "300"/],
    [[{ name: 'h', everySeconds: 300 }], /timers\[0\]\.run\(object, ctx\) must be a function/],
    [[{ name: 'h', everySeconds: 300, run, every: 5 }], /timers\[0\] has unknown field\(s\) every/],
  ];
  for (const [timers, error] of cases) {
    assert.throws(
      () => define(timers),
      (err: Error) => err instanceof TypeError && err.message.startsWith('defineController(ConfigMap): ') && error.test(err.message),
      JSON.stringify(timers),
    );
  }
  assert.equal(resolveTimers(undefined).length, 0);
});

test('a reconcile starts the chains whose mark is absent or more than TIMER_LATE_MS late, never on a deleting object', () => {
  const timers = [{ name: 'health', everySeconds: 300 }];
  const now = 1_000_000;
  assert.deepEqual(timersToStart(timers, withMark(), now), ['health']);
  assert.deepEqual(timersToStart(timers, withMark(now + 5000), now), [], 'a chain is pending: an event does not start another');
  assert.deepEqual(timersToStart(timers, withMark(now - TIMER_LATE_MS), now), [], 'a tick late by the margin is still alive');
  assert.deepEqual(timersToStart(timers, withMark(now - TIMER_LATE_MS - 1), now), ['health'], 'a chain lost with its message is started again');
  assert.deepEqual(timersToStart(timers, withMark(undefined, { deletionTimestamp: '2026-01-01T00:00:00Z' }), now), []);
  assert.deepEqual(timersToStart([], withMark(), now), [], 'no timers: nothing');
  assert.deepEqual(timersToStart(timers, withMark(now + 300_000 + TIMER_LATE_MS), now), [], "a mark a period (and the margin) ahead is a chain's");
  assert.deepEqual(
    timersToStart(timers, withMark(now + 300_000 + TIMER_LATE_MS + 1), now),
    ['health'],
    "a mark no chain could have written (a tenant's edit) is ignored",
  );
});

test('a due tick runs and schedules the next one a period after its own due time; one due before the mark is superseded', () => {
  const due = 10_000;
  assert.deepEqual(tickStep(due, withMark(), 'health', 5, due + 300), { type: 'run', next: 15_000 }, 'no drift: from the due time, not from now');
  assert.deepEqual(tickStep(due, withMark(due), 'health', 5, due + 300), { type: 'run', next: 15_000 }, 'the marked tick itself runs');
  assert.deepEqual(tickStep(due, withMark(due + 1), 'health', 5, due + 300), { type: 'superseded', mark: due + 1 });
  assert.deepEqual(tickStep(due, withMark(due - 5000), 'health', 5, due), { type: 'run', next: 15_000 }, 'an older mark (its write failed) holds nothing back');
  assert.deepEqual(
    tickStep(due, withMark(due + 10 * 365 * 86_400_000), 'health', 5, due),
    { type: 'run', next: 15_000 },
    'a forged mark years ahead supersedes nothing',
  );
  assert.equal(nextTickDue(due, 5, due + 60_000), due + 65_000, 'more than a period late: the missed runs are skipped');
  assert.equal(nextTickDue(due, 5, due + 4999), due + 5000);
});

test('a tick is a Requeue naming its timer, due at notBefore, and round-trips the contract', () => {
  const tick = tickMessage({ cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'n', name: 'a', uid: 'u1' }, 'health', 123_456);
  const decoded = decodeMessage(encodeMessage(tick), { now: 123_000 });
  assert.ok(decoded.ok);
  assert.deepEqual(decoded.message, tick);
  assert.equal(tick.reason, 'Requeue');
  assert.equal(tickDue(tick), 123_456);
  assert.equal(tickDue({ observedAt: 7 }), 7);
  const bad = decodeMessage(JSON.stringify({ ...tick, timer: 'Not A Label' }), { now: 123_000 });
  assert.ok(!bad.ok && /timer/.test(bad.error), 'a timer that is not a DNS-1123 label is an invalid message naming the field');
});

test("ticks are grouped apart from the object's other messages, one group per timer", () => {
  const now = 2_000_000;
  const ref = { cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'n', name: 'a', uid: 'u1' };
  const record = (body: string, i: number) => ({ messageId: `m${i}`, body, attributes: {} }) as unknown as SQSRecord;
  const bodies = [
    encodeMessage(newMessage(ref, 'Modified', now)),
    encodeMessage(tickMessage(ref, 'health', now - 10)),
    encodeMessage(tickMessage(ref, 'health', now - 5)),
    encodeMessage(tickMessage(ref, 'backup', now - 5)),
  ];
  const { groups } = groupBatch(bodies.map(record), now);
  assert.equal(groups.length, 3);
  const reconcile = groups.find((g) => g.message.timer === undefined);
  assert.equal(reconcile?.records.length, 1, 'the event is reconciled on its own');
  const health = groups.find((g) => g.message.timer === 'health');
  assert.equal(health?.records.length, 2);
  assert.equal(health?.message.notBefore, now - 5, 'the latest due tick stands for its duplicates');
});

test("the forwarder compares annotations without the runtime's marks (requeue and timers)", () => {
  const annotations = { keep: 'x', [REQUEUE_MARK_ANNOTATION]: '1', [timerMarkAnnotation('health')]: '2' };
  assert.deepEqual(withoutRuntimeMarks(annotations), { keep: 'x' });
  const plain = { keep: 'x' };
  assert.equal(withoutRuntimeMarks(plain), plain);
  assert.equal(withoutRuntimeMarks(undefined), undefined);
  assert.equal(timerMarkOf(withMark(42), 'health'), 42);
  assert.equal(timerMarkOf({ metadata: { annotations: { [timerMarkAnnotation('health')]: 'soon' } } }, 'health'), undefined);
});
