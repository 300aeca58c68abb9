import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ownerRequest, resyncRequests, route, type ResolvedWatch } from '../../../src/forwarder/router.ts';
import { snapshotOf, type ObjectSnapshot } from '../../../src/forwarder/snapshot.ts';
import { DEFAULT_OWNED_TRIGGERS, DEFAULT_PRIMARY_TRIGGERS } from '../../../src/forwarder/config.ts';

const gadget: ResolvedWatch = { role: 'primary', apiVersion: 'example.com/v1', kind: 'Gadget', group: 'example.com', plural: 'gadgets', namespaced: true, namespaces: [], triggers: DEFAULT_PRIMARY_TRIGGERS };
const cluster: ResolvedWatch = { role: 'primary', apiVersion: 'example.com/v1', kind: 'Fleet', group: 'example.com', plural: 'fleets', namespaced: false, namespaces: [], triggers: DEFAULT_PRIMARY_TRIGGERS };
const deployments: ResolvedWatch = { role: 'owned', apiVersion: 'apps/v1', kind: 'Deployment', group: 'apps', plural: 'deployments', namespaced: true, namespaces: [], triggers: DEFAULT_OWNED_TRIGGERS };
const primaries = [gadget, cluster];

function snap(meta: Record<string, unknown>, rest: Record<string, unknown> = {}): ObjectSnapshot {
  return snapshotOf({ metadata: { uid: 'c1', name: 'child', namespace: 'ns', resourceVersion: '5', generation: 1, ...meta }, ...rest })!;
}
const controlledBy = (name: string, uid: string, kind = 'Gadget', apiVersion = 'example.com/v1beta1') =>
  ({ ownerReferences: [{ apiVersion, kind, name, uid, controller: true }] });

test('primary ADDED/MODIFIED/DELETED become Added/Modified/Deleted for the object itself', () => {
  const s = snap({ name: 'g', uid: 'g1' });
  const changed = snap({ name: 'g', uid: 'g1', resourceVersion: '6', generation: 2 });
  assert.deepEqual(route('c', gadget, { type: 'ADDED', current: s }, primaries), [{
    ref: { cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name: 'g' }, uid: 'g1', resourceVersion: '5', reason: 'Added',
  }]);
  assert.equal(route('c', gadget, { type: 'MODIFIED', old: s, current: changed }, primaries)[0]?.reason, 'Modified');
  assert.equal(route('c', gadget, { type: 'DELETED', old: s, current: s }, primaries)[0]?.reason, 'Deleted');
});

test('a status-only primary update routes to nothing', () => {
  const s = snap({ name: 'g' }, { status: { a: 1 } });
  const after = snap({ name: 'g', resourceVersion: '6' }, { status: { a: 2 } });
  assert.deepEqual(route('c', gadget, { type: 'MODIFIED', old: s, current: after }, primaries), []);
});

test('an owned object maps through its controller reference to the owner key (any version of the group)', () => {
  const child = snap(controlledBy('g', 'g1'));
  const out = route('c', deployments, { type: 'ADDED', current: child }, primaries);
  assert.deepEqual(out, [{
    ref: { cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name: 'g' }, uid: 'g1', resourceVersion: '5', reason: 'Owned',
  }]);
  assert.equal(route('c', deployments, { type: 'DELETED', old: child, current: child }, primaries)[0]?.reason, 'Owned');
});

test('owned status changes are forwarded', () => {
  const before = snap(controlledBy('g', 'g1'), { status: { readyReplicas: 0 } });
  const after = snap({ ...controlledBy('g', 'g1'), resourceVersion: '6' }, { status: { readyReplicas: 1 } });
  assert.equal(route('c', deployments, { type: 'MODIFIED', old: before, current: after }, primaries).length, 1);
});

