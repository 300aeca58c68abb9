/** What a Memcached reconcile touches beyond its two reads (src/memcached/plan.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REASONS } from '../../../src/contract/message.ts';
import { podListingFrom, podsNeedListing, serviceCheck } from '../../../src/memcached/plan.ts';
import { deployment, memcached, settledStatus } from './fixtures.ts';

const live = { ...deployment(3, settledStatus(3)), metadata: { name: 'cache', namespace: 'shop', generation: 1, resourceVersion: '42' } };

test('serviceCheck: spec changes, retries, recreations and the periodic resync check the Service; a bare Requeue does not', () => {
  for (const reason of ['Added', 'Modified', 'Retry', 'Deleted'] as const) {
    assert.equal(serviceCheck({ reason }, live, false), 'spec-or-retry', reason);
  }
  assert.equal(serviceCheck({ reason: 'Requeue' }, live, false), undefined);
  assert.equal(serviceCheck({ reason: 'Resync', resourceVersion: '5' }, live, false), 'resync', 'the safety net checks every child');
});

test("serviceCheck: an Owned event is the Deployment's own only when it names the live Deployment version", () => {
  assert.equal(serviceCheck({ reason: 'Owned', resourceVersion: '42' }, live, false), undefined);
  assert.equal(serviceCheck({ reason: 'Owned', resourceVersion: '43' }, live, false), 'owned-event', 'a Service event (or a newer Deployment)');
  assert.equal(serviceCheck({ reason: 'Owned' }, live, false), 'owned-event', 'no version: cannot tell, check');
  assert.equal(serviceCheck({ reason: 'Owned', resourceVersion: '42' }, undefined, false), 'owned-event');
});

test("serviceCheck: an Owned message naming its children's kinds checks the Service only when it names Service, whatever the versions", () => {
  assert.equal(
    serviceCheck({ reason: 'Owned', ownedKinds: ['Deployment'], resourceVersion: '43' }, live, false),
    undefined,
    'a Deployment event that the live Deployment has moved past',
  );
  assert.equal(serviceCheck({ reason: 'Owned', ownedKinds: ['Deployment'] }, live, false), undefined, 'merged Deployment events');
  assert.equal(serviceCheck({ reason: 'Owned', ownedKinds: ['Service'], resourceVersion: '42' }, live, false), 'owned-event');
  assert.equal(serviceCheck({ reason: 'Owned', ownedKinds: ['Deployment', 'Service'] }, live, false), 'owned-event');
  assert.equal(serviceCheck({ reason: 'Owned', ownedKinds: ['Deployment'] }, live, true), 'deployment-applied');
});

test('serviceCheck: whenever the Deployment had to be applied, the Service is checked too, for every reason', () => {
  for (const reason of REASONS) assert.equal(serviceCheck({ reason, resourceVersion: '42' }, live, true), 'deployment-applied', reason);
});

test('podsNeedListing: only when the Deployment version or the generation moved since the status was written', () => {
  const recorded = { nodes: ['a', 'b', 'c'], readyReplicas: 3, observedGeneration: 2, deploymentResourceVersion: '42' };
  assert.equal(podsNeedListing(memcached({}, { status: recorded }), live), false);
  assert.equal(podsNeedListing(memcached({}, { status: { ...recorded, deploymentResourceVersion: '41' } }), live), true, 'the Deployment changed');
  assert.equal(podsNeedListing(memcached({}, { status: { ...recorded, observedGeneration: 1 } }), live), true, 'new spec');
  assert.equal(podsNeedListing(memcached(), live), true, 'no status yet');
  const { deploymentResourceVersion: _, ...older } = recorded;
  assert.equal(podsNeedListing(memcached({}, { status: older }), live), true, 'a status written before versions were recorded');
});

test('podsNeedListing: not before the Deployment controller has observed the Deployment, while the status records no nodes', () => {
  const created = { ...deployment(3, {}), metadata: { name: 'cache', namespace: 'shop', generation: 1, resourceVersion: '50' } };
  assert.equal(podsNeedListing(memcached(), created), false, 'first reconcile, the Deployment just created: no ReplicaSet, no pods');
  assert.equal(
    podsNeedListing(memcached({}, { status: { nodes: [], readyReplicas: 0, observedGeneration: 1, deploymentResourceVersion: '49' } }), created),
    false,
    'a new spec before the first sync',
  );
  assert.equal(podsNeedListing(memcached(), { ...created, status: undefined }), false, 'no status at all');
  assert.equal(
    podsNeedListing(memcached({}, { status: { nodes: ['a'], readyReplicas: 1, observedGeneration: 2, deploymentResourceVersion: '42' } }), created),
    true,
    'nodes recorded (a Deployment recreated over running pods): listed',
  );
  assert.equal(
    podsNeedListing(memcached({}, { status: { nodes: [], readyReplicas: 1, observedGeneration: 2, deploymentResourceVersion: '42' } }), created),
    true,
    'a ready count recorded: listed',
  );
  const synced = { ...created, status: { observedGeneration: 1 }, metadata: { ...created.metadata, resourceVersion: '51' } };
  assert.equal(
    podsNeedListing(memcached({}, { status: { nodes: [], readyReplicas: 0, observedGeneration: 2, deploymentResourceVersion: '50' } }), synced),
    true,
    'its first sync moved the version: listed',
  );
  assert.equal(podsNeedListing(memcached(), created, 'every-change'), true, 'the earlier rule lists');
});

test('podListingFrom: unset or empty is the default, the two names are taken, anything else is refused naming the variable', () => {
  assert.equal(podListingFrom(undefined), 'skip-unobserved');
  assert.equal(podListingFrom(''), 'skip-unobserved');
  assert.equal(podListingFrom('every-change'), 'every-change');
  assert.equal(podListingFrom('skip-unobserved'), 'skip-unobserved');
  assert.throws(() => podListingFrom('always'), /OPERLESS_MEMCACHED_POD_LISTING: "always" is not a pod listing; choose from skip-unobserved, every-change/);
});
