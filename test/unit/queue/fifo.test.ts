import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeMessage, newMessage, objectKey } from '../../../src/contract/message.ts';
import { bodyGroupId, fifoEntry, isFifoQueueUrl, messageGroupId, moveDeduplicationId } from '../../../src/queue/fifo.ts';
import { batchInput } from '../../../src/queue/sqs-port.ts';

const ref = { cluster: 'c1', apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'ns', name: 'web' };
const body = encodeMessage(newMessage(ref, 'Modified', 1_000));

test('a queue is FIFO exactly when its URL ends in .fifo', () => {
  assert.equal(isFifoQueueUrl('http://q/000000000000/work.fifo'), true);
  assert.equal(isFifoQueueUrl('http://q/000000000000/work'), false);
  assert.equal(isFifoQueueUrl('http://q/000000000000/fifo-work'), false);
});

test('the group of a message is its object key; a key SQS refuses becomes its SHA-256; poison is a group of its own', () => {
  assert.equal(bodyGroupId(body), objectKey(ref));
  assert.equal(bodyGroupId(encodeMessage(newMessage(ref, 'Resync', 2_000))), objectKey(ref), 'every message of a key shares the group');
  const long = `${'a'.repeat(63)}/${'b'.repeat(120)}`;
  assert.match(messageGroupId(long), /^[0-9a-f]{64}$/);
  assert.equal(messageGroupId(long), messageGroupId(long));
  assert.notEqual(bodyGroupId('not json'), bodyGroupId('also not json'));
  assert.match(bodyGroupId('not json'), /^[0-9a-f]{64}$/);
});

test('a FIFO entry keeps a deduplication id it was given, else gets a fresh one; a delay is refused', () => {
  const given = fifoEntry({ id: 'm', body, deduplicationId: 'merge-1' });
  assert.equal(given.deduplicationId, 'merge-1');
  assert.equal(given.groupId, objectKey(ref));
  assert.notEqual(
    fifoEntry({ id: 'm', body }).deduplicationId,
    fifoEntry({ id: 'm', body }).deduplicationId,
    'the same body sent twice is never merged by default',
  );
  assert.throws(() => fifoEntry({ id: 'm', body, delaySeconds: 5 }), /FIFO queue takes no per-message delay/);
});

test('SendMessageBatch input: group and deduplication id only for a FIFO queue', () => {
  const fifo = batchInput('http://q/1/work.fifo', [{ id: 'a', body, deduplicationId: 'd' }]);
  assert.deepEqual(fifo.Entries, [{ Id: 'a', MessageBody: body, MessageGroupId: objectKey(ref), MessageDeduplicationId: 'd' }]);
  const standard = batchInput('http://q/1/work', [{ id: 'a', body, deduplicationId: 'd', delaySeconds: 3 }]);
  assert.deepEqual(standard.Entries, [{ Id: 'a', MessageBody: body, DelaySeconds: 3 }]);
  assert.throws(() => batchInput('http://q/1/work.fifo', [{ id: 'a', body, delaySeconds: 3 }]), RangeError);
});

test('move deduplication id: the same body due at the same ms only', () => {
  const body = JSON.stringify({ v: 1, kind: 'Widget', name: 'a' });
  assert.equal(moveDeduplicationId(body, 60_000), moveDeduplicationId(body, 60_000));
  assert.notEqual(moveDeduplicationId(body, 60_000), moveDeduplicationId(body, 60_001), 'another due time');
  assert.notEqual(moveDeduplicationId(body, 60_000), moveDeduplicationId(`${body} `, 60_000), 'another body');
  assert.match(moveDeduplicationId(body, 60_000), /^[0-9a-f]{64}$/, 'a valid FIFO deduplication id');
});
