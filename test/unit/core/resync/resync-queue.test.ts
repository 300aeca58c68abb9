import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resyncQueueUrl } from '../../../../src/core/resync/resync.ts';

const WORK = 'https://sqs.eu-west-1.amazonaws.com/1/work';
const BULK = 'https://sqs.eu-west-1.amazonaws.com/1/work-bulk';

test('the resync sends to the bulk queue when there is one, else to the work queue', () => {
  assert.equal(resyncQueueUrl({ OPERLESS_QUEUE_URL: WORK, OPERLESS_BULK_QUEUE_URL: BULK }), BULK);
  assert.equal(
    resyncQueueUrl({ OPERLESS_QUEUE_URL: WORK, OPERLESS_BULK_QUEUE_URL: '' }),
    WORK,
    'empty is absent (serverless.yml sets it empty with per-key ordering)',
  );
  assert.equal(resyncQueueUrl({ OPERLESS_QUEUE_URL: WORK }), WORK);
});

test('a bulk queue with per-key ordering, or no work queue, is refused naming the variable', () => {
  assert.throws(
    () => resyncQueueUrl({ OPERLESS_QUEUE_URL: `${WORK}.fifo`, OPERLESS_BULK_QUEUE_URL: BULK }),
    /OPERLESS_BULK_QUEUE_URL must be empty with per-key ordering/,
  );
  assert.throws(() => resyncQueueUrl({ OPERLESS_QUEUE_URL: WORK, OPERLESS_BULK_QUEUE_URL: `${BULK}.fifo` }), /OPERLESS_BULK_QUEUE_URL must be empty/);
  assert.throws(() => resyncQueueUrl({ OPERLESS_BULK_QUEUE_URL: BULK }), /needs OPERLESS_QUEUE_URL/);
});
