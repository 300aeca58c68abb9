import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sendMessageInput } from '../../../src/queue/sender.ts';

test('SendMessage input: body, delay only when non-zero, string attributes', () => {
  assert.deepEqual(sendMessageInput('u', { body: 'b' }), { QueueUrl: 'u', MessageBody: 'b' });
  assert.deepEqual(sendMessageInput('u', { body: 'b', delaySeconds: 0 }), { QueueUrl: 'u', MessageBody: 'b' });
  assert.deepEqual(sendMessageInput('u', { body: 'b', delaySeconds: 900, attributes: { 'operless.reason': 'TerminalError' } }), {
    QueueUrl: 'u', MessageBody: 'b', DelaySeconds: 900,
    MessageAttributes: { 'operless.reason': { DataType: 'String', StringValue: 'TerminalError' } },
  });
});
