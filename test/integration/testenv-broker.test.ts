/**
 * The test broker against itself: ElasticMQ started by `startBroker()`, driven through
 * `@aws-sdk/client-sqs` — batches, delays, visibility timeouts, redrive to the DLQ, and
 * restarts. Timeouts are 1–2 s to keep it short; assertions are about what arrives, never speed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { startBroker } from '../../src/testing/index.ts';
import type { Broker } from '../../src/testing/index.ts';

async function receive(sqs: SQSClient, url: string, waitSeconds = 0): Promise<Message[]> {
  const out = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: waitSeconds, MessageSystemAttributeNames: ['All'] }),
  );
  return out.Messages ?? [];
}

/** Receives until `count` messages arrived (or fails after `seconds`). */
async function receiveAll(sqs: SQSClient, url: string, count: number, seconds = 15): Promise<Message[]> {
  const got: Message[] = [];
  const deadline = Date.now() + seconds * 1000;
  while (got.length < count) {
    if (Date.now() > deadline) assert.fail(`only ${got.length} of ${count} messages arrived on ${url} within ${seconds} s`);
    got.push(...(await receive(sqs, url, 1)));
  }
  return got;
}

describe('startBroker', () => {
  let broker: Broker;
  let sqs: SQSClient;

  before(async () => {
    broker = await startBroker({
      queues: [
        { name: 'work', visibilityTimeoutSeconds: 30, dlq: { name: 'work-dlq', maxReceiveCount: 5 } },
        { name: 'short', visibilityTimeoutSeconds: 1, dlq: { name: 'short-dlq', maxReceiveCount: 2 } },
      ],
    });
    sqs = broker.sqs();
  });
  after(() => broker?.stop());

  test('configured queues exist with their attributes and redrive policy', async () => {
    const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: broker.queueUrl('work'), AttributeNames: ['All'] }));
    assert.equal(attrs.Attributes?.VisibilityTimeout, '30');
    const redrive = JSON.parse(attrs.Attributes?.RedrivePolicy ?? '{}') as { deadLetterTargetArn: string; maxReceiveCount: number | string };
    assert.equal(redrive.deadLetterTargetArn, broker.queueArn('work-dlq'));
    assert.equal(Number(redrive.maxReceiveCount), 5);
  });

  test('SendMessageBatch delivers every entry', async () => {
    const url = broker.queueUrl('work');
    const entries = Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: JSON.stringify({ i }) }));
    const sent = await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
    assert.equal(sent.Successful?.length, 10);
    assert.equal(sent.Failed?.length ?? 0, 0);
    const got = await receiveAll(sqs, url, 10);
    assert.deepEqual(
      got.map((m) => (JSON.parse(m.Body!) as { i: number }).i).sort((a, b) => a - b),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    for (const m of got) await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
  });

  test('a message sent with DelaySeconds is not received before its delay, and is after', async () => {
    const url = await broker.createQueue({ name: 'delayed' });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'later', DelaySeconds: 2 }));
    const early = await receive(sqs, url, 0);
    assert.deepEqual(early, [], 'the message must not be visible right after sending');
    const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessagesDelayed'] }));
    assert.equal(attrs.Attributes?.ApproximateNumberOfMessagesDelayed, '1');
    const [late] = await receiveAll(sqs, url, 1);
    assert.equal(late?.Body, 'later');
  });

  test('an unacknowledged message comes back after the visibility timeout with a higher ApproximateReceiveCount', async () => {
    const url = await broker.createQueue({ name: 'redeliver', visibilityTimeoutSeconds: 1 });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'again' }));
    const [first] = await receiveAll(sqs, url, 1);
    assert.equal(first?.Attributes?.ApproximateReceiveCount, '1');
    assert.deepEqual(await receive(sqs, url, 0), [], 'invisible while its visibility timeout runs');
    const [second] = await receiveAll(sqs, url, 1);
    assert.equal(second?.MessageId, first?.MessageId);
    assert.equal(second?.Attributes?.ApproximateReceiveCount, '2');
  });

  test('after maxReceiveCount receives a message lands in the DLQ', async () => {
    const url = broker.queueUrl('short');
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'poison' }));
    for (let i = 1; i <= 2; i++) {
      const [m] = await receiveAll(sqs, url, 1);
      assert.equal(m?.Attributes?.ApproximateReceiveCount, String(i));
    }
    // As on SQS, the move happens on the next receive attempt once the visibility timeout ran
    // out: that receive gets nothing, and the message is in the DLQ.
    const deadline = Date.now() + 20_000;
    let dlq: Message[] = [];
    while (dlq.length === 0) {
      if (Date.now() > deadline) assert.fail('the message did not reach short-dlq within 20 s');
      assert.deepEqual(await receive(sqs, url, 1), [], 'a third delivery must not happen');
      dlq = await receive(sqs, broker.queueUrl('short-dlq'), 0);
    }
    assert.equal(dlq[0]?.Body, 'poison');
  });

  test('createQueue makes its DLQ and redrive policy, and validates its input', async () => {
    const url = await broker.createQueue({ name: 'made', visibilityTimeoutSeconds: 5, dlq: { name: 'made-dlq', maxReceiveCount: 3 } });
    assert.equal(url, broker.queueUrl('made'));
    const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
    assert.equal(attrs.Attributes?.VisibilityTimeout, '5');
    assert.equal(JSON.parse(attrs.Attributes?.RedrivePolicy ?? '{}').deadLetterTargetArn, broker.queueArn('made-dlq'));
    await assert.rejects(broker.createQueue({ name: 'bad name!' }), /not a valid SQS queue name/);
  });

  test('restart keeps the port and re-creates configured and createQueue() queues (messages are in memory)', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: broker.queueUrl('work'), MessageBody: 'volatile' }));
    await broker.restart();
    for (const name of ['work', 'work-dlq', 'short', 'made', 'made-dlq']) {
      const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: broker.queueUrl(name), AttributeNames: ['QueueArn'] }));
      assert.equal(attrs.Attributes?.QueueArn, broker.queueArn(name));
    }
    assert.deepEqual(await receive(sqs, broker.queueUrl('work'), 1), [], 'ElasticMQ without persistence starts empty');
  });
});

