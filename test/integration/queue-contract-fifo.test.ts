/**
 * The FIFO queue contract per-key ordering relies on (docs/architecture.md, "Per-key
 * ordering"), asserted identically against the real broker (ElasticMQ) and the embedded queue
 * through the real `@aws-sdk/client-sqs`, the way queue-contract.test.ts does for standard
 * queues: a group's messages come in order and none while one of the group is in flight;
 * other groups are not held; a deduplication id repeated within the window is accepted and
 * dropped, even after the first was deleted; FIFO sends need a group, a deduplication id (no
 * content-based deduplication here) and no per-message delay; the port's `.fifo` sends carry
 * group = object key.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as sdk from '@aws-sdk/client-sqs';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { encodeMessage, newMessage, objectKey } from '../../src/contract/message.ts';
import { sqsQueuePort } from '../../src/queue/sqs-port.ts';
import { describeOnEachQueue } from './queue-targets.ts';

async function createFifo(sqs: SQSClient, visibility = 30): Promise<string> {
  const name = `f-${randomUUID().slice(0, 8)}.fifo`;
  return (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', VisibilityTimeout: String(visibility) } }))).QueueUrl!;
}

async function receive(sqs: SQSClient, url: string, max = 10): Promise<Message[]> {
  const result = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: max, WaitTimeSeconds: 0, MessageSystemAttributeNames: ['All'] }),
  );
  return result.Messages ?? [];
}

/** Receives until `want` returns true for what arrived so far, or fails after `seconds`. */
async function receiveUntil(sqs: SQSClient, url: string, want: (got: Message[]) => boolean, seconds = 10): Promise<Message[]> {
  const got: Message[] = [];
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    got.push(...(await receive(sqs, url)));
    if (want(got)) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`receiving from ${url}: condition not met within ${seconds} s; got ${got.map((m) => m.Body).join(', ')}`);
}

const send = (sqs: SQSClient, url: string, body: string, group: string, dedup: string = randomUUID()) =>
  sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup }));

async function errorName(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return (err as Error).name;
  }
  assert.fail('expected the request to fail');
}

describeOnEachQueue('FIFO queue contract', (client) => {
  test('a group with a message in flight gives nothing more until it is deleted; other groups flow', async () => {
    const sqs = client();
    const url = await createFifo(sqs);
    await send(sqs, url, 'a1', 'A');
    const [a1] = await receive(sqs, url, 1);
    assert.equal(a1?.Body, 'a1');
    assert.equal(a1?.Attributes?.MessageGroupId, 'A');
    assert.ok(a1?.Attributes?.SequenceNumber);
    await send(sqs, url, 'a2', 'A');
    await send(sqs, url, 'b1', 'B');
    assert.deepEqual(
      (await receive(sqs, url)).map((m) => m.Body),
      ['b1'],
      'A is held while a1 is in flight',
    );
    assert.deepEqual(await receive(sqs, url), [], 'B is held while b1 is in flight');
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: a1!.ReceiptHandle! }));
    assert.deepEqual(
      (await receive(sqs, url)).map((m) => m.Body),
      ['a2'],
    );
  });

  test('a message that becomes visible again comes before the later ones of its group', async () => {
    const sqs = client();
    const url = await createFifo(sqs);
    for (const body of ['a1', 'a2', 'a3']) await send(sqs, url, body, 'A');
    const first = await receive(sqs, url, 1);
    assert.deepEqual(
      first.map((m) => m.Body),
      ['a1'],
    );
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: first[0]!.ReceiptHandle!, VisibilityTimeout: 0 }));
    const again = await receiveUntil(sqs, url, (got) => got.length > 0);
    assert.equal(again[0]?.Body, 'a1');
    assert.equal(again[0]?.Attributes?.ApproximateReceiveCount, '2');
  });

  test('a deduplication id sent again within the window is accepted and dropped, even after the first was deleted', async () => {
    const sqs = client();
    const url = await createFifo(sqs);
    await send(sqs, url, 'one', 'A', 'same');
    const second = await send(sqs, url, 'two', 'A', 'same');
    assert.ok(second.MessageId, 'the duplicate is accepted (the SDK checked the MD5 of what it sent)');
    const got = await receive(sqs, url);
    assert.deepEqual(
      got.map((m) => m.Body),
      ['one'],
    );
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: got[0]!.ReceiptHandle! }));
    await send(sqs, url, 'three', 'A', 'same');
    await send(sqs, url, 'four', 'A', 'other');
    assert.deepEqual(
      (await receive(sqs, url)).map((m) => m.Body),
      ['four'],
    );
  });

  test('FIFO sends need a group and a deduplication id, and take no per-message delay', async () => {
    const sqs = client();
    const url = await createFifo(sqs);
    assert.equal(await errorName(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageDeduplicationId: 'd' }))), 'MissingParameter');
    assert.equal(await errorName(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'A' }))), 'InvalidParameterValue');
    assert.equal(
      await errorName(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'A', MessageDeduplicationId: 'd', DelaySeconds: 5 }))),
      'InvalidParameterValue',
    );
    const attributes = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['FifoQueue'] }))).Attributes;
    assert.equal(attributes?.FifoQueue, 'true');
  });

  test('the queue port sends to a .fifo queue with group = object key and the given deduplication id', async () => {
    const sqs = client();
    const url = await createFifo(sqs);
    const port = sqsQueuePort(sdk, sqs, url);
    const ref = { cluster: 'c1', apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'ns', name: 'web' };
    const body = encodeMessage(newMessage(ref, 'Requeue', 1_000));
    const result = await port.sendBatch([
      { id: 'a', body, deduplicationId: 'merge-1' },
      { id: 'b', body, deduplicationId: 'merge-1' },
      { id: 'c', body },
    ]);
    assert.deepEqual(result.failed, []);
    const got = await receiveUntil(sqs, url, (m) => m.length >= 2);
    assert.equal(got.length, 2, 'the second merge-1 was dropped; the unnamed one was not');
    for (const m of got) assert.equal(m.Attributes?.MessageGroupId, objectKey(ref));
    assert.deepEqual(got.map((m) => m.Attributes?.MessageDeduplicationId).sort((x, y) => (x === 'merge-1' ? -1 : y === 'merge-1' ? 1 : 0))[0], 'merge-1');
  });
});
