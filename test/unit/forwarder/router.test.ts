import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { messageProblem, newMessage } from '../../../src/contract/message.ts';
import { DROP_REASONS, ownerRequest, resyncRequests, resyncRouted, route, routeChange, type ReconcileRequest } from '../../../src/forwarder/route/router.ts';
import type { ResolvedWatch } from '../../../src/forwarder/source/watches.ts';
import { fcParameters } from '../../support/fast-check.ts';
import { snapshotOf, type ObjectSnapshot } from '../../../src/forwarder/source/snapshot.ts';
import { DEFAULT_OWNED_TRIGGERS, DEFAULT_PRIMARY_TRIGGERS } from '../../../src/forwarder/config/config.ts';

const gadget: ResolvedWatch = {
  role: 'primary',
  apiVersion: 'example.com/v1',
  kind: 'Gadget',
  group: 'example.com',
  plural: 'gadgets',
  namespaced: true,
  namespaces: [],
  triggers: DEFAULT_PRIMARY_TRIGGERS,
  objectFields: [],
};
const cluster: ResolvedWatch = {
  role: 'primary',
  apiVersion: 'example.com/v1',
  kind: 'Fleet',
  group: 'example.com',
  plural: 'fleets',
  namespaced: false,
  namespaces: [],
  triggers: DEFAULT_PRIMARY_TRIGGERS,
  objectFields: [],
};
const deployments: ResolvedWatch = {
  role: 'owned',
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  group: 'apps',
  plural: 'deployments',
  namespaced: true,
  namespaces: [],
  triggers: DEFAULT_OWNED_TRIGGERS,
  objectFields: [],
};
const primaries = [gadget, cluster];

function snap(meta: Record<string, unknown>, rest: Record<string, unknown> = {}): ObjectSnapshot {
  return snapshotOf({ metadata: { uid: 'c1', name: 'child', namespace: 'ns', resourceVersion: '5', generation: 1, ...meta }, ...rest })!;
}
const controlledBy = (name: string, uid: string, kind = 'Gadget', apiVersion = 'example.com/v1beta1') => ({
  ownerReferences: [{ apiVersion, kind, name, uid, controller: true }],
});

test('primary ADDED/MODIFIED/DELETED become Added/Modified/Deleted for the object itself', () => {
  const s = snap({ name: 'g', uid: 'g1' });
  const changed = snap({ name: 'g', uid: 'g1', resourceVersion: '6', generation: 2 });
  assert.deepEqual(route('c', gadget, { type: 'ADDED', current: s }, primaries), [
    {
      ref: { cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name: 'g' },
      uid: 'g1',
      resourceVersion: '5',
      reason: 'Added',
    },
  ]);
  assert.equal(route('c', gadget, { type: 'MODIFIED', old: s, current: changed }, primaries)[0]?.reason, 'Modified');
  assert.equal(route('c', gadget, { type: 'DELETED', old: s, current: s }, primaries)[0]?.reason, 'Deleted');
});

test('a status-only primary update routes to nothing', () => {
  const s = snap({ name: 'g' }, { status: { a: 1 } });
  const after = snap({ name: 'g', resourceVersion: '6' }, { status: { a: 2 } });
  assert.deepEqual(route('c', gadget, { type: 'MODIFIED', old: s, current: after }, primaries), []);
});

test('an owned object maps through its controller reference to the owner key (any version of the group), naming its own kind', () => {
  const child = snap(controlledBy('g', 'g1'));
  const out = route('c', deployments, { type: 'ADDED', current: child }, primaries);
  assert.deepEqual(out, [
    {
      ref: { cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name: 'g' },
      uid: 'g1',
      resourceVersion: '5',
      ownedKinds: [deployments.kind],
      reason: 'Owned',
    },
  ]);
  assert.equal(route('c', deployments, { type: 'DELETED', old: child, current: child }, primaries)[0]?.reason, 'Owned');
});

test('owned status changes are forwarded', () => {
  const before = snap(controlledBy('g', 'g1'), { status: { readyReplicas: 0 } });
  const after = snap({ ...controlledBy('g', 'g1'), resourceVersion: '6' }, { status: { readyReplicas: 1 } });
  assert.equal(route('c', deployments, { type: 'MODIFIED', old: before, current: after }, primaries).length, 1);
});

