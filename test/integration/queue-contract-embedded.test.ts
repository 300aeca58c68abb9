/**
 * Behaviour of the embedded queue server that the shared contract cannot check on ElasticMQ:
 * long polls and clients going away, stopping with polls pending, and the error an
 * unimplemented operation gives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ListQueueTagsCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { startMemoryQueueServer } from '../../src/local/memory-queue-server.ts';

test('an aborted long poll takes no message: the next receive gets it', async () => {
  const queue = await startMemoryQueueServer({ queues: [{ name: 'w' }] });
  try {
    const sqs = queue.sqs();
    const url = queue.queueUrl('w');
    const abort = new AbortController();
    const poll = sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 20 }), { abortSignal: abort.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    abort.abort();
    await assert.rejects(poll, { name: 'AbortError' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x' }));
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }));
    assert.equal(received.Messages?.[0]?.Body, 'x');
  } finally {
    await queue.stop();
  }
});

test('a long poll returns the message that becomes due while it waits, within the same request', async () => {
  const queue = await startMemoryQueueServer({ queues: [{ name: 'w' }] });
  try {
    const sqs = queue.sqs();
    const url = queue.queueUrl('w');
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'due-soon', DelaySeconds: 1 }));
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10 }));
    assert.equal(received.Messages?.[0]?.Body, 'due-soon');
  } finally {
    await queue.stop();
  }
});

test('stop() answers pending long polls with no messages', async () => {
  const queue = await startMemoryQueueServer({ queues: [{ name: 'w' }] });
  const sqs = queue.sqs();
  const poll = sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.queueUrl('w'), WaitTimeSeconds: 20 }));
  await new Promise((resolve) => setTimeout(resolve, 100));
  await queue.stop();
  assert.equal((await poll).Messages, undefined);
});

test('an operation the embedded queue does not implement fails with UnsupportedOperation naming it', async () => {
  const queue = await startMemoryQueueServer({ queues: [{ name: 'w' }] });
  try {
    await assert.rejects(queue.sqs().send(new ListQueueTagsCommand({ QueueUrl: queue.queueUrl('w') })), (err: Error) => {
      assert.equal(err.name, 'UnsupportedOperation');
      assert.match(err.message, /AmazonSQS\.ListQueueTags/);
      return true;
    });
  } finally {
    await queue.stop();
  }
});
