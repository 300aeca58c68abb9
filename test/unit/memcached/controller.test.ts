/**
 * The reconcile's decisions with an in-memory stand-in for the context (a unit test: the
 * integration tests run the same controller against the real API server).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KindRef, KubeClient, KubeObject, ReconcileContext } from '../../../src/core/types.ts';
import { isTerminalError } from '../../../src/core/errors.ts';
import { silentLogger } from '../../../src/observability/log.ts';
import { newMessage } from '../../../src/contract/message.ts';
import { memcachedController, reconcileMemcached, finalizeMemcached, MEMCACHED_FINALIZER } from '../../../src/memcached/controller.ts';
import type { Memcached } from '../../../src/memcached/types.ts';
import { memcached, pod } from './fixtures.ts';

interface Recorded { type: string; reason: string; note: string }

function fakeContext(mc: Memcached, existing: KubeObject[] = [], pods: KubeObject[] = []) {
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
      return { items: pods, resourceVersion: '1' };
    },
  } as unknown as KubeClient;
  const ctx: ReconcileContext<Memcached> = {
    reconcileId: 'r1',
    message: newMessage({ cluster: 'test', apiVersion: mc.apiVersion, kind: mc.kind, namespace: 'shop', name: 'cache' }, 'Modified'),
    log: silentLogger,
    client,
    events: { async record(_regarding, e) { events.push(e); } },
    signal: new AbortController().signal,
    async applyOwned<C extends KubeObject>(kind: KindRef, child: C): Promise<C> {
      applied.push(child);
      const previous = store.get(`${kind.kind}/${child.metadata.name}`);
      const merged = { ...child, status: previous?.status } as C;
      store.set(`${kind.kind}/${child.metadata.name}`, merged);
      return merged;
    },
    async updateStatus(status) {
      statuses.push(status);
      return true;
    },
    object: mc,
  };
  return { ctx, applied, events, statuses };
}

test('the controller spec: kind, finalizer, field manager', () => {
  assert.equal(memcachedController.apiVersion, 'cache.example.com/v1alpha1');
  assert.equal(memcachedController.plural, 'memcacheds');
  assert.equal(memcachedController.namespaced, true);
  assert.equal(memcachedController.finalizer, MEMCACHED_FINALIZER);
  assert.equal(typeof memcachedController.finalize, 'function');
});

test('first reconcile: applies Deployment and Service, records Created, writes status, requeues while progressing', async () => {
  const mc = memcached();
  const { ctx, applied, events, statuses } = fakeContext(mc);
  const result = await reconcileMemcached(mc, ctx);
  assert.deepEqual(applied.map((o) => o.kind), ['Deployment', 'Service']);
  assert.deepEqual(events.map((e) => e.reason), ['Created']);
  assert.equal(statuses.length, 1);
  assert.deepEqual(result, { type: 'requeueAfter', seconds: 5 });
});

test('scaled: an existing Deployment with other replicas gives a Scaled event', async () => {
  const mc = memcached({ size: 1 });
  const existing = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'cache', namespace: 'shop' }, spec: { replicas: 3 } };
  const { ctx, events } = fakeContext(mc, [existing], [pod('cache-a')]);
  const result = await reconcileMemcached(mc, ctx);
  assert.deepEqual(events.map((e) => [e.reason, e.note]), [['Scaled', 'Scaled memcached from 3 to 1 node']]);
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
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'cache', namespace: 'shop', ownerReferences: [{ apiVersion: 'x/v1', kind: 'Other', name: 'o', uid: 'u2', controller: true }] },
  };
  const { ctx, applied } = fakeContext(mc, [foreign]);
  await assert.rejects(reconcileMemcached(mc, ctx), (err) => isTerminalError(err) && /controlled by Other o/.test((err as Error).message));
  assert.equal(applied.length, 0);
});

test('a Deployment left by a deleted Memcached of the same name: retried (not terminal)', async () => {
  const mc = memcached();
  const old = {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'cache', namespace: 'shop', ownerReferences: [{ apiVersion: mc.apiVersion, kind: 'Memcached', name: 'cache', uid: 'old', controller: true }] },
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
