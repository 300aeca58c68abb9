import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messageSender, QueueSendError, singleEntry, type BatchEntry, type QueuePort } from '../../../src/queue/port.ts';
import { batchInput } from '../../../src/queue/sqs-port.ts';

/** What SQS receives for one message of the runtime's sender: a SendMessageBatch of one entry. */
const wire = (message: Parameters<typeof singleEntry>[0]) => batchInput('u', [singleEntry(message)]);

test('SendMessage input: body, delay only when non-zero, string attributes', () => {
  assert.deepEqual(wire({ body: 'b' }), { QueueUrl: 'u', Entries: [{ Id: 'm', MessageBody: 'b' }] });
  assert.deepEqual(wire({ body: 'b', delaySeconds: 0 }), { QueueUrl: 'u', Entries: [{ Id: 'm', MessageBody: 'b' }] });
  assert.deepEqual(wire({ body: 'b', delaySeconds: 900, attributes: { 'operless.reason': 'TerminalError' } }), {
    QueueUrl: 'u',
    Entries: [{ Id: 'm', MessageBody: 'b', DelaySeconds: 900, MessageAttributes: { 'operless.reason': { DataType: 'String', StringValue: 'TerminalError' } } }],
  });
});

test("the runtime's sender over the queue port: resolves once the entry is accepted; a rejected entry or a failed request rejects with a QueueSendError naming the queue", async () => {
  const sent: { url: string; entries: readonly BatchEntry[] }[] = [];
  const port = (url: string, outcome: 'ok' | 'rejected' | 'down'): QueuePort => ({
    async sendBatch(entries) {
      sent.push({ url, entries });
      if (outcome === 'down') throw new Error('connect ECONNREFUSED');
      return {
        failed: outcome === 'rejected' ? [{ id: entries[0]!.id, senderFault: true, code: 'InvalidParameterValue', message: 'DelaySeconds too large' }] : [],
      };
    },
    async probe() {},
  });
  const sender = messageSender((url) => port(url, url === 'ok' ? 'ok' : url === 'rejected' ? 'rejected' : 'down'));
  await sender.send('ok', { body: 'b', delaySeconds: 5 });
  assert.deepEqual(sent.at(-1), { url: 'ok', entries: [{ id: 'm', body: 'b', delaySeconds: 5 }] });
  await assert.rejects(
    sender.send('rejected', { body: 'b' }),
    (err: unknown) => err instanceof QueueSendError && err.queueUrl === 'rejected' && /InvalidParameterValue: DelaySeconds too large/.test(err.message),
  );
  await assert.rejects(
    sender.send('down', { body: 'b' }),
    (err: unknown) => err instanceof QueueSendError && err.queueUrl === 'down' && /ECONNREFUSED/.test(err.message),
  );
});
