import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSEvent } from 'aws-lambda';
import { encodeMessage, followUp, newMessage, decodeMessage, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_FAILED_AT, DLQ_ATTRIBUTE_REASON } from '../../../../src/contract/dlq.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { toSqsHandler, type HandlerOptions } from '../../../../src/core/handler/handler.ts';
import { done, requeueAfter } from '../../../../src/core/controller/result.ts';
import { TerminalError } from '../../../../src/core/controller/errors.ts';
import type { ControllerSpec } from '../../../../src/core/controller/types.ts';
import type { KindRef, KubeObject } from '../../../../src/kube/types.ts';
import { KubeApiError } from '../../../../src/kube/errors.ts';
import { resetEventMemory } from '../../../../src/kube/events.ts';
import { EVENTS } from '../../../../src/kube/kinds.ts';
import { silentLogger } from '../../../../src/observability/log.ts';
import { noMetrics } from '../../../../src/core/reconcile/metrics.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord, type FakeCluster } from '../fakes.ts';

const NOW = 1_700_000_000_000;
const QUEUE = 'http://q/work';
const DLQ = 'http://q/work-dlq';
const WIDGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };

interface Setup {
  cluster: FakeCluster;
  sender: ReturnType<typeof recordingSender>;
  calls: string[];
  run(messages: (ReconcileMessage | string)[], opts?: { remainingMs?: () => number }): Promise<string[]>;
  widget(name: string, extra?: Partial<KubeObject['metadata']>): KubeObject;
}

function setup(spec: Partial<ControllerSpec> = {}, options: Partial<HandlerOptions> = {}): Setup {
  resetEventMemory();
  const cluster = fakeCluster();
  const sender = recordingSender();
  const calls: string[] = [];
  const controller = defineController({
    ...WIDGET,
    async reconcile(obj) {
      calls.push(`reconcile ${obj.metadata.name}`);
      return done();
    },
    retry: { maxAttempts: 3 },
    ...spec,
  });
  const handler = toSqsHandler(controller, {
    queueUrl: QUEUE,
    deadLetterQueueUrl: DLQ,
    clients: async () => cluster.client,
    sender,
    log: silentLogger,
    metrics: noMetrics,
    now: () => NOW,
    random: () => 1 - Number.EPSILON,
    ...options,
  });
  return {
    cluster,
    sender,
    calls,
    async run(messages, opts = {}) {
      const event: SQSEvent = { Records: messages.map((m) => sqsRecord(typeof m === 'string' ? m : encodeMessage(m))) };
      const res = await handler(event, lambdaContext(opts.remainingMs));
      return res.batchItemFailures.map((f) => event.Records.findIndex((r) => r.messageId === f.itemIdentifier)).map(String);
    },
    widget: (name, extra = {}) =>
      cluster.put(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name, namespace: 'ns', ...extra }, spec: {} }),
  };
}

const msgFor = (obj: KubeObject, extra: Partial<ReconcileMessage> = {}): ReconcileMessage => ({
  ...newMessage(
    { cluster: 'c1', apiVersion: obj.apiVersion, kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name, uid: obj.metadata.uid },
    'Modified',
    NOW - 2000,
  ),
  ...extra,
});
const bodyOf = (s: { body: string }) => {
  const d = decodeMessage(s.body);
  assert.ok(d.ok, 'follow-up must be a valid message');
  return d.message;
};

test('done: reconciled once, nothing sent, all records acknowledged', async () => {
  const s = setup();
  const w = s.widget('a');
  assert.deepEqual(await s.run([msgFor(w), msgFor(w, { reason: 'Owned' }), msgFor(w, { reason: 'Resync' })]), []);
  assert.deepEqual(s.calls, ['reconcile a']);
  assert.deepEqual(s.sender.sent, []);
});

test('requeueAfter: a Requeue message with that delay goes to the work queue', async () => {
  const s = setup({ reconcile: async () => requeueAfter(42) });
  const w = s.widget('a');
  assert.deepEqual(await s.run([msgFor(w)]), []);
  assert.equal(s.sender.sent.length, 1);
  const sent = s.sender.sent[0]!;
  assert.equal(sent.queueUrl, QUEUE);
  assert.equal(sent.delaySeconds, 42);
  assert.equal(bodyOf(sent).reason, 'Requeue');
});

