/**
 * `sendMessageBatch` directly (the forwarder, the resync and the CLI reach it only through
 * their own flows), against the embedded SQS-compatible queue over real HTTP with the real
 * AWS SDK: the per-entry outcome, the limits it enforces itself before any request (checked
 * with a client that counts calls), and a failed request throwing (nothing is known to have
 * been sent).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { BATCH_LIMIT, sendMessageBatch } from '../../../src/queue/batch-send.ts';
import { startMemoryQueueServer } from '../../../src/local/memory-queue-server.ts';

let server: Awaited<ReturnType<typeof startMemoryQueueServer>>;
let sqs: SQSClient;
let queueUrl: string;

before(async () => {
  server = await startMemoryQueueServer({ queues: [{ name: 'work' }] });
  sqs = server.sqs();
  queueUrl = server.queueUrl('work');
});
after(async () => {
  sqs.destroy();
  await server.stop();
});

async function receiveAll(): Promise<string[]> {
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
  return (out.Messages ?? []).map((m) => m.Body ?? '').sort();
}

test('entries are sent in one request and all reported accepted', async () => {
  const result = await sendMessageBatch(sqs, queueUrl, [
    { id: 'a', body: 'A' },
    { id: 'b', body: 'B' },
    { id: 'c', body: 'C', delaySeconds: 0 },
  ]);
  assert.deepEqual(result, { failed: [] });
  assert.deepEqual(await receiveAll(), ['A', 'B', 'C']);
});

test("an entry the queue rejects is reported by id with its code and whether it is the sender's fault; the others are sent", async () => {
  const result = await sendMessageBatch(sqs, queueUrl, [
    { id: 'ok', body: 'fine' },
    { id: 'late', body: 'too late', delaySeconds: 1000 },
  ]);
  assert.equal(result.failed.length, 1);
  const [failure] = result.failed;
  assert.equal(failure?.id, 'late');
  assert.equal(failure?.senderFault, true);
  assert.ok(failure?.code && failure.code !== 'Unknown', `a code: ${failure?.code}`);
  assert.deepEqual(await receiveAll(), ['fine']);
});

test('an empty batch makes no request; more than 10 entries are refused before any request', async () => {
  let requests = 0;
  const counting = {
    send: () => {
      requests++;
      return new Promise(() => {});
    },
  } as unknown as SQSClient; // would hang if asked
  assert.deepEqual(await sendMessageBatch(counting, queueUrl, []), { failed: [] });
  const eleven = Array.from({ length: BATCH_LIMIT + 1 }, (_, i) => ({ id: `e${i}`, body: 'x' }));
  await assert.rejects(sendMessageBatch(counting, queueUrl, eleven), /at most 10 entries, got 11/);
  assert.equal(requests, 0);
});

test('a failed request throws (nothing is known to have been sent): a queue that does not exist', async () => {
  await assert.rejects(sendMessageBatch(sqs, server.queueUrl('nope'), [{ id: 'a', body: 'A' }]), (err: Error) =>
    /NonExistentQueue|QueueDoesNotExist|does not exist/i.test(`${err.name} ${err.message}`),
  );
});
