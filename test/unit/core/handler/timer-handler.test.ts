/**
 * Timers and the rate limit through the handler, with in-memory fakes (the real API server and
 * ElasticMQ: test/integration/timers.test.ts, rate-limit.test.ts): a reconcile starts a missing
 * chain and leaves a live one alone; a tick runs the timer, sends the next tick and marks it;
 * a failed run or a failed GET still sends the next tick; a paused or gone object ends the
 * chain; a second with no place left hands the key back with its attempt; a Lease that cannot
 * be read is a failed reconcile.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeMessage, encodeMessage, newMessage, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { PAUSED_ANNOTATION } from '../../../../src/contract/pause.ts';
import { timerMarkAnnotation, timerMarkOf } from '../../../../src/contract/timer-mark.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../../../src/core/handler/handler.ts';
import { noMetrics } from '../../../../src/core/reconcile/metrics.ts';
import { done } from '../../../../src/core/controller/result.ts';
import { tickMessage } from '../../../../src/core/controller/timer.ts';
import { KubeApiError } from '../../../../src/kube/errors.ts';
import { silentLogger } from '../../../../src/observability/log.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord } from '../fakes.ts';

const WORK = 'http://q/000000000000/work';
const DLQ = 'http://q/000000000000/work-dlq';
const WIDGET = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true } as const;
const NOW = 1_700_000_000_000;

function setUp(options: { runTimer?: () => Promise<void>; annotations?: Record<string, string>; rateLimit?: { perSecond: number } } = {}) {
  const cluster = fakeCluster();
  const sender = recordingSender();
  const runs: ReconcileMessage[] = [];
  const reconciles: ReconcileMessage[] = [];
  const widget = cluster.put(WIDGET, {
    apiVersion: WIDGET.apiVersion,
    kind: 'Widget',
    metadata: { name: 'a', namespace: 'ns', ...(options.annotations ? { annotations: options.annotations } : {}) },
    spec: {},
  });
  const clock = { now: NOW };
  const handler = toSqsHandler(
    defineController({
      ...WIDGET,
      async reconcile(_o, ctx) {
        reconciles.push(ctx.message);
        return done();
      },
      timers: [
        {
          name: 'health',
          everySeconds: 300,
          run: async (_o, ctx) => {
            runs.push(ctx.message);
            await options.runTimer?.();
          },
        },
      ],
      ...(options.rateLimit ? { rateLimit: options.rateLimit } : {}),
    }),
    {
      queueUrl: WORK,
      deadLetterQueueUrl: DLQ,
      clients: async () => cluster.client,
      sender,
      log: silentLogger,
      metrics: noMetrics,
      now: () => clock.now,
      random: () => 0,
    },
  );
  const ref = { cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'ns', name: 'a', uid: widget.metadata.uid };
  const deliver = async (...messages: ReconcileMessage[]) => handler({ Records: messages.map((m) => sqsRecord(encodeMessage(m))) }, lambdaContext());
  const sentMessages = () => sender.sent.map((s) => ({ ...s, message: (decodeMessage(s.body) as { message: ReconcileMessage }).message }));
  return { cluster, sender, runs, reconciles, ref, clock, deliver, sentMessages };
}

test('a reconcile starts the chain of an object without one (a tick due now), and an object whose chain is alive gets none', async () => {
  const fresh = setUp();
  assert.deepEqual((await fresh.deliver(newMessage(fresh.ref, 'Added', NOW))).batchItemFailures, []);
  const [start] = fresh.sentMessages();
  assert.equal(fresh.sender.sent.length, 1);
  assert.equal(start?.message.timer, 'health');
  assert.equal(start?.message.notBefore, NOW);
  assert.equal(start?.delaySeconds, 0);
  assert.equal(fresh.runs.length, 0, 'the reconcile does not run the timer itself');

  const alive = setUp({ annotations: { [timerMarkAnnotation('health')]: String(NOW + 120_000) } });
  await alive.deliver(newMessage(alive.ref, 'Modified', NOW));
  assert.equal(alive.reconciles.length, 1);
  assert.equal(alive.sender.sent.length, 0, 'an event does not start a second chain');
});

test('a due tick runs the timer (not the reconcile), sends the next tick a period after its due time and marks it', async () => {
  const s = setUp();
  s.clock.now = NOW + 700;
  assert.deepEqual((await s.deliver(tickMessage(s.ref, 'health', NOW))).batchItemFailures, []);
  assert.equal(s.runs.length, 1);
  assert.equal(s.reconciles.length, 0);
  const [next] = s.sentMessages();
  assert.equal(next?.message.timer, 'health');
  assert.equal(next?.message.notBefore, NOW + 300_000, 'no drift: from the due time');
  assert.equal(next?.delaySeconds, 300);
  assert.equal(timerMarkOf(s.cluster.read(WIDGET, 'a', 'ns'), 'health'), NOW + 300_000);
  // The same tick again (a duplicate delivery) is now before the mark: superseded, not run.
  await s.deliver(tickMessage(s.ref, 'health', NOW));
  assert.equal(s.runs.length, 1);
  assert.equal(s.sender.sent.length, 1);
});

test('a failed run and a failed GET still send the next tick: the chain is not lost', async () => {
  const failing = setUp({
    runTimer: async () => {
      throw new Error('backend down');
    },
  });
  assert.deepEqual((await failing.deliver(tickMessage(failing.ref, 'health', NOW))).batchItemFailures, []);
  assert.equal(failing.sentMessages()[0]?.message.notBefore, NOW + 300_000);
  assert.ok(
    failing.cluster.requests.some((r) => r.startsWith('create Event')),
    'a Warning Event says the timer failed',
  );

  const unreadable = setUp();
  unreadable.cluster.failNext('get', new KubeApiError({ status: 500, reason: 'InternalError', message: 'etcd away', request: 'GET' }));
  assert.deepEqual((await unreadable.deliver(tickMessage(unreadable.ref, 'health', NOW))).batchItemFailures, []);
  assert.equal(unreadable.runs.length, 0);
  assert.equal(unreadable.sentMessages()[0]?.message.timer, 'health');
});

test('a paused or deleted object ends the chain; a paused one loses its mark so the resume restarts it', async () => {
  const paused = setUp({ annotations: { [PAUSED_ANNOTATION]: 'true', [timerMarkAnnotation('health')]: String(NOW) } });
  await paused.deliver(tickMessage(paused.ref, 'health', NOW));
  assert.equal(paused.runs.length, 0);
  assert.equal(paused.sender.sent.length, 0);
  assert.equal(timerMarkOf(paused.cluster.read(WIDGET, 'a', 'ns'), 'health'), undefined);

  const gone = setUp();
  await gone.cluster.client.delete(WIDGET, 'a', 'ns');
  assert.deepEqual((await gone.deliver(tickMessage(gone.ref, 'health', NOW))).batchItemFailures, []);
  assert.equal(gone.sender.sent.length, 0);
});

test('rate limit: a second with no place left hands the key back with its attempt; a Lease that cannot be read is a failed reconcile', async () => {
  const s = setUp({ rateLimit: { perSecond: 1 }, annotations: { [timerMarkAnnotation('health')]: String(NOW + 120_000) } });
  const other = s.cluster.put(WIDGET, {
    apiVersion: WIDGET.apiVersion,
    kind: 'Widget',
    metadata: { name: 'b', namespace: 'ns', annotations: { [timerMarkAnnotation('health')]: String(NOW + 120_000) } },
    spec: {},
  });
  const retrying = { ...newMessage({ ...s.ref, name: 'b', uid: other.metadata.uid }, 'Retry', NOW), attempt: 3 };
  await s.deliver(newMessage(s.ref, 'Modified', NOW), retrying);
  assert.equal(s.reconciles.length, 1, 'one place in the second');
  const [handedBack] = s.sentMessages();
  assert.equal(handedBack?.message.name, s.reconciles[0]?.name === 'a' ? 'b' : 'a');
  assert.ok((handedBack?.delaySeconds ?? 0) >= 1);
  assert.equal(handedBack?.message.attempt, handedBack?.message.name === 'b' ? 3 : 0, 'the attempt is unchanged: not a failure');

  const broken = setUp({ rateLimit: { perSecond: 1 } });
  broken.cluster.failNext('get', new KubeApiError({ status: 403, reason: 'Forbidden', message: 'leases is forbidden', request: 'GET' }));
  await broken.deliver(newMessage(broken.ref, 'Modified', NOW));
  assert.equal(broken.reconciles.length, 0);
  const [retry] = broken.sentMessages();
  assert.equal(retry?.message.reason, 'Retry');
  assert.equal(retry?.message.attempt, 1);
});