test('an error: a Retry with attempt + 1 and backoff delay', async () => {
  const s = setup({
    reconcile: async () => {
      throw new Error('flaky');
    },
  });
  const w = s.widget('a');
  assert.deepEqual(await s.run([msgFor(w, { attempt: 1, reason: 'Retry' })]), []);
  const m = bodyOf(s.sender.sent[0]!);
  assert.equal(m.attempt, 2);
  assert.equal(m.reason, 'Retry');
  assert.equal(s.sender.sent[0]!.delaySeconds, 2);
});

test('retries exhausted: DLQ with the original body and attributes, plus a Warning Event', async () => {
  const s = setup({
    reconcile: async () => {
      throw new Error('still broken');
    },
  });
  const w = s.widget('a');
  const last = msgFor(w, { attempt: 2, reason: 'Retry' });
  assert.deepEqual(await s.run([last]), []);
  assert.equal(s.sender.sent.length, 1);
  const dl = s.sender.sent[0]!;
  assert.equal(dl.queueUrl, DLQ);
  assert.equal(dl.body, encodeMessage(last));
  assert.equal(dl.attributes?.[DLQ_ATTRIBUTE_REASON], 'RetriesExhausted');
  assert.match(dl.attributes?.[DLQ_ATTRIBUTE_ERROR] ?? '', /gave up after 3 attempts: still broken/);
  assert.equal(dl.attributes?.[DLQ_ATTRIBUTE_FAILED_AT], new Date(NOW).toISOString());
  const events = [...s.cluster.objects.values()].filter((o) => o.kind === 'Event');
  assert.equal(events.length, 1);
  assert.equal(events[0]?.type, 'Warning');
  assert.equal(events[0]?.reason, 'ReconcileFailed');
  assert.deepEqual((events[0]?.regarding as { uid: string } | undefined)?.uid, w.metadata.uid);
});

test('TerminalError: DLQ at once and a Warning Event with its reason', async () => {
  const s = setup({
    reconcile: async () => {
      throw new TerminalError('size must be even', { reason: 'InvalidSpec' });
    },
  });
  const w = s.widget('a');
  assert.deepEqual(await s.run([msgFor(w)]), []);
  assert.equal(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_REASON], 'TerminalError');
  const event = [...s.cluster.objects.values()].find((o) => o.kind === 'Event');
  assert.equal(event?.reason, 'InvalidSpec');
  assert.equal(event?.note, 'size must be even');
});

test('409 Conflict from the reconcile: prompt retry after 1 s', async () => {
  const s = setup({
    reconcile: async () => {
      throw new KubeApiError({ status: 409, reason: 'Conflict', message: 'modified', request: 'PUT' });
    },
  });
  const w = s.widget('a');
  await s.run([msgFor(w)]);
  assert.equal(s.sender.sent[0]?.delaySeconds, 1);
  assert.equal(bodyOf(s.sender.sent[0]!).attempt, 1);
});

test('not found: done without calling reconcile', async () => {
  const s = setup();
  assert.deepEqual(await s.run([newMessage({ cluster: 'c1', ...WIDGET, namespace: 'ns', name: 'ghost' }, 'Added', NOW)]), []);
  assert.deepEqual(s.calls, []);
  assert.deepEqual(s.sender.sent, []);
});

test('a recreated object (other uid): the message is about the old one, done', async () => {
  const s = setup();
  const w = s.widget('a');
  await s.run([msgFor(w, { uid: 'the-old-uid' })]);
  assert.deepEqual(s.calls, []);
});