test('an owned object\'s creation by its controller (one writer) is not forwarded; its later changes, deletion and objects others wrote are', () => {
  const apply = (manager: string, subresource?: string) => ({ manager, operation: subresource ? 'Update' : 'Apply', ...(subresource ? { subresource } : {}) });
  const created = snap({ ...controlledBy('g', 'g1'), managedFields: [apply('operless-memcached')] });
  assert.deepEqual(route('c', deployments, { type: 'ADDED', current: created }, primaries), [], 'the echo of the reconcile\'s own create');
  const statusWritten = snap({ ...controlledBy('g', 'g1'), resourceVersion: '6', managedFields: [apply('operless-memcached'), apply('kube-controller-manager', 'status')] }, { status: { replicas: 1 } });
  assert.equal(route('c', deployments, { type: 'MODIFIED', old: created, current: statusWritten }, primaries).length, 1, 'its controllers\' status writes are forwarded');
  assert.equal(route('c', deployments, { type: 'ADDED', current: statusWritten }, primaries).length, 1, 'first seen (a relist) after others wrote it: forwarded');
  assert.equal(route('c', deployments, { type: 'DELETED', old: created, current: created }, primaries).length, 1, 'its deletion is forwarded');
  assert.equal(route('c', deployments, { type: 'ADDED', current: snap(controlledBy('g', 'g1')) }, primaries).length, 1, 'served without managedFields: forwarded');
  const byKubectl = snap({ ...controlledBy('g', 'g1'), managedFields: [{ manager: 'kubectl-create', operation: 'Update' }] });
  assert.equal(route('c', deployments, { type: 'ADDED', current: byKubectl }, primaries).length, 1, 'created by someone else with the controller reference: forwarded');
  assert.equal(route('c', deployments, { type: 'ADDED', current: snap({ ...controlledBy('g', 'g1'), managedFields: [apply('operless')] }) }, primaries).length, 1, 'not a function\'s field manager (operless-<kind>)');
  assert.equal(route('c', deployments, { type: 'ADDED', current: snap({ ...controlledBy('g', 'g1'), managedFields: [{ manager: 'operless-cli', operation: 'Update' }] }) }, primaries).length, 1, 'a plain create by an Operless tool, not an apply by a function');
  assert.equal(route('c', gadget, { type: 'ADDED', current: snap({ name: 'g', uid: 'g1', managedFields: [apply('kubectl')] }) }, primaries)[0]?.reason, 'Added', 'a primary\'s creation is always forwarded');
});

test('a non-controller owner, an unwatched owner kind or no owner yields nothing', () => {
  const notController = snap({ ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Gadget', name: 'g', uid: 'g1' }] });
  assert.deepEqual(route('c', deployments, { type: 'ADDED', current: notController }, primaries), []);
  const otherKind = snap(controlledBy('rs', 'r1', 'ReplicaSet', 'apps/v1'));
  assert.deepEqual(route('c', deployments, { type: 'ADDED', current: otherKind }, primaries), []);
  assert.deepEqual(route('c', deployments, { type: 'ADDED', current: snap({}) }, primaries), []);
});

test('a change of controller notifies both the old and the new owner, once each', () => {
  const before = snap(controlledBy('a', 'ua'));
  const after = snap({ ...controlledBy('b', 'ub'), resourceVersion: '6' });
  const names = route('c', deployments, { type: 'MODIFIED', old: before, current: after }, primaries).map((f) => f.ref.name).sort();
  assert.deepEqual(names, ['a', 'b']);
});

test('owner of a namespaced child: a cluster-scoped owner gets no namespace; a namespaced owner outside the watched namespaces is skipped', () => {
  const child = snap(controlledBy('fleet-1', 'f1', 'Fleet', 'example.com/v1'));
  const request = ownerRequest('c', child, child.controller!, primaries);
  assert.equal(request?.ref.namespace, undefined);
  const restricted = { ...gadget, namespaces: ['other'] };
  assert.equal(ownerRequest('c', snap(controlledBy('g', 'g1')), { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'g', uid: 'g1' }, [restricted]), undefined);
});

test('resync forwards every listed primary with reason Resync, and nothing for owned kinds', () => {
  const list = [snap({ name: 'a', uid: '1' }), snap({ name: 'b', uid: '2' })];
  assert.deepEqual(resyncRequests('c', gadget, list).map((f) => `${f.reason} ${f.ref.name}`), ['Resync a', 'Resync b']);
  assert.deepEqual(resyncRequests('c', deployments, list), []);
});
