/**
 * The API-server transport against a connection that accepts and never answers: a plain
 * request and a watch's opening fail with `KubeApiError{ status: 0, reason: 'Timeout' }`
 * naming the bound, whether the response headers never come or the headers come and the
 * body stalls, on a new connection or on a pooled keep-alive connection that went dead; and
 * the next request after the path heals succeeds on a fresh connection. Real sockets: a local
 * HTTP server behind the loopback stall proxy (test/support/stall-proxy.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isKubeApiError } from '../../../src/kube/errors.ts';
import { createTransport, type KubeTransport } from '../../../src/kube/transport.ts';
import { startStallProxy, type StallProxy } from '../../support/stall-proxy.ts';

const BOUND_MS = 300;
let server: http.Server;
let proxy: StallProxy;
let transport: KubeTransport;

before(async () => {
  server = http.createServer((req, res) => {
    if (req.url?.startsWith('/forbidden')) {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'no' }));
      return;
    }
    if (req.url?.includes('watch=true')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`${JSON.stringify({ type: 'ADDED', object: { kind: 'Pod', metadata: { name: 'p' } } })}\n`);
      return; // the stream stays open
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'PodList', items: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy = await startStallProxy({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
  transport = createTransport({ server: proxy.url(), credentials: async () => ({ headers: {} }) });
});

after(async () => {
  await transport.close();
  await proxy.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function assertTimeout(err: unknown): true {
  assert.ok(isKubeApiError(err), `a KubeApiError, got ${String(err)}`);
  assert.equal(err.status, 0);
  assert.equal(err.reason, 'Timeout');
  assert.match(err.message, new RegExp(`no response from the API server at ${proxy.url()} within ${BOUND_MS} ms`));
  return true;
}

const list = () => transport.request({ method: 'GET', path: '/api/v1/pods', timeoutMs: BOUND_MS });

test('a request on a connection that accepts and never answers fails with a Timeout naming the bound', async () => {
  proxy.setMode('stall');
  await assert.rejects(list(), assertTimeout);
  proxy.setMode('pass');
  assert.deepEqual((await list()).body, { kind: 'PodList', items: [] }, 'the next request, on a new connection, succeeds');
});

test('the proxy in stall-after-headers mode delivers the response headers and then nothing', async () => {
  proxy.setMode('stall-after-headers');
  const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
    http.get(`${proxy.url()}/api/v1/pods`, { agent: false }, resolve).on('error', reject),
  );
  assert.equal(response.statusCode, 200);
  assert.equal(response.readableLength, 0, 'no body byte arrived with the headers');
  response.destroy();
  proxy.setMode('pass');
});

test('a request whose headers arrive but whose body stalls fails with a Timeout', async () => {
  await transport.close(); // no pooled connection: the next one is opened in this mode
  proxy.setMode('stall-after-headers');
  await assert.rejects(list(), assertTimeout);
  proxy.setMode('pass');
  assert.equal((await list()).status, 200);
});

test('a pooled keep-alive connection that goes dead (blackholed flow) fails the request with a Timeout; the next one reconnects', async () => {
  proxy.setMode('pass');
  assert.equal((await list()).status, 200); // a connection is in the pool now
  const accepted = proxy.accepted;
  proxy.setMode('stall'); // open flows stop answering
  await assert.rejects(list(), assertTimeout);
  proxy.setMode('pass');
  assert.equal((await list()).status, 200);
  assert.ok(proxy.accepted > accepted, 'the recovery used a new connection');
});

test("a watch's opening on a connection that never answers fails with a Timeout; once the path heals it opens", async () => {
  const abort = new AbortController();
  proxy.setMode('stall');
  await assert.rejects(
    transport.watch({ path: '/api/v1/pods', signal: abort.signal, timeoutMs: BOUND_MS }, () => {}),
    assertTimeout,
  );
  proxy.setMode('pass');
  const events: string[] = [];
  let sawFirst: () => void = () => {};
  const first = new Promise<void>((resolve) => {
    sawFirst = resolve;
  });
  const handle = await transport.watch({ path: '/api/v1/pods', signal: abort.signal, timeoutMs: BOUND_MS }, (e) => {
    events.push(e.type);
    sawFirst();
  });
  await first;
  abort.abort();
  await handle.ended;
  assert.deepEqual(events, ['ADDED']);
});

test('a watch answered with an error status whose body stalls fails with a Timeout, not a hang', async () => {
  await transport.close();
  proxy.setMode('stall-after-headers');
  const abort = new AbortController();
  await assert.rejects(
    transport.watch({ path: '/forbidden', signal: abort.signal, timeoutMs: BOUND_MS }, () => {}),
    assertTimeout,
  );
  proxy.setMode('pass');
  await assert.rejects(
    transport.watch({ path: '/forbidden', signal: abort.signal, timeoutMs: BOUND_MS }, () => {}),
    (err: unknown) => isKubeApiError(err) && err.status === 403,
  );
});