test('a recreated object with a Retry of the old uid in the same batch: the live object is reconciled, with its own attempt', async () => {
  const seen: ReconcileMessage[] = [];
  const s = setup({
    reconcile: async (_obj, ctx) => {
      seen.push(ctx.message);
      throw new Error('transient');
    },
  });
  const w = s.widget('a');
  // maxAttempts is 3: had the old object's attempt 2 carried over, this first failure of the new object would dead-letter it.
  const retryOfOld = msgFor(w, { uid: 'the-old-uid', reason: 'Retry', attempt: 2, observedAt: NOW - 60_000 });
  assert.deepEqual(await s.run([retryOfOld, msgFor(w, { reason: 'Added' })]), []);
  assert.equal(seen.length, 1, 'the new object is reconciled, not skipped as the old one');
  assert.equal(seen[0]!.attempt, 0);
  assert.equal(seen[0]!.reason, 'Added');
  assert.equal(s.sender.sent.length, 1);
  assert.equal(s.sender.sent[0]!.queueUrl, QUEUE, 'a retry, not the DLQ');
  const retry = bodyOf(s.sender.sent[0]!);
  assert.equal(retry.attempt, 1);
  assert.equal(retry.uid, undefined);
});

test('finalize given: the finalizer is added before reconcile', async () => {
  const s = setup({ finalize: async () => done() });
  const w = s.widget('a');
  await s.run([msgFor(w)]);
  assert.deepEqual(s.cluster.read(WIDGET, 'a', 'ns')?.metadata.finalizers, ['test.operless.dev/finalizer']);
  assert.deepEqual(s.calls, ['reconcile a']);
});

test('deletion with our finalizer: finalize runs, then the finalizer is removed (object goes)', async () => {
  const finalized: string[] = [];
  const s = setup({
    finalize: async (o) => {
      finalized.push(o.metadata.name);
      return done();
    },
  });
  const w = s.widget('a', { finalizers: ['test.operless.dev/finalizer'], deletionTimestamp: '2024-01-01T00:00:00Z' });
  assert.deepEqual(await s.run([msgFor(w, { reason: 'Modified' })]), []);
  assert.deepEqual(finalized, ['a']);
  assert.deepEqual(s.calls, [], 'reconcile is not called on a deleting object');
  assert.equal(s.cluster.read(WIDGET, 'a', 'ns'), undefined);
});

test('deletion: finalize asking to requeue keeps the finalizer and requeues', async () => {
  const s = setup({ finalize: async () => requeueAfter(10) });
  const w = s.widget('a', { finalizers: ['test.operless.dev/finalizer', 'other.io/x'], deletionTimestamp: '2024-01-01T00:00:00Z' });
  await s.run([msgFor(w)]);
  assert.deepEqual(s.cluster.read(WIDGET, 'a', 'ns')?.metadata.finalizers, ['test.operless.dev/finalizer', 'other.io/x']);
  assert.equal(s.sender.sent[0]?.delaySeconds, 10);
});

test('poison: moved to the DLQ as InvalidMessage and acknowledged; other records go on', async () => {
  const s = setup();
  const w = s.widget('a');
  assert.deepEqual(await s.run(['{"v":1,"kind":42}', msgFor(w)]), []);
  assert.equal(s.sender.sent.length, 1);
  assert.equal(s.sender.sent[0]?.body, '{"v":1,"kind":42}');
  assert.equal(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_REASON], 'InvalidMessage');
  assert.match(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_ERROR] ?? '', /missing field "cluster"/);
  assert.deepEqual(s.calls, ['reconcile a']);
});

test('poison whose DLQ send fails: reported in batchItemFailures for SQS redrive', async () => {
  const s = setup();
  s.sender.failFor.add(DLQ);
  assert.deepEqual(await s.run(['garbage']), ['0']);
});

test('namespace-scoped: a message outside the namespaces goes to the DLQ as UnknownNamespace, nothing is read; one inside is reconciled', async () => {
  const s = setup({}, { namespaces: ['team-a'] });
  const outside = newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: WIDGET.kind, namespace: 'team-b', name: 'b' }, 'Added', NOW);
  assert.deepEqual(await s.run([outside]), []);
  assert.equal(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_REASON], 'UnknownNamespace');
  assert.match(
    s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_ERROR] ?? '',
    /namespace "team-b" is not one this function runs for \(OPERLESS_NAMESPACES=team-a\)/,
  );
  assert.deepEqual(s.calls, [], 'nothing reconciled outside the namespaces');
  // The fake's objects live in "ns": a scope listing it reconciles them.
  const t = setup({}, { namespaces: ['ns'] });
  await t.run([msgFor(t.widget('a'))]);
  assert.deepEqual(t.calls, ['reconcile a']);
});

