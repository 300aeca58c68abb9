/**
 * operless/testing `reconcileTester` on a real kube-apiserver + etcd: one reconcile of a
 * controller, as the runtime runs it, under an identity whose RBAC the test applies — the result,
 * the follow-up the runtime would send (nothing, a requeue, a retry, a dead letter), the writes
 * in order with refusals, the Events (recorded on the cluster too) and the object afterwards.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { reconcileTester, startControlPlane, testCrd, type ControlPlane } from '../../src/testing/index.ts';
import { done, requeueAfter } from '../../src/core/controller/result.ts';
import type { ControllerSpec } from '../../src/core/controller/types.ts';
import { CONFIGMAPS, EVENTS } from '../../src/kube/kinds.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { createClientFactory } from '../../src/kube/factory.ts';

interface Thing extends KubeObject {
  spec: { mode: 'ok' | 'poll' | 'fail' };
  status?: { seen?: string };
}
const THING = { apiVersion: 'test.operless.dev/v1', kind: 'Thing', plural: 'things', namespaced: true } as const;
const CRD = testCrd({ group: 'test.operless.dev', kind: 'Thing' });

const thingController: ControllerSpec<Thing> = {
  ...THING,
  owns: [CONFIGMAPS],
  retry: { baseSeconds: 1, capSeconds: 4, maxAttempts: 3 },
  async reconcile(thing, ctx) {
    await ctx.applyOwned(CONFIGMAPS, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${thing.metadata.name}-config` },
      data: { mode: thing.spec.mode },
    });
    await ctx.events.record(thing, { type: 'Normal', reason: 'Configured', action: 'Reconcile', note: `mode ${thing.spec.mode}` });
    if (thing.spec.mode === 'fail') throw new Error('the backend is down');
    await ctx.updateStatus({ seen: thing.spec.mode });
    return thing.spec.mode === 'poll' ? requeueAfter(30) : done();
  },
};

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crds: [CRD] });
  const admin = await createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath } })('admin');
  for (const mode of ['ok', 'poll', 'fail'] as const) {
    await admin.create(THING, { apiVersion: THING.apiVersion, kind: 'Thing', metadata: { name: `t-${mode}`, namespace: 'default' }, spec: { mode } });
  }
});
after(async () => {
  await cp?.stop();
});

test('as the admin: done, requeue, retry and dead letter are reported as the runtime decides them; writes in order; Events recorded', async () => {
  const tester = await reconcileTester(cp);
  const ok = await tester.reconcile(thingController, { namespace: 'default', name: 't-ok' });
  assert.deepEqual(ok.result, { type: 'done' });
  assert.deepEqual(ok.followUp, { type: 'none' });
  assert.deepEqual(
    ok.writes.map((w) => `${w.method} ${w.path}`),
    ['PATCH /api/v1/namespaces/default/configmaps/t-ok-config', 'PATCH /apis/test.operless.dev/v1/namespaces/default/things/t-ok/status'],
  );
  assert.equal(ok.object?.status?.seen, 'ok', 'the object as it is after the reconcile');
  assert.deepEqual(ok.events, [{ type: 'Normal', reason: 'Configured', note: 'mode ok' }]);
  const admin = await createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath } })('admin');
  const recorded = (await admin.list(EVENTS, { namespace: 'default' })).items.filter((e) => e.regarding?.name === 't-ok');
  assert.deepEqual(
    recorded.map((e) => e.reason),
    ['Configured'],
    'the Event is on the cluster too',
  );

  const poll = await tester.reconcile(thingController, { namespace: 'default', name: 't-poll', reason: 'Modified' });
  assert.deepEqual(poll.result, { type: 'requeueAfter', seconds: 30 });
  assert.deepEqual(poll.followUp, { type: 'send', reason: 'Requeue', attempt: 0, delaySeconds: 30 });

  const fail = await tester.reconcile(thingController, { namespace: 'default', name: 't-fail' });
  assert.deepEqual(fail.result, { type: 'error', message: 'the backend is down' });
  assert.equal(fail.followUp.type, 'send');
  assert.deepEqual(fail.followUp.type === 'send' ? [fail.followUp.reason, fail.followUp.attempt] : [], ['Retry', 1]);
  const last = await tester.reconcile(thingController, { namespace: 'default', name: 't-fail', attempt: 2 });
  assert.deepEqual(
    last.followUp.type === 'deadLetter' ? last.followUp.reason : last.followUp.type,
    'RetriesExhausted',
    'the third failure of three attempts is dead-lettered',
  );

  const gone = await tester.reconcile(thingController, { namespace: 'default', name: 'no-such-thing' });
  assert.deepEqual([gone.result, gone.followUp, gone.object], [{ type: 'gone' }, { type: 'none' }, undefined]);
});

test('as an identity without RBAC for the child: the refused write is reported and the runtime would retry', async () => {
  const rbac = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'thing-function' },
    rules: [
      { apiGroups: ['test.operless.dev'], resources: ['things'], verbs: ['get', 'list', 'patch'] },
      { apiGroups: ['test.operless.dev'], resources: ['things/status'], verbs: ['patch'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'get', 'patch'] },
    ],
  };
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'thing-function' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'thing-function' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'my-op:thing' }],
  };
  for (const o of [rbac, binding]) assert.equal((await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(o) })).code, 0);
  const tester = await reconcileTester(cp, { user: 'thing-function', groups: ['my-op:thing'] });
  const run = await tester.reconcile(thingController, { namespace: 'default', name: 't-ok' });
  assert.equal(run.result.type, 'error');
  assert.equal(run.writes.length, 1);
  assert.equal(run.writes[0]?.refused?.status, 403, JSON.stringify(run.writes[0]));
  assert.match(run.writes[0]?.refused?.message ?? '', /configmaps/);
  assert.equal(run.followUp.type, 'send');
});

test('fireTimer: a declared timer runs for an object without an event; its next tick is reported, marked, not sent; a throw is TimerFailed; a paused object ends the chain', async () => {
  const checks: string[] = [];
  const timed: ControllerSpec<Thing> = {
    ...thingController,
    timers: [
      {
        name: 'health',
        everySeconds: 300,
        async run(thing, ctx) {
          checks.push(thing.metadata.name);
          if (thing.spec.mode === 'fail') throw new Error('health endpoint down');
          await ctx.updateStatus({ seen: 'healthy' });
        },
      },
    ],
  };
  const tester = await reconcileTester(cp);
  const reconciled = await tester.reconcile(timed, { namespace: 'default', name: 't-ok' });
  assert.deepEqual(reconciled.timersToStart, ['health'], 'a reconcile would start the chain the object lacks');
  assert.deepEqual(checks, [], 'a reconcile does not run the timer');

  const before = Date.now();
  const first = await tester.fireTimer(timed, { namespace: 'default', name: 't-ok', timer: 'health' });
  assert.deepEqual(first.result, { type: 'ran' });
  assert.deepEqual(checks, ['t-ok']);
  assert.equal(first.object?.status?.seen, 'healthy', "the timer's status write is real");
  assert.equal(first.nextTick?.delaySeconds, 300, 'the next tick, one period later (not sent)');
  const mark = first.object?.metadata.annotations?.['timer.operless.dev/health'];
  assert.ok(mark && Number(mark) >= before + 300_000, `the next tick is marked on the object: ${JSON.stringify(first.object?.metadata.annotations)}`);
  const again = await tester.reconcile(timed, { namespace: 'default', name: 't-ok' });
  assert.deepEqual(again.timersToStart, [], 'with its chain marked, a reconcile starts none');
  const second = await tester.fireTimer(timed, { namespace: 'default', name: 't-ok', timer: 'health' });
  assert.deepEqual([second.result, second.nextTick?.dueAt], [{ type: 'ran' }, Number(mark) + 300_000], 'firing again runs the pending tick, early');

  const failed = await tester.fireTimer(timed, { namespace: 'default', name: 't-fail', timer: 'health' });
  assert.deepEqual(failed.result, { type: 'failed', message: 'health endpoint down' });
  assert.deepEqual(
    failed.events.map((e) => e.reason),
    ['TimerFailed'],
  );
  assert.equal(failed.nextTick?.delaySeconds, 300, 'the next tick is the retry');

  const unknown = await tester.fireTimer(timed, { namespace: 'default', name: 't-ok', timer: 'nightly' });
  assert.equal(unknown.result.type, 'stopped');
  assert.equal(unknown.nextTick, undefined);
  assert.equal((await cp.kubectl(['annotate', 'things.test.operless.dev', 't-poll', '-n', 'default', 'operless.dev/paused=true'])).code, 0);
  const paused = await tester.fireTimer(timed, { namespace: 'default', name: 't-poll', timer: 'health' });
  assert.match(paused.result.type === 'stopped' ? paused.result.why : JSON.stringify(paused.result), /paused/);
  assert.equal(paused.nextTick, undefined);
  assert.deepEqual(checks, ['t-ok', 't-ok', 't-fail'], 'neither the undeclared timer nor the paused object ran');
});
