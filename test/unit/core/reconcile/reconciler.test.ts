/**
 * `reconcileKey` directly (the handler tests reach it only through a whole invocation): every
 * step of one level-based reconcile against the in-memory cluster of fakes.ts — gone (not
 * found, recreated under a new uid), a scope mismatch, finalize with and without our
 * finalizer, the finalizer added before reconcile, a result that is not done()/requeueAfter(),
 * and failures of the read or of reconcile becoming `error` endings (it never throws).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newMessage, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { TerminalError } from '../../../../src/core/controller/errors.ts';
import { reconcileKey, type ReconcileEnv } from '../../../../src/core/reconcile/reconciler.ts';
import { done, requeueAfter } from '../../../../src/core/controller/result.ts';
import type { KindRef, KubeObject } from '../../../../src/kube/types.ts';
import type { ReconcileContext } from '../../../../src/core/controller/types.ts';
import { KubeApiError } from '../../../../src/kube/errors.ts';
import { silentLogger } from '../../../../src/observability/log.ts';
import { fakeCluster, type FakeCluster } from '../fakes.ts';

const WIDGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };
const FINALIZER = 'test.operless.dev/finalizer';

function env(cluster: FakeCluster): ReconcileEnv {
  return {
    client: cluster.client,
    events: { record: async () => {} } as unknown as ReconcileEnv['events'],
    log: silentLogger,
    signal: new AbortController().signal,
    reconcileId: 'r1',
  };
}

function widget(cluster: FakeCluster, name: string, metadata: Partial<KubeObject['metadata']> = {}): KubeObject {
  return cluster.put(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name, namespace: 'ns', ...metadata }, spec: { size: 1 } });
}

function messageFor(name: string, extra: Partial<ReconcileMessage> = {}): ReconcileMessage {
  return { ...newMessage({ cluster: 'c1', ...WIDGET, namespace: 'ns', name }, 'Modified', 0), ...extra };
}

/** A controller recording which of its functions ran, with what. */
function recording(behaviour: { reconcile?: (o: KubeObject, ctx: ReconcileContext<KubeObject>) => unknown; finalize?: (o: KubeObject) => unknown } = {}) {
  const calls: string[] = [];
  const controller = defineController<KubeObject>({
    ...WIDGET,
    reconcile: async (o, ctx) => {
      calls.push(`reconcile ${o.metadata.name} finalizers=${(o.metadata.finalizers ?? []).join(',')}`);
      return (behaviour.reconcile ? behaviour.reconcile(o, ctx) : done()) as never;
    },
    ...(behaviour.finalize
      ? {
          finalize: async (o: KubeObject) => {
            calls.push(`finalize ${o.metadata.name}`);
            return behaviour.finalize!(o) as never;
          },
          finalizer: FINALIZER,
        }
      : {}),
  });
  return { controller, calls };
}

test('an object that is not found is gone (NotFound) without a reconcile', async () => {
  const cluster = fakeCluster();
  const { controller, calls } = recording();
  const result = await reconcileKey(controller, messageFor('missing'), env(cluster));
  assert.deepEqual(result, { ending: { type: 'gone', why: 'NotFound' }, step: 'skip' });
  assert.deepEqual(calls, []);
});

test('a message naming another uid than the live object is about a deleted object: gone (UidChanged)', async () => {
  const cluster = fakeCluster();
  const live = widget(cluster, 'w1');
  const { controller, calls } = recording();
  const result = await reconcileKey(controller, messageFor('w1', { uid: 'old-uid' }), env(cluster));
  assert.deepEqual(result.ending, { type: 'gone', why: 'UidChanged' });
  assert.equal(result.object?.metadata.uid, live.metadata.uid);
  assert.deepEqual(calls, []);
  assert.equal((await reconcileKey(controller, messageFor('w1', { uid: live.metadata.uid }), env(cluster))).step, 'reconcile', 'the same uid reconciles');
});

test('a message whose scope does not match the kind is a terminal InvalidMessage error, no request made', async () => {
  const cluster = fakeCluster();
  const { controller } = recording();
  const { namespace: _ns, ...clusterScoped } = messageFor('w1');
  const result = await reconcileKey(controller, clusterScoped as ReconcileMessage, env(cluster));
  assert.equal(result.ending.type, 'error');
  const error = (result.ending as { error: unknown }).error;
  assert.ok(error instanceof TerminalError);
  assert.match(error.message, /Widget is namespaced but the message for "w1" has no namespace/);
  assert.deepEqual(cluster.requests, []);
});

