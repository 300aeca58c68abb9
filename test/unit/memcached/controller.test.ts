/**
 * The reconcile's decisions with an in-memory stand-in for the context (a unit test: the
 * integration tests run the same controller against the real API server).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ReconcileContext } from '../../../src/core/controller/types.ts';
import type { KindRef, KubeClient, KubeObject } from '../../../src/kube/types.ts';
import { isTerminalError } from '../../../src/core/controller/errors.ts';
import { silentLogger } from '../../../src/observability/log.ts';
import { newMessage, type Reason } from '../../../src/contract/message.ts';
import { jsonEqual } from '../../../src/kube/status.ts';
import { memcachedController, reconcileMemcached, finalizeMemcached, MEMCACHED_FINALIZER } from '../../../src/memcached/controller.ts';
import type { Memcached } from '../../../src/memcached/types.ts';
import { memcached, pod, settledStatus } from './fixtures.ts';

interface Recorded {
  type: string;
  reason: string;
  note: string;
}

function fakeContext(
  mc: Memcached,
  existing: KubeObject[] = [],
  pods: KubeObject[] = [],
  trigger: { reason: Reason; resourceVersion?: string } = { reason: 'Modified' },
) {
  let lists = 0;
  let version = 100;
  const store = new Map<string, KubeObject>(existing.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
  const applied: KubeObject[] = [];
  const events: Recorded[] = [];
  const statuses: Record<string, unknown>[] = [];
  const client = {
    async get(kind: KindRef, name: string) {
      return store.get(`${kind.kind}/${name}`);
    },
    async list(kind: KindRef, options?: { labelSelector?: string }) {
      assert.equal(kind.kind, 'Pod');
      assert.equal(options?.labelSelector, 'app.kubernetes.io/name=memcached,app.kubernetes.io/instance=cache');
      lists += 1;
      return { items: pods, resourceVersion: '1' };
    },
  } as unknown as KubeClient;
  const ctx: ReconcileContext<Memcached> = {
    reconcileId: 'r1',
    preview: false,
    message: newMessage(
      {
        cluster: 'test',
        apiVersion: mc.apiVersion,
        kind: mc.kind,
        namespace: 'shop',
        name: 'cache',
        ...(trigger.resourceVersion ? { resourceVersion: trigger.resourceVersion } : {}),
      },
      trigger.reason,
    ),
    log: silentLogger,
    client,
    events: {
      async record(_regarding, e) {
        events.push(e);
      },
    },
    signal: new AbortController().signal,
    async applyOwned<C extends KubeObject>(kind: KindRef, child: C): Promise<C> {
      applied.push(child);
      const previous = store.get(`${kind.kind}/${child.metadata.name}`);
      version += 1;
      const merged = { ...child, metadata: { ...child.metadata, resourceVersion: String(version) }, status: previous?.status } as C;
      store.set(`${kind.kind}/${child.metadata.name}`, merged);
      return merged;
    },
    async updateStatus(status) {
      statuses.push(status);
      return true;
    },
    object: mc,
  };
  return { ctx, applied, events, statuses, lists: () => lists, stored: (kind: string) => store.get(`${kind}/cache`) };
}

test('the controller spec: kind, finalizer, field manager', () => {
  assert.equal(memcachedController.apiVersion, 'cache.example.com/v1alpha1');
  assert.equal(memcachedController.plural, 'memcacheds');
  assert.equal(memcachedController.namespaced, true);
  assert.equal(memcachedController.finalizer, MEMCACHED_FINALIZER);
  assert.equal(typeof memcachedController.finalize, 'function');
});

test('first reconcile: applies Deployment and Service, records Created, writes status, and does not poll while the rollout runs', async () => {
  const mc = memcached();
  const { ctx, applied, events, statuses, lists } = fakeContext(mc);
  const result = await reconcileMemcached(mc, ctx);
  assert.deepEqual(
    applied.map((o) => o.kind),
    ['Deployment', 'Service'],
  );
  assert.equal(lists(), 0, 'the new Deployment has no ReplicaSet yet: no pods to list');
  assert.deepEqual((statuses[0] as { nodes: string[] }).nodes, []);
  assert.deepEqual(
    events.map((e) => e.reason),
    ['Created'],
  );
  assert.equal(statuses.length, 1);
  const conditions = (statuses[0] as { conditions: { type: string; status: string }[] }).conditions;
  assert.equal(conditions.find((c) => c.type === 'Available')?.status, 'False', 'the rollout is still in flight');
  assert.deepEqual(result, { type: 'done' }, "the Deployment's status changes (Owned events) bring the next reconcile; no poll");
});

test('first reconcile with podListing every-change (the earlier rule, for the benchmark): the pods are listed', async () => {
  const mc = memcached();
  const { ctx, lists } = fakeContext(mc);
  await reconcileMemcached(mc, ctx, { podListing: 'every-change' });
  assert.equal(lists(), 1);
});

test('scaled: an existing Deployment with other replicas gives a Scaled event', async () => {
  const mc = memcached({ size: 1 });
  const existing = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'cache', namespace: 'shop' }, spec: { replicas: 3 } };
  const { ctx, events } = fakeContext(mc, [existing], [pod('cache-a')]);
  const result = await reconcileMemcached(mc, ctx);
  assert.deepEqual(
    events.map((e) => [e.reason, e.note]),
    [['Scaled', 'Scaled memcached from 3 to 1 node']],
  );
  assert.deepEqual(result, { type: 'done' }, 'one ready pod for size 1 and no Deployment status: settled');
});

test('invalid spec: Degraded status written, then TerminalError with the reason', async () => {
  const mc = memcached({ memoryLimitMB: 512, resources: { limits: { memory: '256Mi' } } });
  const { ctx, applied, statuses } = fakeContext(mc);
  await assert.rejects(reconcileMemcached(mc, ctx), (err) => {
    assert.ok(isTerminalError(err));
    assert.equal((err as { reason: string }).reason, 'MemoryLimitTooSmall');
    return true;
  });
  assert.equal(applied.length, 0, 'nothing applied for an invalid spec');
  const degraded = (statuses[0]?.conditions as { type: string; status: string }[] | undefined)?.find((c) => c.type === 'Degraded');
  assert.equal(degraded?.status, 'True');
});

test('a Deployment controlled by something else is not taken over', async () => {
  const mc = memcached();
  const foreign = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'cache', namespace: 'shop', ownerReferences: [{ apiVersion: 'x/v1', kind: 'Other', name: 'o', uid: 'u2', controller: true }] },
  };
  const { ctx, applied } = fakeContext(mc, [foreign]);
  await assert.rejects(reconcileMemcached(mc, ctx), (err) => isTerminalError(err) && /controlled by Other o/.test((err as Error).message));
  assert.equal(applied.length, 0);
});

test('a Deployment left by a deleted Memcached of the same name: retried (not terminal)', async () => {
  const mc = memcached();
  const old = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'cache',
      namespace: 'shop',
      ownerReferences: [{ apiVersion: mc.apiVersion, kind: 'Memcached', name: 'cache', uid: 'old', controller: true }],
    },
  };
  const { ctx } = fakeContext(mc, [old]);
  await assert.rejects(reconcileMemcached(mc, ctx), (err) => !isTerminalError(err) && /waiting for garbage collection/.test((err as Error).message));
});

test('finalize records an Event and is done', async () => {
  const mc = memcached();
  const { ctx, events } = fakeContext(mc);
  assert.deepEqual(await finalizeMemcached(mc, ctx), { type: 'done' });
  assert.equal(events[0]?.reason, 'Finalizing');
});

/** A converged object: the children as the first reconcile applied them, the status it wrote. */
async function converged() {
  const pods = [pod('cache-a'), pod('cache-b'), pod('cache-c')];
  const first = fakeContext(memcached(), [], pods, { reason: 'Added' });
  const mc0 = memcached();
  await reconcileMemcached(mc0, first.ctx);
  const deployment: KubeObject = { ...first.stored('Deployment')!, status: settledStatus(3) };
  const service = first.stored('Service')!;
  // The Deployment controller then wrote its status: a new version, and one more reconcile.
  deployment.metadata = { ...deployment.metadata, resourceVersion: '500' };
  const second = fakeContext(mc0, [deployment, service], pods, { reason: 'Owned', resourceVersion: '500' });
  await reconcileMemcached(mc0, second.ctx);
  const mc = memcached({}, { status: second.statuses.at(-1) as Memcached['status'] });
  return { mc, deployment, service, pods };
}