test("an owned object's creation by its controller (one writer) is not forwarded; its later changes, deletion and objects others wrote are", () => {
  const apply = (manager: string, subresource?: string) => ({ manager, operation: subresource ? 'Update' : 'Apply', ...(subresource ? { subresource } : {}) });
  const created = snap({ ...controlledBy('g', 'g1'), managedFields: [apply('operless-memcached')] });
  assert.deepEqual(route('c', deployments, { type: 'ADDED', current: created }, primaries), [], "the echo of the reconcile's own create");
  const statusWritten = snap(
    { ...controlledBy('g', 'g1'), resourceVersion: '6', managedFields: [apply('operless-memcached'), apply('kube-controller-manager', 'status')] },
    { status: { replicas: 1 } },
  );
  assert.equal(
    route('c', deployments, { type: 'MODIFIED', old: created, current: statusWritten }, primaries).length,
    1,
    "its controllers' status writes are forwarded",
  );
  assert.equal(
    route('c', deployments, { type: 'ADDED', current: statusWritten }, primaries).length,
    1,
    'first seen (a relist) after others wrote it: forwarded',
  );
  assert.equal(route('c', deployments, { type: 'DELETED', old: created, current: created }, primaries).length, 1, 'its deletion is forwarded');
  assert.equal(
    route('c', deployments, { type: 'ADDED', current: snap(controlledBy('g', 'g1')) }, primaries).length,
    1,
    'served without managedFields: forwarded',
  );
  const byKubectl = snap({ ...controlledBy('g', 'g1'), managedFields: [{ manager: 'kubectl-create', operation: 'Update' }] });
  assert.equal(
    route('c', deployments, { type: 'ADDED', current: byKubectl }, primaries).length,
    1,
    'created by someone else with the controller reference: forwarded',
  );
  assert.equal(
    route('c', deployments, { type: 'ADDED', current: snap({ ...controlledBy('g', 'g1'), managedFields: [apply('operless')] }) }, primaries).length,
    1,
    "not a function's field manager (operless-<kind>)",
  );
  assert.equal(
    route(
      'c',
      deployments,
      { type: 'ADDED', current: snap({ ...controlledBy('g', 'g1'), managedFields: [{ manager: 'operless-cli', operation: 'Update' }] }) },
      primaries,
    ).length,
    1,
    'a plain create by an Operless tool, not an apply by a function',
  );
  assert.equal(
    route('c', gadget, { type: 'ADDED', current: snap({ name: 'g', uid: 'g1', managedFields: [apply('kubectl')] }) }, primaries)[0]?.reason,
    'Added',
    "a primary's creation is always forwarded",
  );
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
  const names = route('c', deployments, { type: 'MODIFIED', old: before, current: after }, primaries)
    .map((f) => f.ref.name)
    .sort();
  assert.deepEqual(names, ['a', 'b']);
});

test('owner of a namespaced child: a cluster-scoped owner gets no namespace; a namespaced owner outside the watched namespaces is skipped', () => {
  const child = snap(controlledBy('fleet-1', 'f1', 'Fleet', 'example.com/v1'));
  const request = ownerRequest('c', child, child.controller!, primaries);
  assert.equal(request?.ref.namespace, undefined);
  const restricted = { ...gadget, namespaces: ['other'] };
  assert.equal(
    ownerRequest('c', snap(controlledBy('g', 'g1')), { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'g', uid: 'g1' }, [restricted]),
    undefined,
  );
});

test('resync forwards every listed primary with reason Resync, and nothing for owned kinds', () => {
  const list = [snap({ name: 'a', uid: '1' }), snap({ name: 'b', uid: '2' })];
  assert.deepEqual(
    resyncRequests('c', gadget, list).map((f) => `${f.reason} ${f.ref.name}`),
    ['Resync a', 'Resync b'],
  );
  assert.deepEqual(resyncRequests('c', deployments, list), []);
});

// ---- hostile input: whatever the API server accepts routes to a valid message or is dropped --

const services: ResolvedWatch = { ...deployments, apiVersion: 'v1', kind: 'Service', group: '', plural: 'services' };
const watches = [...primaries, deployments, services];
const encodes = (f: ReconcileRequest) =>
  messageProblem(newMessage({ ...f.ref, ...(f.uid ? { uid: f.uid } : {}), ...(f.resourceVersion ? { resourceVersion: f.resourceVersion } : {}) }, f.reason));

