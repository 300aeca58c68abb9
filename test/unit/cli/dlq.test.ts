import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFilters, redriveMessage, toEntry } from '../../../src/cli/commands/dlq.ts';
import { encodeMessage, followUp, newMessage } from '../../../src/contract/message.ts';
import { isSupersededRequeue } from '../../../src/core/per-key/requeue-merge.ts';
import { REQUEUE_MARK_ANNOTATION } from '../../../src/contract/requeue-mark.ts';

const body = encodeMessage(
  newMessage({ cluster: 'dev', apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'cache' }, 'Modified', 1000),
);

test("entries carry the runtime's reason, or maxReceiveCount when SQS moved them", () => {
  const ours = toEntry({
    MessageId: 'm1',
    ReceiptHandle: 'r1',
    Body: body,
    Attributes: { ApproximateReceiveCount: '2', SentTimestamp: '0' },
    MessageAttributes: {
      'operless.reason': { DataType: 'String', StringValue: 'RetriesExhausted' },
      'operless.error': { DataType: 'String', StringValue: 'boom' },
    },
  });
  assert.equal(ours.reason, 'RetriesExhausted');
  assert.equal(ours.error, 'boom');
  assert.equal(ours.message?.name, 'cache');
  assert.equal(ours.receiveCount, 2);

  const sqsMoved = toEntry({ MessageId: 'm2', ReceiptHandle: 'r2', Body: body });
  assert.equal(sqsMoved.reason, 'maxReceiveCount');
  assert.match(sqsMoved.error, /maxReceiveCount/);

  const poison = toEntry({ MessageId: 'm3', ReceiptHandle: 'r3', Body: 'not json' });
  assert.equal(poison.message, undefined);
  assert.match(poison.error, /not JSON/);
});

test("a failed resync that Lambda wrote to the DLQ (onError) is named as such, with Lambda's error", () => {
  // What Lambda sends to a function's DLQ after an asynchronous invocation exhausted its retries:
  // the original event (here EventBridge's scheduled event) and the error as message attributes.
  const event = JSON.stringify({ 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} });
  const entry = toEntry({
    MessageId: 'm4',
    ReceiptHandle: 'r4',
    Body: event,
    MessageAttributes: {
      RequestID: { DataType: 'String', StringValue: 'c0ffee00-1111-2222-3333-444455556666' },
      ErrorCode: { DataType: 'Number', StringValue: '200' },
      ErrorMessage: { DataType: 'String', StringValue: 'Task timed out after 300.00 seconds' },
    },
  });
  assert.equal(entry.reason, 'AsyncInvokeFailed');
  assert.match(entry.error, /c0ffee00.*Task timed out after 300\.00 seconds/);
  assert.equal(entry.message, undefined, 'not a reconcile message: never redriven');
  assert.equal(parseFilters(['reason=AsyncInvokeFailed'])(entry), true);
});

test('filters combine and reject unknown fields', () => {
  const entry = toEntry({
    MessageId: 'm1',
    ReceiptHandle: 'r1',
    Body: body,
    MessageAttributes: { 'operless.reason': { DataType: 'String', StringValue: 'TerminalError' } },
  });
  assert.equal(parseFilters([])(entry), true);
  assert.equal(parseFilters(['reason=TerminalError', 'kind=Memcached'])(entry), true);
  assert.equal(parseFilters(['reason=TerminalError', 'namespace=other'])(entry), false);
  assert.equal(parseFilters(['key=default/ca'])(entry), true);
  assert.throws(() => parseFilters(['colour=red']), /field "colour" is not one of/);
  assert.throws(() => parseFilters(['reason']), /must look like <field>=<value>/);
});

test('redrive: a fresh start (attempt 0, due now); a Requeue goes back as a Retry, which per-key mode never takes for a replaced requeue', () => {
  const base = newMessage(
    { cluster: 'dev', apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'cache' },
    'Modified',
    1000,
  );
  const requeue = followUp(base, { reason: 'Requeue', attempt: 0, notBefore: 5_000 });
  const again = redriveMessage(requeue);
  assert.equal(again.reason, 'Retry');
  assert.equal(again.attempt, 0);
  assert.equal(again.notBefore, undefined);
  const marked = { apiVersion: 'v1', kind: 'Memcached', metadata: { name: 'cache', annotations: { [REQUEUE_MARK_ANNOTATION]: '9000' } } };
  assert.equal(isSupersededRequeue([requeue], marked), true, 'as it was dead-lettered, a later mark would drop it');
  assert.equal(isSupersededRequeue([again], marked), false, 'redriven, it is reconciled');
  const retried = redriveMessage(followUp(base, { reason: 'Retry', attempt: 7, notBefore: 5_000 }));
  assert.deepEqual([retried.reason, retried.attempt, retried.notBefore], ['Retry', 0, undefined]);
  assert.equal(redriveMessage(base).reason, 'Modified', 'other reasons are kept');
});