test("a no-op reconcile (Requeue, the Deployment's own Owned event; Resync also checks the Service): no Deployment apply, no pod list, same status, done", async () => {
  const { mc, deployment, service, pods } = await converged();
  assert.equal(mc.status?.deploymentResourceVersion, '500');
  assert.deepEqual(mc.status?.nodes, ['cache-a', 'cache-b', 'cache-c']);
  for (const trigger of [{ reason: 'Resync' }, { reason: 'Requeue' }, { reason: 'Owned', resourceVersion: '500' }] as const) {
    const { ctx, applied, events, statuses, lists } = fakeContext(mc, [deployment, service], pods, trigger);
    assert.deepEqual(await reconcileMemcached(mc, ctx), { type: 'done' }, trigger.reason);
    assert.deepEqual(
      applied.map((o) => o.kind),
      trigger.reason === 'Resync' ? ['Service'] : [],
      `${trigger.reason}: applied`,
    );
    assert.equal(lists(), 0, `${trigger.reason}: pods not listed`);
    assert.deepEqual(events, []);
    assert.ok(jsonEqual(statuses[0], mc.status), `${trigger.reason}: the status it computes is the one stored (so none is written)`);
  }
});

test('drift: a Deployment scaled by hand is applied back; the Service is checked with it', async () => {
  const { mc, deployment, service, pods } = await converged();
  const scaled = { ...deployment, spec: { ...(deployment.spec as object), replicas: 5 }, metadata: { ...deployment.metadata, resourceVersion: '600' } };
  const { ctx, applied } = fakeContext(mc, [scaled, service], pods, { reason: 'Owned', resourceVersion: '600' });
  await reconcileMemcached(mc, ctx);
  assert.deepEqual(
    applied.map((o) => [o.kind, (o.spec as { replicas?: number }).replicas]),
    [
      ['Deployment', 3],
      ['Service', undefined],
    ],
  );
});

