import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath } from '../../../src/kube/lease.ts';
import { LEASES } from '../../../src/kube/kinds.ts';
import { resourcePath } from '../../../src/kube/paths.ts';

test("leasePath: a namespace's Leases and one Lease, as the forwarder's leader election built them by hand", () => {
  assert.equal(leasePath('operless-system'), '/apis/coordination.k8s.io/v1/namespaces/operless-system/leases');
  assert.equal(leasePath('operless-system', 'operless-forwarder'), '/apis/coordination.k8s.io/v1/namespaces/operless-system/leases/operless-forwarder');
  assert.equal(leasePath('a b', 'c/d'), `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent('a b')}/leases/${encodeURIComponent('c/d')}`);
  assert.equal(leasePath('ns', 'x'), resourcePath(LEASES, { namespace: 'ns', name: 'x' }));
});
