/**
 * The embedded queue's HTTP guards, against the real server on loopback: a request naming a
 * non-loopback Host (DNS rebinding) is refused with SQS's AccessDenied shape before its body is
 * read; a body longer than any valid request is refused without being buffered, SQS-shaped;
 * messages over SQS's 1 MiB limit are refused as SQS refuses them, and the SDK still works.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { isLoopbackHost, MAX_REQUEST_BODY_BYTES, startMemoryQueueServer, type MemoryQueueServer } from '../../../src/local/memory-queue-server.ts';
import { MAX_MESSAGE_SIZE_BYTES } from '../../../src/local/memory-queue.ts';

let server: MemoryQueueServer;
before(async () => {
  server = await startMemoryQueueServer({ queues: [{ name: 'work' }] });
});
after(async () => {
  await server.stop();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** One raw request: `body` is written in chunks of 64 KiB (until the server hangs up). */
function raw(options: { host?: string; target: string; body: string | number; contentLength?: boolean }): Promise<Answer> {
  const url = new URL(server.endpoint);
  const payload = typeof options.body === 'string' ? Buffer.from(options.body) : Buffer.alloc(options.body, 'a');
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/',
        agent: false,
        headers: {
          host: options.host ?? url.host,
          'x-amz-target': options.target,
          'content-type': 'application/x-amz-json-1.0',
          ...(options.contentLength === false ? { 'transfer-encoding': 'chunked' } : { 'content-length': payload.length }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown> }),
        );
      },
    );
    req.on('error', (err) =>
      (err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err),
    );
    let offset = 0;
    const write = () => {
      while (offset < payload.length) {
        const chunk = payload.subarray(offset, offset + 65_536);
        offset += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', write);
      }
      req.end();
    };
    write();
  });
}

test('isLoopbackHost: loopback names with or without a port; anything else is not', () => {
  for (const host of ['127.0.0.1', '127.0.0.1:9324', 'localhost:1', 'LOCALHOST', '[::1]:80', '[::1]']) assert.equal(isLoopbackHost(host), true, host);
  for (const host of [undefined, '', 'evil.example', 'evil.example:80', '127.0.0.1.evil.example', 'localhost.evil', '10.0.0.1:9324', '[::2]:80'])
    assert.equal(isLoopbackHost(host), false, String(host));
});

test('a request whose Host is not loopback is refused with AccessDenied (403), SQS-shaped; the same request to 127.0.0.1 is served', async () => {
  const body = JSON.stringify({ QueueUrl: server.queueUrl('work'), MessageBody: 'x' });
  const refused = await raw({ host: 'rebound.evil.example:80', target: 'AmazonSQS.SendMessage', body });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.__type, 'com.amazonaws.sqs#AccessDenied');
  assert.match(String(refused.body.message), /loopback requests only.*rebound\.evil\.example/);
  assert.equal(refused.headers['x-amzn-query-error'], 'AccessDenied;Sender');
  const served = await raw({ target: 'AmazonSQS.SendMessage', body });
  assert.equal(served.status, 200);
  assert.ok(served.body.MessageId);
});

test('a body over the limit is refused without being read in full: BatchRequestTooLong for a batch, InvalidParameterValue otherwise', async () => {
  const batch = await raw({ target: 'AmazonSQS.SendMessageBatch', body: MAX_REQUEST_BODY_BYTES + 1 });
  assert.equal(batch.status, 400);
  assert.equal(batch.body.__type, 'com.amazonaws.sqs#BatchRequestTooLong');
  assert.equal(batch.headers.connection, 'close');
  const streamed = await raw({ target: 'AmazonSQS.SendMessage', body: MAX_REQUEST_BODY_BYTES + 70_000, contentLength: false });
  assert.equal(streamed.status, 400);
  assert.equal(streamed.body.__type, 'com.amazonaws.sqs#InvalidParameterValue');
  assert.match(String(streamed.body.message), new RegExp(`longer than ${MAX_REQUEST_BODY_BYTES} bytes`));
  // The server goes on serving.
  assert.equal((await raw({ target: 'AmazonSQS.ListQueues', body: '{}' })).status, 200);
});

test('through the SDK: a message of exactly 1 MiB is accepted, one byte more is InvalidParameterValue, a batch over 1 MiB BatchRequestTooLong', async () => {
  const sqs = server.sqs();
  try {
    const QueueUrl = server.queueUrl('work');
    assert.ok((await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'm'.repeat(MAX_MESSAGE_SIZE_BYTES) }))).MessageId);
    await assert.rejects(
      sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'm'.repeat(MAX_MESSAGE_SIZE_BYTES + 1) })),
      (err: Error) => err.name === 'InvalidParameterValue',
    );
    const Entries = [0, 1].map((i) => ({ Id: `e${i}`, MessageBody: 'b'.repeat(MAX_MESSAGE_SIZE_BYTES / 2 + 1) }));
    await assert.rejects(sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries })), (err: Error) => err.name === 'BatchRequestTooLong');
  } finally {
    sqs.destroy();
  }
});
