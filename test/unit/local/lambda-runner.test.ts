import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from '@aws-sdk/client-sqs';
import {
  addLatest,
  buildSqsEvent,
  createLambdaContext,
  loadHandler,
  queueArnFromUrl,
  settleBatch,
  fifoSettlement,
  toLambdaRecord,
} from '../../../src/local/lambda-runner.ts';

const source = { eventSourceARN: 'arn:aws:sqs:us-east-2:123456789012:my-queue', awsRegion: 'us-east-2' };

test('a received message becomes the record Lambda builds (AWS documentation example)', () => {
  const message: Message = {
    MessageId: '059f36b4-87a3-44ab-83d2-661975830a7d',
    ReceiptHandle: 'AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a',
    Body: 'Test message.',
    MD5OfBody: 'e4e68fb7bd0e697a0ae8f1bb342846b3',
    Attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1545082649183',
      SenderId: 'AIDAIENQZJOLO23YVJ4VO',
      ApproximateFirstReceiveTimestamp: '1545082649185',
    },
    MessageAttributes: { myAttribute: { DataType: 'String', StringValue: 'myValue' } },
    MD5OfMessageAttributes: 'b25f48e8e4a4e14ec3a0ff5e1cdfc1d1',
  };
  assert.deepEqual(toLambdaRecord(message, source), {
    messageId: '059f36b4-87a3-44ab-83d2-661975830a7d',
    receiptHandle: 'AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a',
    body: 'Test message.',
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1545082649183',
      SenderId: 'AIDAIENQZJOLO23YVJ4VO',
      ApproximateFirstReceiveTimestamp: '1545082649185',
    },
    messageAttributes: {
      myAttribute: { stringValue: 'myValue', stringListValues: [], binaryListValues: [], dataType: 'String' },
    },
    md5OfBody: 'e4e68fb7bd0e697a0ae8f1bb342846b3',
    md5OfMessageAttributes: 'b25f48e8e4a4e14ec3a0ff5e1cdfc1d1',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-2:123456789012:my-queue',
    awsRegion: 'us-east-2',
  });
});

test('binary attributes are base64 in the record; extra system attributes are kept', () => {
  const record = toLambdaRecord(
    {
      MessageId: 'm',
      ReceiptHandle: 'r',
      Body: 'b',
      MD5OfBody: 'x',
      Attributes: { ApproximateReceiveCount: '3', AWSTraceHeader: 'Root=1-abc' },
      MessageAttributes: { blob: { DataType: 'Binary', BinaryValue: new Uint8Array([1, 2, 255]) } },
    },
    source,
  );
  assert.equal(record.messageAttributes.blob?.binaryValue, 'AQL/');
  assert.equal(record.messageAttributes.blob?.stringValue, undefined);
  assert.equal(record.attributes.ApproximateReceiveCount, '3');
  assert.equal(record.attributes.AWSTraceHeader, 'Root=1-abc');
  assert.equal('md5OfMessageAttributes' in record, false);
  assert.equal(buildSqsEvent([{ MessageId: 'a' }, { MessageId: 'b' }], source).Records.length, 2);
});

test('partial batch responses: null, empty or missing lists are full success', () => {
  const ids = ['a', 'b', 'c'];
  for (const response of [undefined, null, {}, { batchItemFailures: [] }, { batchItemFailures: null }, { other: 1 }]) {
    assert.deepEqual(settleBatch(ids, response), { outcome: 'success', deleteIds: ids, retryIds: [] }, JSON.stringify(response));
  }
});

test('partial batch responses: listed records are retried, the others deleted', () => {
  const settled = settleBatch(['a', 'b', 'c'], { batchItemFailures: [{ itemIdentifier: 'b' }, { itemIdentifier: 'b' }] });
  assert.deepEqual(settled, { outcome: 'partial', deleteIds: ['a', 'c'], retryIds: ['b'] });
  assert.deepEqual(settleBatch(['a'], { batchItemFailures: [{ itemIdentifier: 'a' }] }).deleteIds, []);
});

test('partial batch responses: an invalid response fails the whole batch, as AWS documents', () => {
  const ids = ['a', 'b'];
  const invalid = [
    { batchItemFailures: [{ itemIdentifier: '' }] },
    { batchItemFailures: [{ itemIdentifier: null }] },
    { batchItemFailures: [{ id: 'a' }] },
    { batchItemFailures: [{ itemIdentifier: 'not-in-batch' }] },
    { batchItemFailures: 'a' },
    'ok',
    [],
  ];
  for (const response of invalid) {
    const settled = settleBatch(ids, response);
    assert.equal(settled.outcome, 'invalid-response', JSON.stringify(response));
    assert.deepEqual(settled.deleteIds, []);
    assert.deepEqual(settled.retryIds, ids);
    assert.ok(settled.problem && settled.problem.length > 10);
  }
});