test('a controller with finalize gets its finalizer added before reconcile runs', async () => {
  const cluster = fakeCluster();
  widget(cluster, 'w1');
  const { controller, calls } = recording({ finalize: () => done() });
  const result = await reconcileKey(controller, messageFor('w1'), env(cluster));
  assert.deepEqual(result.ending, { type: 'result', result: done() });
  assert.deepEqual(calls, [`reconcile w1 finalizers=${FINALIZER}`]);
  assert.deepEqual(cluster.read(WIDGET, 'w1', 'ns')?.metadata.finalizers, [FINALIZER]);
});

test('an object being deleted with our finalizer is finalized, then the finalizer removed; a requeue keeps it', async () => {
  const cluster = fakeCluster();
  widget(cluster, 'w1', { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [FINALIZER, 'other/keep'] });
  const again = recording({ finalize: () => requeueAfter(5) });
  const requeued = await reconcileKey(again.controller, messageFor('w1'), env(cluster));
  assert.deepEqual(requeued, { ending: { type: 'result', result: requeueAfter(5) }, object: requeued.object, step: 'finalize' });
  assert.deepEqual(cluster.read(WIDGET, 'w1', 'ns')?.metadata.finalizers, [FINALIZER, 'other/keep'], 'kept while finalize asks for more time');

  const { controller, calls } = recording({ finalize: () => undefined });
  const result = await reconcileKey(controller, messageFor('w1'), env(cluster));
  assert.equal(result.step, 'finalize');
  assert.deepEqual(result.ending, { type: 'result', result: done() }, 'finalize returning nothing counts as done');
  assert.deepEqual(calls, ['finalize w1']);
  assert.deepEqual(cluster.read(WIDGET, 'w1', 'ns')?.metadata.finalizers, ['other/keep'], 'only our finalizer is removed');
});

test('an object being deleted without our finalizer: nothing to do for a controller with finalize; reconcile for one without', async () => {
  const cluster = fakeCluster();
  widget(cluster, 'w1', { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['other/keep'] });
  const withFinalize = recording({ finalize: () => done() });
  assert.deepEqual((await reconcileKey(withFinalize.controller, messageFor('w1'), env(cluster))).step, 'skip');
  assert.deepEqual(withFinalize.calls, []);
  const without = recording();
  assert.equal((await reconcileKey(without.controller, messageFor('w1'), env(cluster))).step, 'reconcile');
  assert.deepEqual(without.calls, ['reconcile w1 finalizers=other/keep']);
});

test('a reconcile result that is neither done() nor requeueAfter() is an error naming what to return', async () => {
  const cluster = fakeCluster();
  widget(cluster, 'w1');
  for (const bad of [undefined, { type: 'later' }, 5]) {
    const { controller } = recording({ reconcile: () => bad });
    const result = await reconcileKey(controller, messageFor('w1'), env(cluster));
    assert.equal(result.ending.type, 'error', JSON.stringify(bad));
    assert.match(String((result.ending as { error: Error }).error.message), /return done\(\) or requeueAfter\(seconds\)/);
  }
});

test('failures never throw: a failed read is an error at step get; a throwing reconcile an error with the live object', async () => {
  const cluster = fakeCluster();
  widget(cluster, 'w1');
  const { controller } = recording({
    reconcile: () => {
      throw new Error('boom');
    },
  });
  cluster.failNext('get', new KubeApiError({ status: 0, reason: 'Timeout', message: 'no response', request: 'GET x' }));
  const unreadable = await reconcileKey(controller, messageFor('w1'), env(cluster));
  assert.equal(unreadable.step, 'get');
  assert.equal(unreadable.object, undefined);
  assert.equal((unreadable.ending as { error: KubeApiError }).error.reason, 'Timeout');
  const thrown = await reconcileKey(controller, messageFor('w1'), env(cluster));
  assert.equal(thrown.step, 'reconcile');
  assert.equal(thrown.object?.metadata.name, 'w1', 'the live object, for the Warning Event');
  assert.match(String((thrown.ending as { error: Error }).error.message), /boom/);
});

test('requeueAfter from reconcile is passed through, and ctx.updateStatus moves ctx.object to the written status', async () => {
  const cluster = fakeCluster();
  widget(cluster, 'w1');
  let seen: unknown;
  const { controller } = recording({
    reconcile: async (_o, ctx) => {
      await ctx.updateStatus({ phase: 'Ready' });
      seen = ctx.object.status;
      return requeueAfter(30);
    },
  });
  const result = await reconcileKey(controller, messageFor('w1'), env(cluster));
  assert.deepEqual(result.ending, { type: 'result', result: requeueAfter(30) });
  assert.equal((seen as { phase?: string } | undefined)?.phase, 'Ready');
});
