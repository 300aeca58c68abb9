/**
 * Per-key mode in the runtime: with a FIFO work queue, delayed follow-ups go to the delay
 * queue (delivery.ts), a hand-back goes straight to the work queue, and the mover (mover.ts)
 * moves due follow-ups into the work queue with a deduplication id of their body and due time
 * — never one the sender chose. Fakes only: the
 * same paths against ElasticMQ are test/integration/per-key.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSEvent } from 'aws-lambda';
import { decodeMessage, encodeMessage, followUp, newMessage, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../../../src/core/handler/handler.ts';
import { moveOf, toDelayMoverHandler } from '../../../../src/core/per-key/mover.ts';
import { retryVisibilitySeconds } from '../../../../src/core/reconcile/delivery.ts';
import { requeueAfter } from '../../../../src/core/controller/result.ts';
import { noMetrics } from '../../../../src/core/reconcile/metrics.ts';
import { moveDeduplicationId } from '../../../../src/queue/fifo.ts';
import type { MessageSender } from '../../../../src/queue/port.ts';
import { REQUEUE_MARK_ANNOTATION, requeueMarkOf } from '../../../../src/contract/requeue-mark.ts';
import { silentLogger } from '../../../../src/observability/log.ts';
import { KubeApiError } from '../../../../src/kube/errors.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord } from '../fakes.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';
import type { ReconcileContext } from '../../../../src/core/controller/types.ts';

const WORK = 'http://q/000000000000/work.fifo';
const DELAY = 'http://q/000000000000/work-delay';
const DLQ = 'http://q/000000000000/work-dlq.fifo';
const WIDGET = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true } as const;

type WidgetReconcile = (object: KubeObject, ctx: ReconcileContext) => Promise<ReturnType<typeof requeueAfter>>;

function perKey(
  reconcile: WidgetReconcile,
  options: { delayQueueUrl?: string | undefined; now?: () => number; failMergePatch?: KubeApiError; annotations?: Record<string, string> } = {},
) {
  const cluster = fakeCluster();
  if (options.failMergePatch) cluster.failNext('mergePatch', options.failMergePatch, 5);
  const sender = recordingSender();
  const widget = cluster.put(WIDGET, {
    apiVersion: WIDGET.apiVersion,
    kind: 'Widget',
    metadata: { name: 'a', namespace: 'ns', ...(options.annotations ? { annotations: options.annotations } : {}) },
    spec: {},
  });
  let clock = 1_700_000_000_000;
  const handler = toSqsHandler(defineController({ ...WIDGET, reconcile }), {
    queueUrl: WORK,
    deadLetterQueueUrl: DLQ,
    delayQueueUrl: 'delayQueueUrl' in options ? options.delayQueueUrl : DELAY,
    clients: async () => cluster.client,
    sender,
    log: silentLogger,
    metrics: noMetrics,
    now: options.now ?? (() => clock),
    random: () => 0.5,
  });
  const message = newMessage(
    { cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'ns', name: 'a', uid: widget.metadata.uid },
    'Modified',
    clock - 1000,
  );
  const run = async (m: ReconcileMessage, remainingMs?: () => number) => {
    const event: SQSEvent = { Records: [sqsRecord(encodeMessage(m))] };
    return (await handler(event, lambdaContext(remainingMs))).batchItemFailures.length;
  };
  return {
    sender,
    message,
    run,
    advance: (ms: number) => {
      clock += ms;
    },
    now: () => clock,
    object: () => cluster.read(WIDGET, 'a', 'ns'),
    requests: () => cluster.requests,
    cluster,
  };
}

test('per-key: requeueAfter goes to the delay queue with its delay and due time, and is marked on the object; while it is pending, the next is merged', async () => {
  const s = perKey(async () => requeueAfter(30));
  assert.equal(await s.run(s.message), 0);
  const dueAt = s.now() + 30_000;
  s.advance(2_000);
  assert.equal(await s.run(s.message), 0);
  assert.equal(s.sender.sent.length, 1, 'the second requeue merged into the pending one');
  const [sent] = s.sender.sent;
  assert.equal(sent!.queueUrl, DELAY);
  assert.equal(sent!.delaySeconds, 30);
  assert.equal(sent!.attributes, undefined, 'nothing for the mover to trust: it derives the id itself');
  const body = decodeMessage(sent!.body);
  assert.ok(body.ok && body.message.reason === 'Requeue' && body.message.notBefore === dueAt);
  assert.equal(requeueMarkOf(s.object()), dueAt);
  assert.ok(s.requests().some((r) => r.startsWith('mergePatch Widget a') && r.includes(REQUEUE_MARK_ANNOTATION)));
});

test('per-key: when the marked requeue is due it is reconciled and its own requeue is marked; a replaced one is acknowledged without a reconcile', async () => {
  let reconciles = 0;
  const s = perKey(async () => {
    reconciles++;
    return requeueAfter(30);
  });
  assert.equal(await s.run(s.message), 0);
  const first = decodeMessage(s.sender.sent[0]!.body);
  assert.ok(first.ok);
  s.advance(31_000);
  assert.equal(await s.run(first.message), 0);
  assert.equal(reconciles, 2);
  assert.equal(s.sender.sent.length, 2);
  assert.equal(requeueMarkOf(s.object()), s.now() + 30_000);
  assert.equal(await s.run(first.message), 0, 'SQS delivered the consumed requeue again');
  assert.equal(reconciles, 2, 'the replaced requeue ran no reconcile');
  assert.equal(s.sender.sent.length, 2);
});

const tooLong = new KubeApiError({
  status: 422,
  reason: 'Invalid',
  message: 'metadata.annotations: Too long: must have at most 262144 bytes',
  request: 'PATCH',
});

test('per-key: a mark that cannot be written (annotations at the limit, 422; etcd away, 500) costs no redelivery: the requeue stands unmarked and is reconciled when due', async () => {
  for (const failure of [tooLong, new KubeApiError({ status: 500, reason: 'InternalError', message: 'etcd is away', request: 'PATCH' })]) {
    let reconciles = 0;
    const s = perKey(
      async () => {
        reconciles++;
        return requeueAfter(30);
      },
      { failMergePatch: failure, annotations: { [REQUEUE_MARK_ANNOTATION]: String(1_700_000_000_000 - 60_000) } },
    );
    assert.equal(await s.run(s.message), 0, `${failure.status}: acknowledged, not delivered again`);
    assert.equal(s.sender.sent.length, 1, 'sent first, once');
    assert.equal(requeueMarkOf(s.object()), 1_700_000_000_000 - 60_000, 'the older mark is still there');
    const sent = decodeMessage(s.sender.sent[0]!.body);
    assert.ok(sent.ok);
    s.advance(31_000);
    assert.equal(await s.run(sent.message), 0);
    assert.equal(reconciles, 2, 'the unmarked requeue was reconciled, not taken for a replaced one: the chain goes on');
    assert.equal(s.sender.sent.length, 2);
  }
});

test('per-key: the mark write is guarded by the resourceVersion: an invocation overtaken meanwhile never overwrites a newer mark', async () => {
  const newer = String(1_700_000_000_000 + 5_000);
  let cluster: ReturnType<typeof perKey>['cluster'] | undefined;
  const s = perKey(async () => {
    // Another invocation of the key (a thawed one, or a duplicate) marks its own requeue meanwhile.
    await cluster!.client.mergePatch(WIDGET, 'a', 'ns', { metadata: { annotations: { [REQUEUE_MARK_ANNOTATION]: newer } } });
    return requeueAfter(30);
  });
  cluster = s.cluster;
  assert.equal(await s.run(s.message), 0);
  assert.equal(s.object()?.metadata.annotations?.[REQUEUE_MARK_ANNOTATION], newer, 'the newer mark stands');
  assert.equal(s.sender.sent.length, 1, 'the requeue sent stands, unmarked');
});

test("per-key: a reconcile that wrote the primary's status still marks its requeue (the precondition is the version its own write left)", async () => {
  const s = perKey(async (_object, ctx) => {
    await ctx.updateStatus({ phase: 'Polling' });
    return requeueAfter(30);
  });
  assert.equal(await s.run(s.message), 0);
  assert.equal(requeueMarkOf(s.object()), s.now() + 30_000);
});

test('a record handed back after a failed send waits a short backoff, not the visibility timeout (ChangeMessageVisibility); crashed or foreign records keep theirs', async () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 50].map(retryVisibilitySeconds), [5, 10, 20, 40, 60, 60, 60]);
  assert.equal(retryVisibilitySeconds(Number.NaN), 5, 'no receive count: the first wait');
  const s = perKey(async () => requeueAfter(30));
  s.sender.failFor.add(DELAY);
  const fromWork = { ...sqsRecord(encodeMessage(s.message), 2), eventSourceARN: 'arn:aws:sqs:eu-west-1:000000000000:work.fifo' };
  const handler = toSqsHandler(defineController({ ...WIDGET, reconcile: async () => requeueAfter(30) }), {
    queueUrl: WORK,
    deadLetterQueueUrl: DLQ,
    delayQueueUrl: DELAY,
    clients: async () => s.cluster.client,
    sender: s.sender,
    log: silentLogger,
    metrics: noMetrics,
    now: s.now,
    random: () => 0.5,
  });
  const answer = await handler({ Records: [fromWork] }, lambdaContext());
  assert.deepEqual(answer.batchItemFailures, [{ itemIdentifier: fromWork.messageId }], 'handed back');
  assert.deepEqual(
    s.sender.visibility,
    [{ queueUrl: WORK, entries: [{ receiptHandle: fromWork.receiptHandle, seconds: 10 }] }],
    'visible again after 10 s (second receive)',
  );
  const foreign = sqsRecord(encodeMessage(s.message));
  await handler({ Records: [foreign] }, lambdaContext());
  assert.equal(s.sender.visibility.length, 1, 'a record of another queue is left alone');
});

test('per-key: a retry goes to the delay queue; a hand-back goes straight to the work queue, unmerged', async () => {
  const failing = perKey(async () => {
    throw new Error('boom');
  });
  assert.equal(await failing.run(failing.message), 0);
  assert.equal(failing.sender.sent[0]?.queueUrl, DELAY);
  assert.ok((failing.sender.sent[0]?.delaySeconds ?? 0) > 0);

  const late = perKey(async () => requeueAfter(30));
  let calls = 0;
  assert.equal(await late.run(late.message, () => (calls++ === 0 ? 60_000 : 10)), 0);
  assert.equal(late.sender.sent.length, 1);
  assert.equal(late.sender.sent[0]?.queueUrl, WORK);
  assert.equal(late.sender.sent[0]?.delaySeconds, 0);
  assert.equal(late.sender.sent[0]?.attributes, undefined);
  assert.equal(late.sender.sent[0]?.deduplicationId, undefined, 'the port gives it a fresh id');
});

test('per-key without a delay queue URL: the requeue cannot be sent, the record comes back (not lost), naming the variable', async () => {
  const saved = process.env.OPERLESS_DELAY_QUEUE_URL;
  delete process.env.OPERLESS_DELAY_QUEUE_URL;
  try {
    const s = perKey(async () => requeueAfter(30), { delayQueueUrl: undefined });
    assert.equal(await s.run(s.message), 1);
    assert.deepEqual(s.sender.sent, []);
  } finally {
    if (saved !== undefined) process.env.OPERLESS_DELAY_QUEUE_URL = saved;
  }
});

test('mover: a due follow-up moves to the work queue with an id of its body and due time; one short of notBefore goes back to the delay queue; a failed send is reported', async () => {
  const now = 1_700_000_000_000;
  const sentAt = now - 30_000;
  const base = newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'ns', name: 'a' }, 'Modified', now - 5000);
  const retry = encodeMessage(followUp(base, { reason: 'Retry', attempt: 1 }));
  const requeue = encodeMessage(followUp(base, { reason: 'Requeue', attempt: 0, notBefore: now - 1000 }));
  const later = encodeMessage(followUp(base, { reason: 'Requeue', attempt: 0, notBefore: now + 1_000_000 }));
  const record = (body: string, sent = sentAt) => {
    const r = sqsRecord(body);
    return { ...r, attributes: { ...r.attributes, SentTimestamp: String(sent) } };
  };
  assert.deepEqual(
    moveOf(record(retry), now),
    { key: 'Widget/ns/a', to: 'work', deduplicationId: moveDeduplicationId(retry, sentAt) },
    'no notBefore: due when SQS says it was sent',
  );
  assert.deepEqual(
    moveOf(record(requeue), now),
    { key: 'Widget/ns/a', to: 'work', deduplicationId: moveDeduplicationId(requeue, now - 1000) },
    'its notBefore is its due time',
  );
  assert.deepEqual(moveOf(record(later), now), { key: 'Widget/ns/a', to: 'delay', delaySeconds: 900 });
  assert.deepEqual(moveOf(record('not json'), now), { key: undefined, to: 'work', deduplicationId: moveDeduplicationId('not json', sentAt) });
  assert.deepEqual(
    moveOf({ body: retry, attributes: {} }, now),
    { key: 'Widget/ns/a', to: 'work', deduplicationId: undefined },
    "nothing to derive it from: a fresh id (the port's)",
  );

  const sender = recordingSender();
  const mover = toDelayMoverHandler({ queueUrl: WORK, delayQueueUrl: DELAY, sender, log: silentLogger, now: () => now });
  const records = [record(retry), record(later), record('not json')];
  assert.deepEqual(await mover({ Records: records }), { batchItemFailures: [] });
  assert.deepEqual(sender.sent, [
    { queueUrl: WORK, body: retry, deduplicationId: moveDeduplicationId(retry, sentAt) },
    { queueUrl: DELAY, body: later, delaySeconds: 900 },
    { queueUrl: WORK, body: 'not json', deduplicationId: moveDeduplicationId('not json', sentAt) },
  ]);
  sender.failFor.add(WORK);
  const failing = [record(retry), record(later)];
  assert.deepEqual(await mover({ Records: failing }), { batchItemFailures: [{ itemIdentifier: failing[0]!.messageId }] });
});

// Issue 29 item 10: the mover used the sender's `operless.mergeId` attribute as the FIFO
// deduplication id, so whoever could send to the delay queue could pre-seed the id of another
// key's retry (retry ids are a predictable hash) and SQS dropped that retry for 5 minutes.
test('mover: a sender-chosen merge id is never used; only an identical body due at the same ms is merged', async () => {
  const now = 1_700_000_000_000;
  const victim = newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'victim', name: 'a' }, 'Modified', now - 5000);
  const attacker = newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'tenant', name: 'x' }, 'Modified', now - 5000);
  const withAttribute = (body: string, sentAt: number, id: string) => {
    const r = sqsRecord(body);
    return {
      ...r,
      attributes: { ...r.attributes, SentTimestamp: String(sentAt) },
      messageAttributes: { 'operless.mergeId': { stringValue: id, dataType: 'String', stringListValues: [], binaryListValues: [] } },
    };
  };
  const sender = recordingSender();
  const mover = toDelayMoverHandler({ queueUrl: WORK, delayQueueUrl: DELAY, sender, log: silentLogger, now: () => now });
  const victimRetry = encodeMessage(followUp(victim, { reason: 'Retry', attempt: 1 }));
  const injected = encodeMessage(followUp(attacker, { reason: 'Retry', attempt: 1 }));
  await mover({ Records: [withAttribute(injected, now - 2000, 'the-victims-id'), withAttribute(victimRetry, now - 2000, 'the-victims-id')] });
  const [first, second] = sender.sent;
  assert.ok(first?.deduplicationId && second?.deduplicationId);
  assert.notEqual(first.deduplicationId, 'the-victims-id');
  assert.notEqual(first.deduplicationId, second.deduplicationId, 'another body never shares an id, whatever attribute it carries');
  // The same body moved twice (a redelivery after the move) keeps its id: SQS drops the copy.
  await mover({ Records: [withAttribute(victimRetry, now - 2000, 'other')] });
  assert.equal(sender.sent[2]?.deduplicationId, second.deduplicationId);
  // Sent at another ms: another follow-up, not merged.
  await mover({ Records: [withAttribute(victimRetry, now - 1999, 'the-victims-id')] });
  assert.notEqual(sender.sent[3]?.deduplicationId, second.deduplicationId);
});

test('per-key: a batch from the delay queue (its event source invokes the same function) is moved, not reconciled', async () => {
  let reconciled = 0;
  const s = perKey(async () => {
    reconciled++;
    return requeueAfter(30);
  });
  const record = { ...sqsRecord(encodeMessage(s.message)), eventSourceARN: 'arn:aws:sqs:eu-west-1:000000000000:work-delay' };
  const handler = toSqsHandler(
    defineController({
      ...WIDGET,
      reconcile: async () => {
        reconciled++;
        return requeueAfter(1);
      },
    }),
    {
      queueUrl: WORK,
      deadLetterQueueUrl: DLQ,
      delayQueueUrl: DELAY,
      sender: s.sender,
      log: silentLogger,
      metrics: noMetrics,
      clients: async () => {
        throw new Error('no cluster needed');
      },
    },
  );
  assert.deepEqual(await handler({ Records: [record] }, lambdaContext()), { batchItemFailures: [] });
  assert.equal(reconciled, 0);
  assert.deepEqual(s.sender.sent, [{ queueUrl: WORK, body: record.body }], "SentTimestamp 0 (the fake's): no due time to derive an id from, a fresh one");
});

// A production-like blackhole (the SDK's retries, each attempt up to its request timeout) made a
// stalled move outlive the function's timeout, and a timed-out invocation acknowledges nothing.
test('mover: a move still in flight at the answer deadline, and one not started by then, are handed back; the rest are acknowledged', async () => {
  const now = 1_700_000_000_000;
  const base = newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'ns', name: 'a' }, 'Modified', now - 5000);
  const bodies = ['a', 'b', 'c'].map((name) => encodeMessage(followUp({ ...base, name }, { reason: 'Retry', attempt: 1 })));
  const sent: string[] = [];
  const stalling: MessageSender = {
    async send(_queueUrl, message) {
      sent.push(message.body);
      if (message.body === bodies[1]) return new Promise<never>(() => {}); // accepted and never answered
    },
  };
  // One send at a time: the first is moved, the second stalls until the deadline, the third never starts.
  const mover = toDelayMoverHandler({ queueUrl: WORK, delayQueueUrl: DELAY, sender: stalling, concurrency: 1, log: silentLogger, now: () => now });
  const started = Date.now();
  const records = bodies.map((body) => sqsRecord(body));
  const response = await mover(
    { Records: records },
    lambdaContext(() => 600 - (Date.now() - started)),
  );
  assert.deepEqual(response, { batchItemFailures: [{ itemIdentifier: records[1]!.messageId }, { itemIdentifier: records[2]!.messageId }] });
  assert.deepEqual(sent, [bodies[0], bodies[1]], 'nothing is started after the deadline');
});
