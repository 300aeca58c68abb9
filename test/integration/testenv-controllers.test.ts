/**
 * The test control plane with kube-controller-manager: owner references are garbage-collected
 * and namespaces finish deleting, as in a real cluster — for a built-in owner, and for a
 * custom resource owner (its CRD is installed before the controller manager starts, so the
 * garbage collector knows the kind at once instead of after its 30 s rediscovery).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { V1OwnerReference } from '@kubernetes/client-node';
import { startControlPlane, testCrd } from '../../src/testing/index.ts';
import type { ControlPlane } from '../../src/testing/index.ts';

const crd = testCrd({ group: 'test.operless.dev', kind: 'Owner', statusSubresource: false });

async function gone(read: () => Promise<unknown>, what: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await read();
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return;
      throw err;
    }
    if (Date.now() > deadline) assert.fail(`${what} still exists after ${timeoutMs / 1000} s: the garbage collector did not remove it`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function controllerRef(apiVersion: string, kind: string, name: string, uid: string): V1OwnerReference {
  return { apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true };
}

describe('startControlPlane({ controllers: true })', () => {
  let cp: ControlPlane;
  let core: CoreV1Api;

  before(async () => {
    cp = await startControlPlane({ controllers: true, crds: [crd] });
    core = cp.kubeConfig.makeApiClient(CoreV1Api);
  });
  after(() => cp?.stop());

  test('deleting a ConfigMap garbage-collects the ConfigMap it controls', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'child', ownerReferences: [controllerRef('v1', 'ConfigMap', 'owner', owner.metadata!.uid!)] } },
    });
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'bystander' } } });
    await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'owner' });
    await gone(() => core.readNamespacedConfigMap({ namespace: 'default', name: 'child' }), 'ConfigMap default/child');
    const bystander = await core.readNamespacedConfigMap({ namespace: 'default', name: 'bystander' });
    assert.equal(bystander.metadata?.name, 'bystander');
  });

  test('deleting a custom resource garbage-collects the ConfigMap it controls', async () => {
    const custom = cp.kubeConfig.makeApiClient(CustomObjectsApi);
    const owner = (await custom.createNamespacedCustomObject({
      group: 'test.operless.dev',
      version: 'v1',
      namespace: 'default',
      plural: 'owners',
      body: { apiVersion: 'test.operless.dev/v1', kind: 'Owner', metadata: { name: 'cr-owner' } },
    })) as { metadata: { uid: string } };
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'cr-child', ownerReferences: [controllerRef('test.operless.dev/v1', 'Owner', 'cr-owner', owner.metadata.uid)] } },
    });
    await custom.deleteNamespacedCustomObject({ group: 'test.operless.dev', version: 'v1', namespace: 'default', plural: 'owners', name: 'cr-owner' });
    await gone(() => core.readNamespacedConfigMap({ namespace: 'default', name: 'cr-child' }), 'ConfigMap default/cr-child');
  });

  test('a deleted namespace is emptied and removed by the namespace controller', async () => {
    await core.createNamespace({ body: { metadata: { name: 'doomed' } } });
    await core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'inside' } } });
    await core.deleteNamespace({ name: 'doomed' });
    await gone(() => core.readNamespace({ name: 'doomed' }), 'namespace doomed');
  });

  test('the controller manager restarts on its own and keeps collecting', async () => {
    await cp.stopControllerManager();
    const owner = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'owner-2' } } });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'child-2', ownerReferences: [controllerRef('v1', 'ConfigMap', 'owner-2', owner.metadata!.uid!)] } },
    });
    await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'owner-2' });
    // Nobody collects while it is down (the first test shows collection takes well under a second).
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal((await core.readNamespacedConfigMap({ namespace: 'default', name: 'child-2' })).metadata?.name, 'child-2');
    await cp.startControllerManager();
    await gone(() => core.readNamespacedConfigMap({ namespace: 'default', name: 'child-2' }), 'ConfigMap default/child-2');
  });
});