describe('startBroker({ persistMessages: true })', () => {
  test('messages survive a restart, like on SQS', async () => {
    const broker = await startBroker({ persistMessages: true });
    try {
      const sqs = broker.sqs();
      await sqs.send(new SendMessageCommand({ QueueUrl: broker.queueUrl('work'), MessageBody: 'durable' }));
      await broker.restart();
      const [m] = await receiveAll(sqs, broker.queueUrl('work'), 1);
      assert.equal(m?.Body, 'durable');
    } finally {
      await broker.stop();
    }
  });

  test('pause() is an outage on the same endpoint: requests fail until start(), and messages survive it', async () => {
    const broker = await startBroker({ persistMessages: true });
    try {
      const sqs = broker.sqs();
      await sqs.send(new SendMessageCommand({ QueueUrl: broker.queueUrl('work'), MessageBody: 'through the outage' }));
      await broker.pause();
      await assert.rejects(sqs.send(new GetQueueAttributesCommand({ QueueUrl: broker.queueUrl('work'), AttributeNames: ['QueueArn'] })));
      await broker.start();
      const [m] = await receiveAll(sqs, broker.queueUrl('work'), 1);
      assert.equal(m?.Body, 'through the outage');
    } finally {
      await broker.stop();
    }
    await assert.rejects(broker.start(), /stopped for good/);
  });

  test('the default queues are work and work-dlq, redriving after 5 receives', async () => {
    const broker = await startBroker();
    try {
      const attrs = await broker.sqs().send(new GetQueueAttributesCommand({ QueueUrl: broker.queueUrl('work'), AttributeNames: ['All'] }));
      assert.equal(attrs.Attributes?.VisibilityTimeout, '30');
      assert.equal(Number(JSON.parse(attrs.Attributes?.RedrivePolicy ?? '{}').maxReceiveCount), 5);
    } finally {
      await broker.stop();
    }
  });
});
