/**
 * kinds.ts: a typed KindRef makes the type checker hold what a controller writes and reads
 * against the Kubernetes model. The type-level cases are checked by `tsc` (npm test runs it over
 * test/ too): each `@ts-expect-error` line must be an error, or tsc fails on the unused
 * directive. The entries' plural and scope against a real API server's discovery are in
 * test/integration/testenv.test.ts ("the built-in kinds catalogue matches discovery").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIGMAPS, DEPLOYMENTS, NAMESPACES, OWNABLE_KINDS, type Deployment } from '../../../src/kube/kinds.ts';
import type { ReconcileContext } from '../../../src/core/controller/types.ts';
import type { KindRef, KubeClient, KubeObject } from '../../../src/kube/types.ts';

/** Never called: compiled only, so that tsc checks the calls in it. */
async function typeChecks(ctx: ReconcileContext, client: KubeClient, MY_KIND: KindRef): Promise<void> {
  const labels = { app: 'web' };
  await ctx.applyOwned(DEPLOYMENTS, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: { replicas: 2, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'nginx' }] } } },
  });
  await ctx.applyOwned(DEPLOYMENTS, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    // @ts-expect-error a misspelt field in spec.template is not a Deployment
    spec: { selector: { matchLabels: labels }, tempate: { spec: { containers: [] } } },
  });
  await ctx.applyOwned(DEPLOYMENTS, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    // @ts-expect-error replicas is a number in the model
    spec: { replicas: '2', selector: {}, template: {} },
  });
  // @ts-expect-error a ConfigMap is not what DEPLOYMENTS names
  await ctx.applyOwned(DEPLOYMENTS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: {} });
  const got = await client.get(DEPLOYMENTS, 'web', 'default');
  const replicas: number | undefined = got?.spec?.replicas;
  const maps = await client.list(CONFIGMAPS, { namespace: 'default' });
  const data: Record<string, string> | undefined = maps.items[0]?.data;
  // An untyped KindRef still takes whatever object type the caller names.
  const mine = await client.get<KubeObject & { spec: { size: number } }>(MY_KIND, 'x');
  const size: number | undefined = mine?.spec.size;
  const typed: KindRef = DEPLOYMENTS; // a typed ref is a KindRef wherever one is expected
  void [replicas, data, size, typed];
}

test('the type-level checks compile (tsc) and the entries are plain, frozen data', () => {
  assert.equal(typeof typeChecks, 'function');
  const deployment: Deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } };
  assert.equal(deployment.kind, DEPLOYMENTS.kind);
  assert.deepEqual({ ...DEPLOYMENTS }, { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true });
  assert.ok(Object.isFrozen(DEPLOYMENTS));
  assert.equal(NAMESPACES.namespaced, false);
  assert.equal(new Set(OWNABLE_KINDS.map((k) => k.kind)).size, OWNABLE_KINDS.length, 'each kind listed once');
});
