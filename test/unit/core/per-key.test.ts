/**
 * Per-key mode in the runtime: with a FIFO work queue, delayed follow-ups go to the delay
 * queue with their merge id (delivery.ts), a hand-back goes straight to the work queue, and
 * the mover (mover.ts) moves due follow-ups into the work queue with that id. Fakes only: the
 * same paths against ElasticMQ are test/integration/per-key.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSEvent } from 'aws-lambda';
import { encodeMessage, followUp, newMessage, objectKey, type ReconcileMessage } from '../../../src/contract/message.ts';
import { defineController } from '../../../src/core/controller.ts';
import { toSqsHandler } from '../../../src/core/handler.ts';
import { moveOf, toDelayMoverHandler } from '../../../src/core/mover.ts';
import { requeueAfter } from '../../../src/core/result.ts';
import { noMetrics } from '../../../src/core/metrics.ts';
import { MERGE_ID_ATTRIBUTE, requeueMergeId } from '../../../src/queue/fifo.ts';
import { silentLogger } from '../../../src/observability/log.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord } from './fakes.ts';

const WORK = 'http://q/000000000000/work.fifo';
const DELAY = 'http://q/000000000000/work-delay';
const DLQ = 'http://q/000000000000/work-dlq.fifo';
const WIDGET = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true } as const;

function perKey(reconcile: () => Promise<ReturnType<typeof requeueAfter>>, options: { delayQueueUrl?: string | undefined; now?: () => number } = {}) {
  const cluster = fakeCluster();
  const sender = recordingSender();
  const widget = cluster.put(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name: 'a', namespace: 'ns' }, spec: {} });
  let clock = 1_700_000_000_000;
  const handler = toSqsHandler(defineController({ ...WIDGET, reconcile }), {
    queueUrl: WORK, deadLetterQueueUrl: DLQ, delayQueueUrl: 'delayQueueUrl' in options ? options.delayQueueUrl : DELAY,
    clients: async () => cluster.client, sender, log: silentLogger, metrics: noMetrics, now: options.now ?? (() => clock), random: () => 0.5,
  });
  const message = newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'ns', name: 'a', uid: widget.metadata.uid }, 'Modified', clock - 1000);
  const run = async (m: ReconcileMessage, remainingMs?: () => number) => {
    const event: SQSEvent = { Records: [sqsRecord(encodeMessage(m))] };
    return (await handler(event, lambdaContext(remainingMs))).batchItemFailures.length;
  };
  return { sender, message, run, advance: (ms: number) => { clock += ms; }, now: () => clock };
}

test('per-key: requeueAfter goes to the delay queue with its delay and merge id; equal requeues due in one bucket share the id', async () => {
  const s = perKey(async () => requeueAfter(30));
  assert.equal(await s.run(s.message), 0);
  s.advance(2_000);
  assert.equal(await s.run(s.message), 0);
  assert.equal(s.sender.sent.length, 2);
  const [first, second] = s.sender.sent;
  for (const sent of [first!, second!]) {
    assert.equal(sent.queueUrl, DELAY);
    assert.equal(sent.delaySeconds, 30);
  }
  const id = first!.attributes?.[MERGE_ID_ATTRIBUTE];
  const dueAt = s.now() - 2_000 + 30_000;
  assert.equal(id, requeueMergeId({ key: objectKey(s.message), reason: 'Requeue', delaySeconds: 30, dueAt }));
  // Due 2 s apart: the same bucket unless a 30 s boundary falls between them.
  const sameBucket = Math.floor(dueAt / 30_000) === Math.floor((dueAt + 2_000) / 30_000);
  assert.equal(second!.attributes?.[MERGE_ID_ATTRIBUTE] === id, sameBucket);
});

test('per-key: a retry goes to the delay queue with a merge id; a hand-back goes straight to the work queue, unmerged', async () => {
  const failing = perKey(async () => { throw new Error('boom'); });
  assert.equal(await failing.run(failing.message), 0);
  assert.equal(failing.sender.sent[0]?.queueUrl, DELAY);
  assert.ok(failing.sender.sent[0]?.attributes?.[MERGE_ID_ATTRIBUTE]);

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

test('mover: a due follow-up moves to the work queue with its merge id; one short of notBefore goes back to the delay queue; a failed send is reported', async () => {
  const now = 1_700_000_000_000;
  const base = newMessage({ cluster: 'c1', apiVersion: WIDGET.apiVersion, kind: 'Widget', namespace: 'ns', name: 'a' }, 'Modified', now - 5000);
  const due = encodeMessage(followUp(base, { reason: 'Requeue', attempt: 0 }));
  const later = encodeMessage(followUp(base, { reason: 'Requeue', attempt: 0, notBefore: now + 1_000_000 }));
  const withId = (body: string, id?: string) => {
    const r = sqsRecord(body);
    return id ? { ...r, messageAttributes: { [MERGE_ID_ATTRIBUTE]: { stringValue: id, dataType: 'String', stringListValues: [], binaryListValues: [] } } } : r;
  };
  assert.deepEqual(moveOf(withId(due, 'm1'), now), { key: 'Widget/ns/a', to: 'work', deduplicationId: 'm1' });
  assert.deepEqual(moveOf(withId(later, 'm2'), now), { key: 'Widget/ns/a', to: 'delay', delaySeconds: 900, mergeId: 'm2' });
  assert.deepEqual(moveOf(withId('not json'), now), { key: undefined, to: 'work', deduplicationId: undefined });

  const sender = recordingSender();
  const mover = toDelayMoverHandler({ queueUrl: WORK, delayQueueUrl: DELAY, sender, log: silentLogger, now: () => now });
  const records = [withId(due, 'm1'), withId(later, 'm2'), withId('not json')];
  assert.deepEqual(await mover({ Records: records }), { batchItemFailures: [] });
  assert.deepEqual(sender.sent, [
    { queueUrl: WORK, body: due, deduplicationId: 'm1' },
    { queueUrl: DELAY, body: later, delaySeconds: 900, attributes: { [MERGE_ID_ATTRIBUTE]: 'm2' } },
    { queueUrl: WORK, body: 'not json' },
  ]);
  sender.failFor.add(WORK);
  const failing = [withId(due, 'm1'), withId(later, 'm2')];
  assert.deepEqual(await mover({ Records: failing }), { batchItemFailures: [{ itemIdentifier: failing[0]!.messageId }] });
});

test('per-key: a batch from the delay queue (its event source invokes the same function) is moved, not reconciled', async () => {
  let reconciled = 0;
  const s = perKey(async () => { reconciled++; return requeueAfter(30); });
  const record = { ...sqsRecord(encodeMessage(s.message)), eventSourceARN: 'arn:aws:sqs:eu-west-1:000000000000:work-delay' };
  const withId = { ...record, messageAttributes: { [MERGE_ID_ATTRIBUTE]: { stringValue: 'm1', dataType: 'String', stringListValues: [], binaryListValues: [] } } };
  const handler = toSqsHandler(defineController({ ...WIDGET, reconcile: async () => { reconciled++; return requeueAfter(1); } }), {
    queueUrl: WORK, deadLetterQueueUrl: DLQ, delayQueueUrl: DELAY, sender: s.sender, log: silentLogger, metrics: noMetrics, clients: async () => { throw new Error('no cluster needed'); },
  });
  assert.deepEqual(await handler({ Records: [withId] }, lambdaContext()), { batchItemFailures: [] });
  assert.equal(reconciled, 0);
  assert.deepEqual(s.sender.sent, [{ queueUrl: WORK, body: record.body, deduplicationId: 'm1' }]);
});
