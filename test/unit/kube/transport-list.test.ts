/**
 * The transport's streamed LIST (`KubeTransport.list`) against a local HTTP server on real
 * sockets: an item reaches the caller while the rest of the page is still unsent (the page
 * is never held whole); the list's metadata comes back without its items; a non-2xx answer is
 * its KubeApiError; a 200 body that is not a JSON list is `InvalidResponse`; a body cut off
 * mid-page is a `NetworkError`; what the caller's `onItem` throws comes back as it is.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isKubeApiError } from '../../../src/kube/errors.ts';
import { createTransport, type KubeTransport } from '../../../src/kube/transport.ts';

let server: http.Server;
let transport: KubeTransport;
/** Resolved by the test when the first item reached it: the server sends the rest only then. */
let firstItemSeen: () => void = () => {};

before(async () => {
  server = http.createServer((req, res) => {
    const path = req.url ?? '';
    if (path.startsWith('/forbidden')) {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'configmaps is forbidden' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (path.startsWith('/garbage')) {
      res.end('<html>proxy error</html>');
    } else if (path.startsWith('/cut')) {
      res.write('{"kind":"ConfigMapList","metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":');
      setTimeout(() => res.destroy(), 50);
    } else {
      res.write('{"kind":"ConfigMapList","metadata":{"resourceVersion":"7","continue":"next"},"items":[{"metadata":{"name":"a"},"data":{"k":"');
      res.write(`${'x'.repeat(100_000)}"}},`);
      // The rest only once the first item was delivered: a reader that waited for the whole body would hang here.
      new Promise<void>((resolve) => (firstItemSeen = resolve)).then(
        () => res.end('{"metadata":{"name":"b"}}]}'),
        () => {},
      );
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  transport = createTransport({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, credentials: async () => ({ headers: {} }) });
});

after(async () => {
  await transport.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('each item is delivered as it arrives, before the rest of the page was sent; the list comes back without its items', async () => {
  const names: unknown[] = [];
  const list = await transport.list({ path: '/api/v1/configmaps', query: { limit: 2 }, timeoutMs: 10_000 }, (item) => {
    names.push((item.metadata as { name?: unknown }).name);
    if (names.length === 1) firstItemSeen();
  });
  assert.deepEqual(names, ['a', 'b']);
  assert.deepEqual(list, { kind: 'ConfigMapList', metadata: { resourceVersion: '7', continue: 'next' }, items: [] });
});

test('a non-2xx answer is its KubeApiError', async () => {
  await assert.rejects(
    transport.list({ path: '/forbidden' }, () => {}),
    (err: unknown) => isKubeApiError(err) && err.status === 403 && err.reason === 'Forbidden',
  );
});

test('a 200 body that is not a JSON list is InvalidResponse', async () => {
  await assert.rejects(
    transport.list({ path: '/garbage' }, () => {}),
    (err: unknown) => isKubeApiError(err) && err.status === 200 && err.reason === 'InvalidResponse' && /not a JSON list/.test(err.message),
  );
});

test('a body cut off mid-page is a NetworkError (the items before the cut were delivered)', async () => {
  const seen: unknown[] = [];
  await assert.rejects(
    transport.list({ path: '/cut' }, (item) => seen.push(item)),
    (err: unknown) => isKubeApiError(err) && err.status === 0 && err.reason === 'NetworkError',
  );
  assert.equal(seen.length, 1);
});

test("what the caller's onItem throws comes back as it is", async () => {
  const thrown = new RangeError('the caller failed');
  await assert.rejects(
    transport.list({ path: '/api/v1/configmaps' }, () => {
      firstItemSeen();
      throw thrown;
    }),
    (err: unknown) => err === thrown,
  );
});