test('unknown kind: DLQ UnknownKind', async () => {
  const s = setup();
  await s.run([newMessage({ cluster: 'c1', apiVersion: 'v1', kind: 'Secret', namespace: 'ns', name: 'x' }, 'Added', NOW)]);
  assert.equal(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_REASON], 'UnknownKind');
  assert.match(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_ERROR] ?? '', /no controller in this function serves v1 Secret/);
});

test("follow-up send fails: only that key's records are in batchItemFailures", async () => {
  const s = setup({ reconcile: async (o) => (o.metadata.name === 'a' ? requeueAfter(5) : done()) });
  const a = s.widget('a');
  const b = s.widget('b');
  s.sender.failFor.add(QUEUE);
  assert.deepEqual(await s.run([msgFor(a), msgFor(b), msgFor(a, { reason: 'Owned' })]), ['0', '2']);
});

test('missing queue URL: a requeue cannot be sent, so the record is failed (not lost)', async () => {
  const saved = process.env.OPERLESS_QUEUE_URL;
  delete process.env.OPERLESS_QUEUE_URL;
  try {
    const s2 = setup({ reconcile: async () => requeueAfter(5) }, { queueUrl: undefined });
    const w = s2.widget('a');
    assert.deepEqual(await s2.run([msgFor(w)]), ['0']);
  } finally {
    if (saved !== undefined) process.env.OPERLESS_QUEUE_URL = saved;
  }
});

test('an unexpected exception in one key fails only that key', async () => {
  const s = setup();
  const a = s.widget('a');
  const b = s.widget('b');
  const broken = {
    ...s.cluster.client,
    with: () => {
      throw new Error('bug in the runtime');
    },
  };
  const handler = toSqsHandler(defineController({ ...WIDGET, reconcile: async () => done() }), {
    queueUrl: QUEUE,
    deadLetterQueueUrl: DLQ,
    sender: s.sender,
    log: silentLogger,
    metrics: noMetrics,
    clients: async (cluster) => (cluster === 'broken' ? broken : s.cluster.client),
  });
  const records = [sqsRecord(encodeMessage(msgFor(a, { cluster: 'broken' }))), sqsRecord(encodeMessage(msgFor(b)))];
  const res = await handler({ Records: records }, lambdaContext());
  assert.deepEqual(res.batchItemFailures, [{ itemIdentifier: records[0]!.messageId }]);
});

test('GET fails with a server error: retried with backoff', async () => {
  const s = setup();
  const w = s.widget('a');
  s.cluster.failNext('get', new KubeApiError({ status: 500, reason: 'InternalError', message: 'etcd down', request: 'GET' }));
  assert.deepEqual(await s.run([msgFor(w)]), []);
  assert.equal(bodyOf(s.sender.sent[0]!).attempt, 1);
});

test('budget: with no time left keys are handed back unchanged, not failed, not reconciled', async () => {
  const s = setup({}, { budgetReserveMs: 5000 });
  const a = s.widget('a');
  const m = msgFor(a, { attempt: 2, reason: 'Retry' });
  // The invocation starts with more than the reserve (less would be refused: handler-reserve.test.ts)
  // and is below it by the time the key would start.
  let calls = 0;
  assert.deepEqual(await s.run([m], { remainingMs: () => (calls++ === 0 ? 6000 : 4000) }), []);
  assert.deepEqual(s.calls, []);
  assert.equal(s.sender.sent.length, 1);
  assert.equal(s.sender.sent[0]?.delaySeconds, 0);
  assert.deepEqual(bodyOf(s.sender.sent[0]!), m);
});

test('budget: keys started while time remained finish; later ones are deferred', async () => {
  let remaining = 20_000;
  const s = setup(
    {
      reconcile: async (o) => {
        remaining -= 8000;
        s.calls.push(o.metadata.name);
        return done();
      },
    },
    { budgetReserveMs: 5000, concurrency: 1 },
  );
  const ms = ['a', 'b', 'c'].map((n) => msgFor(s.widget(n)));
  assert.deepEqual(await s.run(ms, { remainingMs: () => remaining }), []);
  assert.deepEqual(s.calls, ['a', 'b']);
  assert.deepEqual(
    s.sender.sent.map((x) => bodyOf(x).name),
    ['c'],
  );
});

