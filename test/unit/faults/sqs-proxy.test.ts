/**
 * The counting proxy's count (test/faults/sqs-proxy.ts, `acceptedSends`): what the broker
 * accepted per queue, for standard and FIFO queues alike — a FIFO send carries its group and
 * deduplication ids in the same JSON request, and is counted under its `.fifo` queue's name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptedSends, deletesFrom } from '../../faults/sqs-proxy.ts';

const TARGET = 'AmazonSQS.';

test('a SendMessage to a FIFO queue is counted once, under the .fifo name', () => {
  const request = JSON.stringify({
    QueueUrl: 'http://127.0.0.1:9324/000000000000/operless-dev-faults.fifo',
    MessageBody: '{}',
    MessageGroupId: 'c//Memcached/ns/mc-000',
    MessageDeduplicationId: 'd1',
  });
  assert.deepEqual(acceptedSends(`${TARGET}SendMessage`, request, 200, '{"MessageId":"m","SequenceNumber":"1"}'), {
    queue: 'operless-dev-faults.fifo',
    count: 1,
  });
});

test('a FIFO SendMessageBatch counts the entries the broker accepted, not those it refused', () => {
  const request = JSON.stringify({
    QueueUrl: 'http://127.0.0.1:9324/000000000000/operless-dev-faults.fifo',
    Entries: [0, 1, 2].map((i) => ({ Id: String(i), MessageBody: '{}', MessageGroupId: `g${i}`, MessageDeduplicationId: `d${i}` })),
  });
  const response = JSON.stringify({
    Successful: [
      { Id: '0', MessageId: 'a', SequenceNumber: '1' },
      { Id: '2', MessageId: 'b', SequenceNumber: '2' },
    ],
    Failed: [{ Id: '1', Code: 'InvalidParameterValue', SenderFault: true }],
  });
  assert.deepEqual(acceptedSends(`${TARGET}SendMessageBatch`, request, 200, response), { queue: 'operless-dev-faults.fifo', count: 2 });
});

test('standard queues as before; refused requests and other actions count nothing', () => {
  const request = JSON.stringify({ QueueUrl: 'http://127.0.0.1:9324/000000000000/operless-dev-faults-delay', MessageBody: '{}', DelaySeconds: 3 });
  assert.deepEqual(acceptedSends(`${TARGET}SendMessage`, request, 200, '{}'), { queue: 'operless-dev-faults-delay', count: 1 });
  assert.equal(acceptedSends(`${TARGET}SendMessage`, request, 400, '{"__type":"InvalidParameterValue"}'), undefined);
  assert.equal(acceptedSends(`${TARGET}ReceiveMessage`, request, 200, '{"Messages":[]}'), undefined);
});

test('held acknowledgements: DeleteMessage and DeleteMessageBatch of the named queue only', () => {
  const of = (queue: string) => JSON.stringify({ QueueUrl: `http://127.0.0.1:9324/000000000000/${queue}`, Entries: [{ Id: '0', ReceiptHandle: 'r' }] });
  assert.equal(deletesFrom(`${TARGET}DeleteMessageBatch`, of('operless-dev-faults.fifo'), 'operless-dev-faults.fifo'), true);
  assert.equal(deletesFrom(`${TARGET}DeleteMessage`, of('operless-dev-faults.fifo'), 'operless-dev-faults.fifo'), true);
  assert.equal(
    deletesFrom(`${TARGET}DeleteMessageBatch`, of('operless-dev-faults-delay'), 'operless-dev-faults.fifo'),
    false,
    'another queue (the delay queue) passes',
  );
  assert.equal(deletesFrom(`${TARGET}ReceiveMessage`, of('operless-dev-faults.fifo'), 'operless-dev-faults.fifo'), false);
  assert.equal(deletesFrom(`${TARGET}DeleteMessageBatch`, 'not json', 'operless-dev-faults.fifo'), false);
});
