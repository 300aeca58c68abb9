/**
 * The Tenant controller against a real kube-apiserver + etcd (the Operless test environment,
 * binaries cached in ~/.cache/operless): the CRD installs, the sample applies, and one
 * reconcile of it — run by the Operless runtime under the function's own RBAC — sets the Ready
 * condition, creates the tenant's namespace and quota, and asks for nothing more.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { reconcileTester, startControlPlane, type ControlPlane } from 'operless/testing';
import { tenantController } from '../src/tenant/controller.ts';

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crds: ['infra/crds/tenants.tenancy.example.com.yaml'] });
});
after(async () => {
  await cp?.stop();
});

test('reconciling the sample Tenant: Ready=True with observedGeneration, its namespace and quota owned', async () => {
  for (const file of ['infra/rbac/tenant-function.yaml', 'infra/samples/tenant.yaml']) {
    const applied = await cp.kubectl(['apply', '-f', file]);
    assert.equal(applied.code, 0, applied.stderr);
  }
  // As the function: a user in the group its RBAC binds.
  const tester = await reconcileTester(cp, { user: 'tenant-function', groups: ['tenancy-operator:tenant'] });
  const run = await tester.reconcile(tenantController, { name: 'tenant-sample' });
  assert.deepEqual(run.result, { type: 'done' }, run.logs.join('\n'));
  assert.deepEqual(run.followUp, { type: 'none' }, 'nothing is requeued or dead-lettered');
  const object = run.object!;
  const ready = object.status?.conditions?.find((c) => c.type === 'Ready');
  assert.equal(ready?.status, 'True', JSON.stringify(object.status));
  assert.equal(ready?.observedGeneration, object.metadata.generation);
  assert.deepEqual(run.writes.filter((w) => w.method === 'PATCH').map((w) => w.path.split('/').slice(-2).join('/')), ['namespaces/tenant-sample', 'resourcequotas/tenant-quota', 'tenant-sample/status'], 'the namespace, its quota, then the status');
  assert.equal(object.status?.namespace, 'tenant-sample');

  // Filled in by hand: the namespace and its quota, owned by the Tenant.
  const ns = JSON.parse((await cp.kubectl(['get', 'namespace', 'tenant-sample', '-o', 'json'])).stdout);
  assert.equal(ns.metadata.ownerReferences?.[0]?.uid, object.metadata.uid);
  assert.equal(ns.metadata.annotations['tenancy.example.com/owner'], 'team-a@example.com');
  const quota = JSON.parse((await cp.kubectl(['get', 'resourcequota', 'tenant-quota', '-n', 'tenant-sample', '-o', 'json'])).stdout);
  assert.deepEqual(quota.spec.hard, { pods: '20', 'requests.cpu': '4', 'requests.memory': '8Gi' });
});