test('not yet due (notBefore): re-delayed without reconciling', async () => {
  const s = setup();
  const w = s.widget('a');
  const m = followUp(msgFor(w), { reason: 'Requeue', attempt: 0, notBefore: NOW + 2000 * 1000 });
  await s.run([m]);
  assert.deepEqual(s.calls, []);
  assert.equal(s.sender.sent[0]?.delaySeconds, 900);
  assert.equal(bodyOf(s.sender.sent[0]!).notBefore, NOW + 2000 * 1000);
});

test('keys run concurrently up to the bound', async () => {
  let running = 0;
  let peak = 0;
  const s = setup(
    {
      reconcile: async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return done();
      },
    },
    { concurrency: 2 },
  );
  await s.run(['a', 'b', 'c', 'd', 'e'].map((n) => msgFor(s.widget(n))));
  assert.equal(peak, 2);
});

test('budget: on a queue that never answers, shortening the wait of handed-back records stops at the answer deadline', { timeout: 30_000 }, async () => {
  // The follow-up send failed (its retries spent); the visibility change after it never answers.
  const unanswered = {
    send: async () => {
      throw new Error('TimeoutError: no response within 10000 ms');
    },
    changeVisibility: () => new Promise<void>(() => {}),
  };
  const s = setup({ reconcile: async () => requeueAfter(3) }, { sender: unanswered, budgetReserveMs: 1000 });
  const timeoutAt = Date.now() + 1500;
  // Before the fix the handler waited for the visibility change: it never answered.
  assert.deepEqual(await s.run([msgFor(s.widget('a'))], { remainingMs: () => timeoutAt - Date.now() }), ['0'], 'answered, the record handed back');
});

test('the reconcile signal is aborted when the budget runs out', async () => {
  let aborted = false;
  const s = setup(
    {
      reconcile: async (_o, ctx) => {
        await new Promise<void>((resolve) =>
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          }),
        );
        throw ctx.signal.reason;
      },
    },
    { budgetReserveMs: 1000 },
  );
  const w = s.widget('a');
  assert.deepEqual(await s.run([msgFor(w)], { remainingMs: () => 1020 }), []);
  assert.equal(aborted, true);
  assert.equal(bodyOf(s.sender.sent[0]!).reason, 'Retry');
});

test('updateStatus writes only when the status changed and sets observedGeneration', async () => {
  const writes: boolean[] = [];
  const s = setup({
    reconcile: async (_o, ctx) => {
      writes.push(await ctx.updateStatus({ phase: 'Ready' }));
      writes.push(await ctx.updateStatus({ phase: 'Ready' }));
      return done();
    },
  });
  const w = s.widget('a');
  await s.run([msgFor(w)]);
  assert.deepEqual(writes, [true, false]);
  assert.deepEqual(s.cluster.read(WIDGET, 'a', 'ns')?.status, { phase: 'Ready', observedGeneration: 1 });
  await s.run([msgFor(w)]);
  assert.deepEqual(writes, [true, false, false, false], 'unchanged on the next reconcile too');
});

test('Warning Events repeat into a series, not new Events', async () => {
  const s = setup({
    reconcile: async () => {
      throw new TerminalError('bad', { reason: 'InvalidSpec' });
    },
  });
  const w = s.widget('a');
  await s.run([msgFor(w)]);
  resetEventMemory();
  await s.run([msgFor(w)]);
  const events = [...s.cluster.objects.values()].filter((o) => o.kind === EVENTS.kind);
  assert.equal(events.length, 1);
  assert.deepEqual((events[0]?.series as { count: number } | undefined)?.count, 2);
});

test('a message without a namespace for a namespaced kind is terminal (DLQ), not retried', async () => {
  const s = setup();
  await s.run([newMessage({ cluster: 'c1', ...WIDGET, name: 'x' }, 'Added', NOW)]);
  assert.deepEqual(s.calls, []);
  assert.equal(s.sender.sent[0]?.queueUrl, DLQ);
  assert.equal(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_REASON], 'TerminalError');
  assert.match(s.sender.sent[0]?.attributes?.[DLQ_ATTRIBUTE_ERROR] ?? '', /Widget is namespaced but the message for "x" has no namespace/);
});
