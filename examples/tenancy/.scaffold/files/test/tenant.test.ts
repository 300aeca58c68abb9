/**
 * The Tenant controller against a real kube-apiserver + etcd (the Operless test environment,
 * binaries cached in ~/.cache/operless): the CRD installs, the sample applies, and one
 * reconcile of it — run by the Operless runtime under the function's own RBAC — sets the Ready
 * condition and asks for nothing more.
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

test('reconciling the sample Tenant: Ready=True with observedGeneration, nothing requeued', async () => {
  for (const file of ['infra/rbac/tenant-function.yaml', 'infra/samples/tenant.yaml']) {
    const applied = await cp.kubectl(['apply', '-f', file]);
    assert.equal(applied.code, 0, applied.stderr);
  }
  // As the function: a user in the group its RBAC binds.
  const tester = await reconcileTester(cp, { user: 'tenant-function', groups: ['tenancy-operator:tenant'] });
  const run = await tester.reconcile(tenantController, { name: 'tenant-sample' });
  assert.deepEqual(run.result, { type: 'done' }, run.logs.join('\n'));
  assert.deepEqual(run.followUp, { type: 'none' }, 'nothing is requeued or dead-lettered');
  const ready = run.object?.status?.conditions?.find((c) => c.type === 'Ready');
  assert.equal(ready?.status, 'True', JSON.stringify(run.object?.status));
  assert.equal(ready?.observedGeneration, run.object?.metadata.generation);
  assert.equal(run.object?.status?.observedGeneration, run.object?.metadata.generation, 'status.observedGeneration is the generation reconciled');
});
