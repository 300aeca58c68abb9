/**
 * Every SQS client Operless creates bounds its requests: against a connection that accepts
 * and never answers, or answers the headers and stalls the body, the forwarder's queue port
 * (send, probe, depth) and the function's follow-up sender fail with a timeout instead of
 * waiting the SDK's 15 minutes. Real sockets and the real AWS SDK: a local HTTP server
 * behind the loopback stall proxy (test/support/stall-proxy.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSqsQueue } from '../../../src/queue/sqs.ts';
import type { QueuePort } from '../../../src/queue/port.ts';
import { lazySqsSender, QueueSendError, sqsRequestHandler } from '../../../src/queue/sender.ts';
import { startStallProxy, type StallProxy } from '../../support/stall-proxy.ts';

const TIMEOUTS = { connectTimeoutMs: 200, requestTimeoutMs: 400 };
/** Fails the test instead of hanging on main (where the SDK waits 15 minutes). */
const GUARD = { timeout: 20_000 };
let server: http.Server;
let proxy: StallProxy;
let port: QueuePort;
const saved = { ...process.env };

before(async () => {
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: 'us-east-1' });
  // Answers every SQS JSON-protocol call with an empty success.
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify({ Successful: [], Failed: [], Attributes: { ApproximateNumberOfMessages: '0' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy = await startStallProxy({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
  port = createSqsQueue({ queueUrl: `${proxy.url()}/000000000000/work`, region: 'us-east-1', endpoint: proxy.url(), timeouts: TIMEOUTS });
});

after(async () => {
  port.close?.();
  await proxy.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  process.env = saved;
});

const isTimeout = (err: unknown): boolean => err instanceof Error && (err.name === 'TimeoutError' || /timed out|timeout/i.test(err.message));
const entries = [{ id: 'a', body: '{}' }];

test('sqsRequestHandler: connection and request timeouts that throw, and an idle timeout for a stalled body', () => {
  assert.deepEqual(sqsRequestHandler({ connectTimeoutMs: 1000, requestTimeoutMs: 5000 }), {
    connectionTimeout: 1000,
    requestTimeout: 5000,
    throwOnRequestTimeout: true,
    socketTimeout: 5000,
  });
});

test('the forwarder queue port: SendMessageBatch, probe and depth on a connection that never answers fail with a timeout', GUARD, async () => {
  proxy.setMode('stall');
  await assert.rejects(port.sendBatch(entries), isTimeout);
  await assert.rejects(port.probe(), isTimeout);
  await assert.rejects(port.depth!(), isTimeout);
  proxy.setMode('pass');
  assert.deepEqual(await port.sendBatch(entries), { failed: [] }, 'answers again once the path heals');
});

test('the forwarder queue port: a response whose body stalls after the headers fails with a timeout', GUARD, async () => {
  proxy.setMode('stall-after-headers'); // applies to new connections: a fresh client has none pooled
  const fresh = createSqsQueue({ queueUrl: `${proxy.url()}/000000000000/work`, region: 'us-east-1', endpoint: proxy.url(), timeouts: TIMEOUTS });
  try {
    await assert.rejects(fresh.sendBatch(entries), isTimeout);
    proxy.setMode('pass');
    await fresh.probe();
  } finally {
    fresh.close?.();
  }
});

test("the function's follow-up sender (default client) on a connection that never answers rejects with a QueueSendError naming the queue", GUARD, async () => {
  process.env.AWS_ENDPOINT_URL_SQS = proxy.url();
  process.env.AWS_MAX_ATTEMPTS = '1';
  try {
    const sender = lazySqsSender(undefined, TIMEOUTS);
    proxy.setMode('stall');
    const queueUrl = `${proxy.url()}/000000000000/work`;
    await assert.rejects(sender.send(queueUrl, { body: '{}' }), (err: unknown) => {
      assert.ok(err instanceof QueueSendError);
      assert.equal(err.queueUrl, queueUrl);
      assert.ok(isTimeout(err.cause), String(err.cause));
      return true;
    });
  } finally {
    proxy.setMode('pass');
    delete process.env.AWS_ENDPOINT_URL_SQS;
    delete process.env.AWS_MAX_ATTEMPTS;
  }
});