test('issue 20: a Deployment whose controller reference names the primary kind with an invalid name is dropped, not routed', () => {
  // The exact object of the issue: the API server accepts it (it does not validate owner names).
  const child = snap({
    ownerReferences: [{ apiVersion: 'example.com/v1alpha1', kind: 'Gadget', name: 'Bad_Name', uid: '00000000-0000-0000-0000-000000000000', controller: true }],
  });
  for (const type of ['ADDED', 'MODIFIED', 'DELETED'] as const) {
    assert.deepEqual(route('c', deployments, { type, ...(type === 'ADDED' ? {} : { old: child }), current: child }, watches), [], type);
  }
  const routed = routeChange('c', deployments, { type: 'ADDED', current: child }, watches);
  assert.deepEqual(routed.dropped, [
    {
      reason: 'invalid_name',
      target: 'owner',
      error: 'field "name" must be a DNS-1123 subdomain, got "Bad_Name"',
      owner: { apiVersion: 'example.com/v1alpha1', kind: 'Gadget', name: 'Bad_Name', uid: '00000000-0000-0000-0000-000000000000' },
    },
  ]);
});

test('owner names and uids the contract refuses are dropped with their reason; valid ones still route', () => {
  const cases: [Record<string, unknown>, string | undefined][] = [
    [{ name: 'a'.repeat(254), uid: 'u' }, 'invalid_name'],
    [{ name: 'a'.repeat(1024 * 1024), uid: 'u' }, 'invalid_name'],
    [{ name: 'UPPER', uid: 'u' }, 'invalid_name'],
    [{ name: 'a..b', uid: 'u' }, 'invalid_name'],
    [{ name: 'ok', uid: 'u'.repeat(129) }, 'invalid_uid'],
    [{ name: 'ok', uid: 'u'.repeat(1024 * 1024) }, 'invalid_uid'],
    [{ name: 'a'.repeat(253), uid: 'u'.repeat(128) }, undefined],
    [{ name: 'ok', uid: '' }, undefined], // no uid in the message
  ];
  for (const [ref, reason] of cases) {
    const child = snap({ ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Gadget', controller: true, ...ref }] });
    const routed = routeChange('c', deployments, { type: 'ADDED', current: child }, watches);
    const label = `${String(ref.name).slice(0, 20)}… (${String(ref.name).length}) uid ${String(ref.uid).length}`;
    assert.deepEqual(
      routed.dropped.map((d) => d.reason),
      reason ? [reason] : [],
      label,
    );
    assert.equal(routed.forwards.length, reason ? 0 : 1, label);
    for (const f of routed.forwards) assert.equal(encodes(f), undefined);
  }
});

test("a snapshot keeps an unbounded owner reference bounded: one character past the contract's limit", () => {
  const child = snap({
    ownerReferences: [
      { apiVersion: `example.com/${'v'.repeat(5000)}`, kind: 'K'.repeat(5000), name: 'n'.repeat(1_000_000), uid: 'u'.repeat(1_000_000), controller: true },
    ],
  });
  assert.deepEqual(
    [child.controller?.apiVersion.length, child.controller?.kind.length, child.controller?.name.length, child.controller?.uid.length],
    [318, 64, 254, 129],
  );
});

test('only primary kinds can be owners: a child controlled by an owned kind (or an unknown kind) sends nothing', () => {
  const byDeployment = snap(controlledBy('web', 'd1', 'Deployment', 'apps/v1'));
  assert.deepEqual(routeChange('c', services, { type: 'ADDED', current: byDeployment }, watches), { forwards: [], dropped: [] });
  assert.equal(ownerRequest('c', byDeployment, byDeployment.controller!, watches), undefined);
  const unknown = snap(controlledBy('x', 'x1', 'Gizmo', 'example.com/v1'));
  assert.deepEqual(routeChange('c', services, { type: 'ADDED', current: unknown }, watches), { forwards: [], dropped: [] });
});

test('several controller references: the first one is the controller (metav1.GetControllerOf)', () => {
  const child = snap({
    ownerReferences: [
      { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'not-controller', uid: 'n1' },
      { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'first', uid: 'f1', controller: true },
      { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'second', uid: 's1', controller: true },
    ],
  });
  assert.deepEqual(
    route('c', deployments, { type: 'ADDED', current: child }, watches).map((f) => f.ref.name),
    ['first'],
  );
  const badFirst = snap({
    ownerReferences: [
      { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'Bad_Name', uid: 'b1', controller: true },
      { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'good', uid: 'g1', controller: true },
    ],
  });
  const routed = routeChange('c', deployments, { type: 'ADDED', current: badFirst }, watches);
  assert.deepEqual([routed.forwards.length, routed.dropped.map((d) => d.reason)], [0, ['invalid_name']], 'the second is not a fallback');
});

test('a primary whose name the contract refuses is dropped (changes and resyncs), never thrown', () => {
  const roles: ResolvedWatch = {
    ...cluster,
    apiVersion: 'rbac.authorization.k8s.io/v1',
    group: 'rbac.authorization.k8s.io',
    kind: 'ClusterRole',
    plural: 'clusterroles',
  };
  const odd = snapshotOf({ metadata: { uid: 'r1', name: 'system:controller:odd', resourceVersion: '1' } })!;
  for (const type of ['ADDED', 'DELETED'] as const) {
    const routed = routeChange('c', roles, { type, current: odd }, [roles]);
    assert.deepEqual([routed.forwards, routed.dropped.map((d) => `${d.target} ${d.reason}`)], [[], ['self invalid_name']], type);
  }
  const fine = snapshotOf({ metadata: { uid: 'r2', name: 'fine', resourceVersion: '1' } })!;
  const resync = resyncRouted('c', roles, [odd, fine]);
  assert.deepEqual(
    resync.forwards.map((f) => f.ref.name),
    ['fine'],
  );
  assert.deepEqual(
    resync.dropped.map((d) => `${d.object.name} ${d.drop.reason}`),
    ['system:controller:odd invalid_name'],
  );
  assert.deepEqual(
    resyncRequests('c', roles, [odd, fine]).map((f) => f.ref.name),
    ['fine'],
  );
});

test('property: any metadata routes to requests the encoder accepts, or to drops with a known reason; never throws', () => {
  const anyString = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,30}[a-z0-9])?$/),
    fc.constantFrom('', 'Bad_Name', 'a'.repeat(253), 'a'.repeat(254), '-a', 'a-', 'a..b', '日本', 'x/y', 'system:x'),
    fc.integer({ min: 0, max: 400 }).map((n) => 'a'.repeat(n)),
  );
  const ownerRef = fc.record(
    {
      apiVersion: fc.oneof(fc.constantFrom('example.com/v1', 'example.com/v9', 'apps/v1', 'v1', 'EXAMPLE.com/v1', 'example.com/'), anyString),
      kind: fc.oneof(fc.constantFrom('Gadget', 'Fleet', 'Deployment', 'Service', 'gadget'), anyString),
      name: anyString,
      uid: anyString,
      controller: fc.oneof(fc.constant(true), fc.boolean(), fc.constant(undefined), fc.constant('true')),
    },
    { requiredKeys: [] },
  );
  const meta = fc.record(
    {
      uid: fc.oneof(fc.uuid(), anyString),
      name: anyString,
      namespace: fc.option(anyString, { nil: undefined }),
      resourceVersion: fc.oneof(fc.stringMatching(/^[0-9]{1,8}$/), anyString),
      ownerReferences: fc.oneof(fc.array(ownerRef, { maxLength: 4 }), fc.jsonValue({ maxDepth: 2 })),
      labels: fc.dictionary(fc.string({ maxLength: 20 }), fc.string({ maxLength: 40 }), { maxKeys: 5 }),
    },
    { requiredKeys: ['uid', 'name'] },
  );
  const watchArb = fc.constantFrom(...watches);
  const typeArb = fc.constantFrom('ADDED' as const, 'MODIFIED' as const, 'DELETED' as const);
  fc.assert(
    fc.property(watchArb, typeArb, meta, meta, (watch, type, before, after) => {
      const old = snapshotOf({ metadata: before });
      const current = snapshotOf({ metadata: { ...after, uid: before.uid } });
      if (!old || !current) return;
      const routed = routeChange('c', watch, { type, ...(type === 'ADDED' ? {} : { old }), current }, watches);
      for (const f of routed.forwards) assert.equal(encodes(f), undefined, JSON.stringify(f));
      for (const d of routed.dropped) assert.ok((DROP_REASONS as readonly string[]).includes(d.reason));
      const keys = routed.forwards.map((f) => `${f.ref.kind}/${f.ref.namespace}/${f.ref.name}`);
      assert.equal(new Set(keys).size, keys.length, 'one request per key');
      if (watch.role === 'owned') {
        for (const f of routed.forwards)
          assert.ok(
            primaries.some((p) => p.kind === f.ref.kind),
            'only primaries are owners',
          );
      }
    }),
    fcParameters({ numRuns: 2000 }),
  );
});
