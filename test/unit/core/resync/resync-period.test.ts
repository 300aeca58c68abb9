import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_RESYNC_SECONDS,
  resolveResyncPeriod,
  resyncScheduleExpression,
  resyncSchedules,
  scheduledKinds,
} from '../../../../src/core/resync/resync-period.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { done } from '../../../../src/core/controller/result.ts';
import type { ControllerSpec } from '../../../../src/core/controller/types.ts';

const spec: ControllerSpec = {
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  plural: 'memcacheds',
  namespaced: true,
  reconcile: async () => done(),
};

test('no declaration: the default period', () => {
  assert.equal(resolveResyncPeriod(undefined), DEFAULT_RESYNC_SECONDS);
  assert.equal(defineController(spec).resyncSeconds, DEFAULT_RESYNC_SECONDS);
});

test('a declared period is kept per controller', () => {
  assert.equal(defineController({ ...spec, resync: { everySeconds: 3600 } }).resyncSeconds, 3600);
  assert.equal(defineController({ ...spec, resync: { everySeconds: 60 } }).resyncSeconds, 60);
});

test('bad periods are refused with a message naming resync.everySeconds and the controller', () => {
  for (const everySeconds of [0, 30, 90, 59.5, -60, 8 * 24 * 3600, Number.NaN]) {
    assert.throws(() => defineController({ ...spec, resync: { everySeconds } }), /defineController\(Memcached\): resync\.everySeconds must be/);
  }
  assert.throws(() => resolveResyncPeriod({ everySeconds: '600' }), /resync\.everySeconds must be .*got "600"/);
  assert.throws(() => resolveResyncPeriod(600), /resync must be an object like \{ everySeconds: 600 \}/);
  assert.throws(() => resolveResyncPeriod(null), /resync must be an object/);
  assert.throws(() => resolveResyncPeriod({ everySeconds: 600, onError: 60 }), /unknown field\(s\) onError/);
});

test('the schedule expression of a period', () => {
  assert.equal(resyncScheduleExpression(60), 'rate(1 minute)');
  assert.equal(resyncScheduleExpression(600), 'rate(10 minutes)');
  assert.equal(resyncScheduleExpression(3600), 'rate(1 hour)');
  assert.equal(resyncScheduleExpression(7200), 'rate(2 hours)');
  assert.equal(resyncScheduleExpression(5400), 'rate(90 minutes)');
  assert.equal(resyncScheduleExpression(86400), 'rate(1 day)');
  assert.equal(resyncScheduleExpression(172800), 'rate(2 days)');
  assert.throws(() => resyncScheduleExpression(61), /resync\.everySeconds/);
});

test('scheduledKinds: the event names the kinds, or all are due; bad input is refused naming the field', () => {
  assert.deepEqual(scheduledKinds({}, ['A', 'B']), ['A', 'B']);
  assert.deepEqual(scheduledKinds(undefined, ['A', 'B']), ['A', 'B']);
  assert.deepEqual(scheduledKinds({ 'detail-type': 'Scheduled Event' }, ['A', 'B']), ['A', 'B']);
  assert.deepEqual(scheduledKinds({ kinds: ['B'] }, ['A', 'B']), ['B']);
  for (const kinds of [[], 'A', [1], null]) assert.throws(() => scheduledKinds({ kinds }, ['A']), /resync event's kinds must be a non-empty list/);
  assert.throws(() => scheduledKinds({ kinds: ['A', 'C'] }, ['A', 'B']), /kinds name C/);
});

test('resyncSchedules: one schedule event per distinct period, naming its kinds, shortest first', () => {
  assert.deepEqual(
    resyncSchedules([
      { kind: 'A', everySeconds: 3600 },
      { kind: 'B', everySeconds: 600 },
      { kind: 'C', everySeconds: 3600 },
    ]),
    [
      { rate: 'rate(10 minutes)', input: { kinds: ['B'] } },
      { rate: 'rate(1 hour)', input: { kinds: ['A', 'C'] } },
    ],
  );
  assert.deepEqual(resyncSchedules([]), []);
  assert.throws(() => resyncSchedules([{ kind: 'A', everySeconds: 10 }]), /resync\.everySeconds/);
});
