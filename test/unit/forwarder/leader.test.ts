import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Lease } from '../../../src/kube/lease.ts';
import { microTime } from '../../../src/kube/time.ts';
import { leaseDecision, mustStepDown } from '../../../src/forwarder/control/leader.ts';

const lease = (holder: string | undefined, renewTime = '2026-01-01T00:00:00.000000Z', duration = 15): Lease => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'l', namespace: 'ns', resourceVersion: '1' },
  spec: { ...(holder !== undefined ? { holderIdentity: holder } : {}), renewTime, leaseDurationSeconds: duration, leaseTransitions: 0 },
});
const base = { identity: 'me', defaultLeaseDurationMs: 15_000 };

test('no lease: create it; our lease: renew; released lease: acquire at once', () => {
  assert.equal(leaseDecision({ ...base, lease: undefined, now: 0, observation: undefined }).action, 'create');
  assert.equal(leaseDecision({ ...base, lease: lease('me'), now: 0, observation: undefined }).action, 'renew');
  assert.equal(leaseDecision({ ...base, lease: lease(undefined), now: 0, observation: undefined }).action, 'acquire');
  assert.equal(leaseDecision({ ...base, lease: lease(''), now: 0, observation: undefined }).action, 'acquire');
});

test('another holder: wait until the same record was seen unchanged for a full lease duration (own clock)', () => {
  const held = lease('other');
  const first = leaseDecision({ ...base, lease: held, now: 1_000, observation: undefined });
  assert.equal(first.action, 'wait');
  assert.ok(first.action === 'wait');
  assert.equal(first.observation.at, 1_000);
  const early = leaseDecision({ ...base, lease: held, now: 15_999, observation: first.observation });
  assert.equal(early.action, 'wait');
  assert.equal(leaseDecision({ ...base, lease: held, now: 16_000, observation: first.observation }).action, 'acquire');
});

test('a renewal by the holder restarts the wait', () => {
  const first = leaseDecision({ ...base, lease: lease('other'), now: 0, observation: undefined });
  assert.ok(first.action === 'wait');
  const renewed = leaseDecision({ ...base, lease: lease('other', '2026-01-01T00:00:10.000000Z'), now: 20_000, observation: first.observation });
  assert.ok(renewed.action === 'wait');
  assert.equal(renewed.observation.at, 20_000);
});

test('the lease duration written in the lease wins over our default', () => {
  const first = leaseDecision({ ...base, lease: lease('other', undefined, 3), now: 0, observation: undefined });
  assert.ok(first.action === 'wait');
  assert.equal(leaseDecision({ ...base, lease: lease('other', undefined, 3), now: 3_000, observation: first.observation }).action, 'acquire');
});

test('a leader steps down once renewals failed for the renew deadline', () => {
  assert.equal(mustStepDown(0, 9_999, 10_000), false);
  assert.equal(mustStepDown(0, 10_000, 10_000), true);
});

test('microTime has exactly six fractional digits', () => {
  assert.equal(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 67)), '2026-01-02T03:04:05.067000Z');
});
