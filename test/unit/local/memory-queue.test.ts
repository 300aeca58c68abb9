import { createHash } from 'node:crypto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBroker, QueueError, attributeSelected, md5OfMessageAttributes, messageSize, queueArn, type Clock } from '../../../src/local/memory-queue.ts';

function fakeClock(start = 1_700_000_000_000): Clock & { advance(seconds: number): void } {
  let now = start;
  return {
    now: () => now,
    advance: (seconds) => {
      now += seconds * 1000;
    },
  };
}

function setup(options: { visibility?: number; maxReceiveCount?: number; delay?: number } = {}) {
  const clock = fakeClock();
  const broker = new MemoryBroker({ clock, region: 'eu-west-1' });
  const dlq = broker.createQueue('work-dlq');
  const attributes: Record<string, string> = { VisibilityTimeout: String(options.visibility ?? 30) };
  if (options.delay !== undefined) attributes.DelaySeconds = String(options.delay);
  if (options.maxReceiveCount !== undefined) {
    attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: options.maxReceiveCount });
  }
  broker.createQueue('work', attributes);
  return { clock, broker };
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof QueueError, `expected a QueueError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected an error');
}

const all = { maxNumberOfMessages: 10, attributeNames: ['All'], messageAttributeNames: ['All'] };

test('a sent message is received once, hidden for the visibility timeout, then redelivered with a higher receive count', () => {
  const { clock, broker } = setup({ visibility: 10 });
  const sent = broker.sendMessage('work', { body: 'hello' });
  const [first] = broker.receiveMessage('work', all);
  assert.equal(first?.messageId, sent.messageId);
  assert.equal(first?.body, 'hello');
  assert.equal(first?.attributes.ApproximateReceiveCount, '1');
  assert.equal(first?.attributes.SentTimestamp, String(clock.now()));
  assert.equal(first?.attributes.ApproximateFirstReceiveTimestamp, String(clock.now()));
  assert.deepEqual(broker.receiveMessage('work', all), []);
  assert.deepEqual(broker.counts('work'), { visible: 0, notVisible: 1, delayed: 0 });
  clock.advance(9);
  assert.deepEqual(broker.receiveMessage('work', all), []);
  clock.advance(1);
  const [second] = broker.receiveMessage('work', all);
  assert.equal(second?.attributes.ApproximateReceiveCount, '2');
  assert.equal(second?.attributes.ApproximateFirstReceiveTimestamp, first?.attributes.ApproximateFirstReceiveTimestamp);
  assert.notEqual(second?.receiptHandle, first?.receiptHandle);
});

test('per-message DelaySeconds hides a message until due and counts it as delayed', () => {
  const { clock, broker } = setup();
  broker.sendMessage('work', { body: 'later', delaySeconds: 5 });
  broker.sendMessage('work', { body: 'now' });
  assert.deepEqual(broker.counts('work'), { visible: 1, notVisible: 0, delayed: 1 });
  assert.deepEqual(
    broker.receiveMessage('work', all).map((m) => m.body),
    ['now'],
  );
  clock.advance(5);
  assert.deepEqual(
    broker.receiveMessage('work', all).map((m) => m.body),
    ['later'],
  );
});

test('the queue DelaySeconds applies when a message sets none; a message value overrides it', () => {
  const { clock, broker } = setup({ delay: 3 });
  broker.sendMessage('work', { body: 'queue-delay' });
  broker.sendMessage('work', { body: 'no-delay', delaySeconds: 0 });
  assert.deepEqual(
    broker.receiveMessage('work', all).map((m) => m.body),
    ['no-delay'],
  );
  clock.advance(3);
  assert.deepEqual(
    broker.receiveMessage('work', all).map((m) => m.body),
    ['queue-delay'],
  );
});

test('DelaySeconds, VisibilityTimeout and MaxNumberOfMessages out of range are InvalidParameterValue', () => {
  const { broker } = setup();
  assert.equal(
    code(() => broker.sendMessage('work', { body: 'x', delaySeconds: 901 })),
    'InvalidParameterValue',
  );
  assert.equal(
    code(() => broker.sendMessage('work', { body: 'x', delaySeconds: -1 })),
    'InvalidParameterValue',
  );
  assert.equal(
    code(() => broker.receiveMessage('work', { maxNumberOfMessages: 11 })),
    'InvalidParameterValue',
  );
  assert.equal(
    code(() => broker.receiveMessage('work', { visibilityTimeoutSeconds: 43_201 })),
    'InvalidParameterValue',
  );
});

test('delete with the latest receipt handle removes the message; a stale handle is accepted and ignored', () => {
  const { clock, broker } = setup({ visibility: 1 });
  broker.sendMessage('work', { body: 'x' });
  const [first] = broker.receiveMessage('work', all);
  clock.advance(1);
  const [second] = broker.receiveMessage('work', all);
  broker.deleteMessage('work', first!.receiptHandle);
  clock.advance(1);
  const [third] = broker.receiveMessage('work', all);
  assert.equal(third?.messageId, second?.messageId, 'a stale handle must not delete the message');
  broker.deleteMessage('work', third!.receiptHandle);
  assert.deepEqual(broker.counts('work'), { visible: 0, notVisible: 0, delayed: 0 });
  assert.equal(
    code(() => broker.deleteMessage('work', 'garbage')),
    'ReceiptHandleIsInvalid',
  );
});

test('after maxReceiveCount receives the next receive moves the message to the DLQ, keeping id, body, attributes and SentTimestamp', () => {
  const { clock, broker } = setup({ visibility: 1, maxReceiveCount: 2 });
  const sentAt = String(clock.now());
  const sent = broker.sendMessage('work', { body: 'poison', messageAttributes: { why: { DataType: 'String', StringValue: 'test' } } });
  assert.equal(broker.receiveMessage('work', all).length, 1);
  clock.advance(1);
  assert.equal(broker.receiveMessage('work', all)[0]?.attributes.ApproximateReceiveCount, '2');
  clock.advance(1);
  assert.deepEqual(broker.receiveMessage('work', all), []);
  assert.deepEqual(broker.counts('work'), { visible: 0, notVisible: 0, delayed: 0 });
  const [dead] = broker.receiveMessage('work-dlq', all);
  assert.equal(dead?.messageId, sent.messageId);
  assert.equal(dead?.body, 'poison');
  assert.equal(dead?.attributes.SentTimestamp, sentAt);
  assert.equal(dead?.attributes.DeadLetterQueueSourceArn, queueArn('eu-west-1', 'work'));
  assert.equal(dead?.messageAttributes.why?.StringValue, 'test');
});

test('ChangeMessageVisibility extends or ends the timeout of an in-flight message only', () => {
  const { clock, broker } = setup({ visibility: 5 });
  broker.sendMessage('work', { body: 'x' });
  const [message] = broker.receiveMessage('work', all);
  broker.changeMessageVisibility('work', message!.receiptHandle, 60);
  clock.advance(59);
  assert.deepEqual(broker.receiveMessage('work', all), []);
  clock.advance(1);
  const [again] = broker.receiveMessage('work', all);
  broker.changeMessageVisibility('work', again!.receiptHandle, 0);
  assert.equal(
    code(() => broker.changeMessageVisibility('work', again!.receiptHandle, 10)),
    'MessageNotInflight',
  );
  assert.equal(broker.receiveMessage('work', all)[0]?.attributes.ApproximateReceiveCount, '3');
});

test('batches: 1 to 10 entries, distinct well-formed ids, 1 MiB in total, per-entry failures reported', () => {
  const { broker } = setup();
  const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `e${i}`, body: `m${i}` }));
  assert.equal(
    code(() => broker.sendMessageBatch('work', entries(11))),
    'TooManyEntriesInBatchRequest',
  );
  assert.equal(
    code(() => broker.sendMessageBatch('work', [])),
    'EmptyBatchRequest',
  );
  assert.equal(
    code(() =>
      broker.sendMessageBatch('work', [
        { id: 'a', body: 'x' },
        { id: 'a', body: 'y' },
      ]),
    ),
    'BatchEntryIdsNotDistinct',
  );
  assert.equal(
    code(() => broker.sendMessageBatch('work', [{ id: 'bad id!', body: 'x' }])),
    'InvalidBatchEntryId',
  );
  const big = 'x'.repeat(200_000);
  assert.equal(
    code(() =>
      broker.sendMessageBatch(
        'work',
        entries(6).map((e) => ({ ...e, body: big })),
      ),
    ),
    'BatchRequestTooLong',
  );
  const result = broker.sendMessageBatch('work', [...entries(9), { id: 'late', body: 'x', delaySeconds: 1000 }]);
  assert.equal(result.successful.length, 9);
  assert.deepEqual(
    result.failed.map((f) => [f.id, f.code, f.senderFault]),
    [['late', 'InvalidParameterValue', true]],
  );
  assert.equal(broker.counts('work').visible, 9);
});

test('message bodies: empty is MissingParameter, invalid characters InvalidMessageContents, over the size limit InvalidParameterValue', () => {
  const { broker } = setup();
  assert.equal(
    code(() => broker.sendMessage('work', { body: '' })),
    'MissingParameter',
  );
  assert.equal(
    code(() => broker.sendMessage('work', { body: 'a\u0000b' })),
    'InvalidMessageContents',
  );
  assert.equal(
    code(() => broker.sendMessage('work', { body: 'x'.repeat(1_048_577) })),
    'InvalidParameterValue',
  );
  broker.sendMessage('work', { body: 'x'.repeat(1_048_576) });
});

test('message attributes round-trip, are filtered by name on receive, and carry SQS MD5', () => {
  const { broker } = setup();
  const attributes = {
    'operless.reason': { DataType: 'String', StringValue: 'TerminalError' },
    count: { DataType: 'Number', StringValue: '3' },
    blob: { DataType: 'Binary', BinaryValue: new Uint8Array([1, 2, 3]) },
  };
  const sent = broker.sendMessage('work', { body: 'x', messageAttributes: attributes });
  assert.equal(sent.md5OfMessageAttributes, md5OfMessageAttributes(attributes));
  const [message] = broker.receiveMessage('work', { messageAttributeNames: ['operless.*'], visibilityTimeoutSeconds: 0 });
  assert.deepEqual(Object.keys(message!.messageAttributes), ['operless.reason']);
  const [full] = broker.receiveMessage('work', all);
  assert.deepEqual(full!.messageAttributes, attributes);
  assert.equal(
    code(() => broker.sendMessage('work', { body: 'x', messageAttributes: { 'AWS.x': { DataType: 'String', StringValue: 'v' } } })),
    'InvalidParameterValue',
  );
  assert.equal(
    code(() => broker.sendMessage('work', { body: 'x', messageAttributes: { n: { DataType: 'Number', StringValue: 'three' } } })),
    'InvalidParameterValue',
  );
});

test('SQS MD5 of message attributes follows the documented length-prefixed encoding', () => {
  // Computed independently from the algorithm in the SQS developer guide ("Calculating the
  // MD5 message digest for message attributes"): length-prefixed name, type, transport byte, value.
  const expected = (() => {
    const parts: Buffer[] = [];
    const field = (s: Buffer) => {
      const len = Buffer.alloc(4);
      len.writeUInt32BE(s.length);
      parts.push(len, s);
    };
    field(Buffer.from('a'));
    field(Buffer.from('String'));
    parts.push(Buffer.from([1]));
    field(Buffer.from('v'));
    return Buffer.concat(parts);
  })();
  assert.equal(md5OfMessageAttributes({ a: { DataType: 'String', StringValue: 'v' } }), createHash('md5').update(expected).digest('hex'));
  assert.equal(md5OfMessageAttributes({}), undefined);
});

test('messageSize counts body, attribute names, types and values', () => {
  assert.equal(messageSize('abc'), 3);
  assert.equal(messageSize('abc', { k: { DataType: 'String', StringValue: 'vv' } }), 3 + 1 + 6 + 2);
});

test('attributeSelected understands All, .*, prefixes and exact names', () => {
  assert.ok(attributeSelected('x', ['All']));
  assert.ok(attributeSelected('x', ['.*']));
  assert.ok(attributeSelected('operless.reason', ['operless.*']));
  assert.ok(!attributeSelected('other', ['operless.*']));
  assert.ok(attributeSelected('x', ['x']));
  assert.ok(!attributeSelected('x', []));
});

test('queue attribute counts distinguish visible, in flight and delayed', () => {
  const { broker } = setup();
  broker.sendMessage('work', { body: 'a' });
  broker.sendMessage('work', { body: 'b' });
  broker.sendMessage('work', { body: 'c', delaySeconds: 60 });
  broker.receiveMessage('work');
  const attributes = broker.getQueueAttributes('work', [
    'ApproximateNumberOfMessages',
    'ApproximateNumberOfMessagesNotVisible',
    'ApproximateNumberOfMessagesDelayed',
  ]);
  assert.deepEqual(attributes, { ApproximateNumberOfMessages: '1', ApproximateNumberOfMessagesNotVisible: '1', ApproximateNumberOfMessagesDelayed: '1' });
  assert.equal(
    code(() => broker.getQueueAttributes('work', ['Nope'])),
    'InvalidAttributeName',
  );
});

test('queues: unknown names are QueueDoesNotExist, re-creating with other attributes is QueueNameExists, a redrive target must exist', () => {
  const { broker } = setup();
  assert.equal(
    code(() => broker.sendMessage('missing', { body: 'x' })),
    'QueueDoesNotExist',
  );
  assert.equal(broker.createQueue('work', { VisibilityTimeout: '30' }).name, 'work');
  assert.equal(
    code(() => broker.createQueue('work', { VisibilityTimeout: '31' })),
    'QueueNameExists',
  );
  assert.equal(
    code(() => broker.createQueue('other', { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn('eu-west-1', 'nope'), maxReceiveCount: 3 }) })),
    'InvalidParameterValue',
  );
  assert.equal(
    code(() => broker.createQueue('bad name')),
    'InvalidParameterValue',
  );
  assert.equal(
    code(() => broker.createQueue('x', { FifoQueue: 'true' })),
    'InvalidParameterValue',
    "a FIFO queue's name ends in .fifo",
  );
  assert.equal(
    code(() => broker.createQueue('x.fifo')),
    'InvalidParameterValue',
    'and a .fifo name is a FIFO queue',
  );
  assert.equal(
    code(() =>
      broker.createQueue('y.fifo', {
        FifoQueue: 'true',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn('eu-west-1', 'work-dlq'), maxReceiveCount: 3 }),
      }),
    ),
    'InvalidParameterValue',
    "a FIFO queue's DLQ is FIFO",
  );
  assert.deepEqual(broker.listQueues('work'), ['work', 'work-dlq']);
});

test('messages older than the retention period disappear', () => {
  const { clock, broker } = setup();
  broker.setQueueAttributes('work', { MessageRetentionPeriod: '60' });
  broker.sendMessage('work', { body: 'old' });
  clock.advance(61);
  assert.deepEqual(broker.receiveMessage('work'), []);
  assert.deepEqual(broker.counts('work'), { visible: 0, notVisible: 0, delayed: 0 });
});

test('earliestChangeAt names when the next hidden message becomes visible', () => {
  const { clock, broker } = setup();
  assert.equal(broker.earliestChangeAt('work'), undefined);
  broker.sendMessage('work', { body: 'a', delaySeconds: 7 });
  broker.sendMessage('work', { body: 'b', delaySeconds: 3 });
  assert.equal(broker.earliestChangeAt('work'), clock.now() + 3000);
});

test('purge removes every message', () => {
  const { broker } = setup();
  broker.sendMessage('work', { body: 'a' });
  broker.sendMessage('work', { body: 'b', delaySeconds: 10 });
  broker.purgeQueue('work');
  assert.deepEqual(broker.counts('work'), { visible: 0, notVisible: 0, delayed: 0 });
});

test('asking for RedrivePolicy of a queue without one leaves it out instead of failing', async () => {
  const { MemoryBroker: Broker } = await import('../../../src/local/memory-queue.ts');
  const broker = new Broker();
  broker.createQueue('plain');
  assert.deepEqual(broker.getQueueAttributes('plain', ['RedrivePolicy']), {});
});

test('FIFO: a deduplication id is remembered for 5 minutes after its send, deleted or not; per group with DeduplicationScope messageGroup', () => {
  const { clock, broker } = setup();
  broker.createQueue('f.fifo', { FifoQueue: 'true' });
  broker.sendMessage('f.fifo', { body: 'one', groupId: 'A', deduplicationId: 'd' });
  const [one] = broker.receiveMessage('f.fifo');
  broker.deleteMessage('f.fifo', one!.receiptHandle);
  clock.advance(299);
  broker.sendMessage('f.fifo', { body: 'two', groupId: 'A', deduplicationId: 'd' });
  assert.deepEqual(broker.receiveMessage('f.fifo'), [], 'dropped inside the window');
  clock.advance(1);
  broker.sendMessage('f.fifo', { body: 'three', groupId: 'A', deduplicationId: 'd' });
  assert.deepEqual(
    broker.receiveMessage('f.fifo').map((m) => m.body),
    ['three'],
    'accepted once the window has passed',
  );

  broker.createQueue('g.fifo', { FifoQueue: 'true', DeduplicationScope: 'messageGroup', ContentBasedDeduplication: 'true' });
  broker.sendMessage('g.fifo', { body: 'same', groupId: 'A' });
  broker.sendMessage('g.fifo', { body: 'same', groupId: 'B' });
  broker.sendMessage('g.fifo', { body: 'same', groupId: 'A' });
  assert.deepEqual(
    broker.receiveMessage('g.fifo', { maxNumberOfMessages: 10, attributeNames: ['MessageGroupId'] }).map((m) => m.attributes.MessageGroupId),
    ['A', 'B'],
  );
  assert.equal(
    code(() => broker.sendMessage('work', { body: 'x', deduplicationId: 'd' })),
    'InvalidParameterValue',
    'no deduplication id on a standard queue',
  );
});

test('ApproximateAgeOfOldestMessage: seconds since the oldest visible or in-flight message was sent; delayed ones wait their turn', () => {
  const { clock, broker } = setup({ visibility: 30 });
  const age = () => broker.getQueueAttributes('work', ['ApproximateAgeOfOldestMessage']).ApproximateAgeOfOldestMessage;
  assert.equal(age(), '0', 'an empty queue');
  broker.sendMessage('work', { body: 'delayed', delaySeconds: 100 });
  clock.advance(20);
  assert.equal(age(), '0', 'only a delayed message');
  broker.sendMessage('work', { body: 'first' });
  clock.advance(15);
  broker.sendMessage('work', { body: 'second' });
  assert.equal(age(), '15');
  const [first] = broker.receiveMessage('work', { maxNumberOfMessages: 1 });
  assert.equal(first?.body, 'first');
  clock.advance(5);
  assert.equal(age(), '20', 'an in-flight message still counts');
  broker.deleteMessage('work', first!.receiptHandle);
  assert.equal(age(), '5', 'deleted: the next oldest');
  clock.advance(70);
  assert.equal(age(), '110', 'the delayed message is available now: its age runs from when it was sent (t=0)');
  assert.ok('ApproximateAgeOfOldestMessage' in broker.getQueueAttributes('work'), 'part of All');
});
