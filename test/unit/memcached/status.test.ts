import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deploymentSettled, invalidSpecStatus, observe, transitioned } from '../../../src/memcached/status.ts';
import type { Condition } from '../../../src/kube/types.ts';
import { deployment, memcached, pod, settledStatus } from './fixtures.ts';

const T0 = new Date('2026-11-01T10:00:00Z');
const T1 = new Date('2026-11-01T10:05:00Z');
const byType = (conditions: Condition[]) => Object.fromEntries(conditions.map((c) => [c.type, c]));

test('all nodes ready and the Deployment rolled out: Available, not Progressing, not Degraded, settled', () => {
  const pods = [pod('cache-c'), pod('cache-a'), pod('cache-b')];
  const o = observe(memcached(), deployment(3, settledStatus(3)), pods, T0);
  assert.deepEqual(o.status.nodes, ['cache-a', 'cache-b', 'cache-c'], 'sorted pod names');
  assert.equal(o.status.readyReplicas, 3);
  assert.equal(o.status.observedGeneration, 2);
  assert.equal(o.settled, true);
  const c = byType(o.status.conditions);
  assert.equal(c.Available?.status, 'True');
  assert.equal(c.Progressing?.status, 'False');
  assert.equal(c.Degraded?.status, 'False');
  for (const condition of o.status.conditions) {
    assert.equal(condition.observedGeneration, 2);
    assert.equal(condition.lastTransitionTime, '2026-11-01T10:00:00Z');
  }
  assert.deepEqual(
    o.status.conditions.map((x) => x.type),
    ['Available', 'Progressing', 'Degraded'],
  );
});

test('scaling up: not Available, Progressing ScalingUp, not settled', () => {
  const o = observe(memcached(), deployment(3, settledStatus(1)), [pod('cache-a')], T0);
  const c = byType(o.status.conditions);
  assert.equal(o.settled, false);
  assert.equal(c.Available?.status, 'False');
  assert.equal(c.Available?.message, '1 of 3 nodes ready');
  assert.equal(c.Progressing?.reason, 'ScalingUp');
});

test('terminating and finished pods are not nodes; unready pods are nodes but not ready', () => {
  const pods = [pod('a'), pod('b', { ready: false }), pod('c', { deleting: true }), pod('d', { phase: 'Failed' })];
  const o = observe(memcached({ size: 2 }), undefined, pods, T0);
  assert.deepEqual(o.status.nodes, ['a', 'b']);
  assert.equal(o.status.readyReplicas, 1);
  assert.equal(byType(o.status.conditions).Progressing?.reason, 'WaitingForReady');
});

test('scaling down: extra pods mean Progressing ScalingDown', () => {
  const o = observe(memcached({ size: 1 }), deployment(1, settledStatus(1), 2), [pod('a'), pod('b')], T0);
  assert.equal(byType(o.status.conditions).Progressing?.reason, 'ScalingDown');
  assert.equal(o.settled, false);
});

test('pods match but the Deployment has not observed the new generation: still progressing', () => {
  const o = observe(memcached({ size: 1 }), deployment(1, settledStatus(1), 2), [pod('a')], T0);
  assert.equal(o.settled, false);
  assert.equal(byType(o.status.conditions).Progressing?.reason, 'RollingUpdate');
  assert.equal(deploymentSettled(deployment(1, settledStatus(1), 1), 1), true);
  assert.equal(deploymentSettled(deployment(1, {}, 1), 1), undefined, 'no Deployment status yet: pods decide');
});

test('size 0: Available (ScaledToZero) and settled once the pods are gone', () => {
  const o = observe(memcached({ size: 0 }), deployment(0, settledStatus(0)), [], T0);
  assert.equal(o.settled, true);
  assert.equal(byType(o.status.conditions).Available?.reason, 'ScaledToZero');
});

test('a stuck Deployment makes the Memcached Degraded with the Deployment message', () => {
  const d = deployment(3, {
    ...settledStatus(1),
    conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "x" has timed out progressing.' }],
  });
  const o = observe(memcached(), d, [pod('a')], T0);
  assert.equal(o.degraded?.reason, 'ProgressDeadlineExceeded');
  assert.equal(byType(o.status.conditions).Degraded?.status, 'True');
  assert.match(byType(o.status.conditions).Degraded?.message ?? '', /timed out progressing/);
  const quota = deployment(3, {
    ...settledStatus(0),
    conditions: [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'exceeded quota' }],
  });
  assert.equal(observe(memcached(), quota, [], T0).degraded?.reason, 'ReplicaFailure');
});

test('lastTransitionTime changes only when a condition status changes', () => {
  const first = observe(memcached(), deployment(3, settledStatus(3)), [pod('a'), pod('b'), pod('c')], T0);
  const mc = memcached({}, { status: first.status });
  const same = observe(mc, deployment(3, settledStatus(3)), [pod('a'), pod('b'), pod('c')], T1);
  assert.deepEqual(same.status, first.status, 'nothing changed: identical status, so no write');
  const worse = observe(mc, deployment(3, settledStatus(3)), [pod('a'), pod('b'), pod('c', { ready: false })], T1);
  const c = byType(worse.status.conditions);
  assert.equal(c.Available?.lastTransitionTime, '2026-11-01T10:05:00Z');
  assert.equal(c.Degraded?.lastTransitionTime, '2026-11-01T10:00:00Z');
  assert.equal(transitioned(first.status.conditions, worse.status.conditions, 'Available')?.status, 'False');
  assert.equal(transitioned(first.status.conditions, worse.status.conditions, 'Degraded'), undefined);
});

test('invalid spec: Degraded=True with the reason, other status kept', () => {
  const before = observe(memcached(), deployment(3, settledStatus(3)), [pod('a'), pod('b'), pod('c')], T0).status;
  const s = invalidSpecStatus(memcached({}, { status: before }), { reason: 'MemoryLimitTooSmall', message: 'too small' }, T1);
  const c = byType(s.conditions);
  assert.equal(c.Degraded?.status, 'True');
  assert.equal(c.Degraded?.reason, 'MemoryLimitTooSmall');
  assert.equal(c.Available?.status, 'True');
  assert.deepEqual(s.nodes, before.nodes);
});