test('without ReportBatchItemFailures the response is ignored: a returned value is success', () => {
  assert.equal(settleBatch(['a'], { batchItemFailures: [{ itemIdentifier: 'a' }] }, false).outcome, 'success');
});

test('the Lambda context counts down from the deadline and rejects callback-style completion', () => {
  let now = 1_000_000;
  const context = createLambdaContext({
    functionName: 'memcached',
    region: 'eu-west-1',
    requestId: 'req-1',
    deadline: now + 30_000,
    memoryLimitMB: 512,
    now: () => now,
  });
  assert.equal(context.getRemainingTimeInMillis(), 30_000);
  now += 29_000;
  assert.equal(context.getRemainingTimeInMillis(), 1_000);
  now += 5_000;
  assert.equal(context.getRemainingTimeInMillis(), 0);
  assert.equal(context.awsRequestId, 'req-1');
  assert.equal(context.invokedFunctionArn, 'arn:aws:lambda:eu-west-1:000000000000:function:memcached');
  assert.equal(context.memoryLimitInMB, '512');
  assert.throws(() => context.succeed('x'), /not supported on nodejs24\.x/);
});

test('a message received again while gathering a batch replaces its older copy', () => {
  const batch: Message[] = [{ MessageId: 'a', ReceiptHandle: 'old' }];
  addLatest(batch, [
    { MessageId: 'b', ReceiptHandle: 'b1' },
    { MessageId: 'a', ReceiptHandle: 'new' },
  ]);
  assert.deepEqual(
    batch.map((m) => `${m.MessageId}:${m.ReceiptHandle}`),
    ['a:new', 'b:b1'],
  );
});

test('queueArnFromUrl derives the ARN from an account/name queue URL', () => {
  assert.equal(queueArnFromUrl('http://127.0.0.1:9324/000000000000/work', 'us-east-1'), 'arn:aws:sqs:us-east-1:000000000000:work');
  assert.equal(queueArnFromUrl('https://sqs.eu-west-1.amazonaws.com/123456789012/q', 'eu-west-1'), 'arn:aws:sqs:eu-west-1:123456789012:q');
});

test('loadHandler imports a named export from an .mjs bundle and explains a missing one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-runner-'));
  const file = join(dir, 'fn.mjs');
  writeFileSync(file, 'export const handler = async (event) => ({ batchItemFailures: [], n: event.Records.length });\n');
  const handler = await loadHandler({ module: file });
  assert.deepEqual(await handler({ Records: [] }, createLambdaContext({ functionName: 'f', region: 'r', requestId: 'x', deadline: 0, memoryLimitMB: 128 })), {
    batchItemFailures: [],
    n: 0,
  });
  await assert.rejects(loadHandler({ module: file, export: 'reconcile' }), /no exported function "reconcile" \(exports: handler\)/);
  await assert.rejects(loadHandler({ module: join(dir, 'missing.mjs') }), /Cannot load the function module/);
});

test('FIFO: a failed record stops the rest of its group in the batch; other groups and ungrouped records keep their settlement', () => {
  const records = [
    { id: 'a1', group: 'A' },
    { id: 'b1', group: 'B' },
    { id: 'a2', group: 'A' },
    { id: 'a3', group: 'A' },
    { id: 'b2', group: 'B' },
  ];
  const ids = records.map((r) => r.id);
  const settled = fifoSettlement(records, settleBatch(ids, { batchItemFailures: [{ itemIdentifier: 'a2' }] }));
  assert.deepEqual(settled.deleteIds, ['a1', 'b1', 'b2']);
  assert.deepEqual(settled.retryIds, ['a2', 'a3']);
  assert.deepEqual(settled.stopped, ['a3']);
  const full = fifoSettlement(records, settleBatch(ids, { batchItemFailures: [{ itemIdentifier: 'a2' }, { itemIdentifier: 'a3' }] }));
  assert.deepEqual(full.stopped, [], 'a handler that follows the rule changes nothing');
  assert.deepEqual(
    fifoSettlement(
      [
        { id: 'x', group: undefined },
        { id: 'y', group: undefined },
      ],
      settleBatch(['x', 'y'], { batchItemFailures: [{ itemIdentifier: 'x' }] }),
    ).deleteIds,
    ['y'],
  );
});