test("an Owned event that is not the Deployment's (a Service change) applies the Service only", async () => {
  const { mc, deployment, service, pods } = await converged();
  const { ctx, applied, lists } = fakeContext(mc, [deployment, service], pods, { reason: 'Owned', resourceVersion: '777' });
  await reconcileMemcached(mc, ctx);
  assert.deepEqual(
    applied.map((o) => o.kind),
    ['Service'],
  );
  assert.equal(lists(), 0);
});

test("a replaced pod: the Deployment's status changed, so the pods are listed and status.nodes follows", async () => {
  const { mc, deployment, service } = await converged();
  const moved = { ...deployment, metadata: { ...deployment.metadata, resourceVersion: '700' } };
  const { ctx, statuses, lists, applied } = fakeContext(mc, [moved, service], [pod('cache-a'), pod('cache-b'), pod('cache-d')], {
    reason: 'Owned',
    resourceVersion: '700',
  });
  await reconcileMemcached(mc, ctx);
  assert.equal(lists(), 1);
  assert.deepEqual(applied, []);
  assert.deepEqual(statuses[0]?.nodes, ['cache-a', 'cache-b', 'cache-d']);
  assert.equal(statuses[0]?.deploymentResourceVersion, '700');
});

test('spec.configMapRef: a missing ConfigMap degrades (Warning Event once, nothing applied); present, its settings are applied with their hash', async () => {
  const mc = memcached({ configMapRef: { name: 'settings' } });
  const missing = fakeContext(mc);
  await reconcileMemcached(mc, missing.ctx);
  assert.deepEqual(missing.applied, [], 'the Deployment is left alone');
  assert.deepEqual(
    missing.events.map((e) => [e.type, e.reason]),
    [['Warning', 'ConfigMapNotFound']],
  );
  const status = missing.statuses[0] as { conditions: { type: string; status: string; reason: string }[] };
  assert.deepEqual(
    status.conditions.filter((c) => c.type === 'Degraded').map((c) => [c.status, c.reason]),
    [['True', 'ConfigMapNotFound']],
  );
  const again = fakeContext({ ...mc, status: status as never });
  await reconcileMemcached({ ...mc, status: status as never }, again.ctx);
  assert.deepEqual(again.events, [], 'still missing: no second Warning');
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { maxConnections: '99' } };
  const present = fakeContext(mc, [configMap]);
  await reconcileMemcached(mc, present.ctx);
  const deployment = present.applied.find((o) => o.kind === 'Deployment') as unknown as {
    spec: { template: { metadata: { annotations: Record<string, string> }; spec: { containers: { args: string[] }[] } } };
  };
  assert.deepEqual(deployment.spec.template.spec.containers[0]!.args.slice(-2), ['-c', '99']);
  assert.ok(deployment.spec.template.metadata.annotations['cache.example.com/config-hash']);
});
