import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isKubeApiError } from '../../../src/kube/errors.ts';
import {
  deliverWatchLine,
  parseResponseBody,
  parseWatchLine,
  requestHeaders,
  requestUrl,
  takeLines,
  tlsAgentOptions,
  tlsFingerprint,
  unreachableError,
  type WatchEvent,
} from '../../../src/kube/transport.ts';

test('requestUrl keeps the server path prefix, a query string in the path, and sets defined query values', () => {
  const url = requestUrl(new URL('https://api:6443/prefix/'), '/api/v1/pods?limit=5&labelSelector=a%3Db', { watch: true, limit: 10, skipped: undefined });
  assert.equal(url.origin, 'https://api:6443');
  assert.equal(url.pathname, '/prefix/api/v1/pods');
  assert.equal(url.searchParams.get('labelSelector'), 'a=b');
  assert.equal(url.searchParams.get('limit'), '10');
  assert.equal(url.searchParams.get('watch'), 'true');
  assert.equal(url.searchParams.has('skipped'), false);
  assert.equal(requestUrl(new URL('http://127.0.0.1:8080'), '/healthz', undefined).href, 'http://127.0.0.1:8080/healthz');
});

test('takeLines returns complete lines and keeps the unfinished tail, across chunk boundaries', () => {
  assert.deepEqual(takeLines(''), { lines: [], rest: '' });
  assert.deepEqual(takeLines('{"a":1'), { lines: [], rest: '{"a":1' });
  assert.deepEqual(takeLines('{"a":1}\n{"b"'), { lines: ['{"a":1}'], rest: '{"b"' });
  assert.deepEqual(takeLines('x\n\ny\n'), { lines: ['x', '', 'y'], rest: '' });
  // Feeding a stream chunk by chunk yields the same lines as feeding it at once.
  const stream = '{"type":"ADDED"}\n{"type":"MODIFIED"}\n{"type":"DELETED"}\n';
  const lines: string[] = [];
  let pending = '';
  for (const chunk of ['{"ty', 'pe":"ADDED"}\n{"type":"MOD', 'IFIED"}\n', '{"type":"DELETED"}\n']) {
    const taken = takeLines(pending + chunk);
    lines.push(...taken.lines);
    pending = taken.rest;
  }
  assert.deepEqual(lines, takeLines(stream).lines);
  assert.equal(pending, '');
});

test('parseWatchLine: an event, a blank line (nothing), anything else throws', () => {
  assert.deepEqual(parseWatchLine('{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p"}}}'), {
    type: 'ADDED',
    object: { kind: 'Pod', metadata: { name: 'p' } },
  });
  assert.deepEqual(parseWatchLine('{"type":"ERROR","object":{"kind":"Status","code":410}}\r'), { type: 'ERROR', object: { kind: 'Status', code: 410 } });
  assert.equal(parseWatchLine(''), undefined);
  assert.equal(parseWatchLine('  \r'), undefined);
  assert.throws(() => parseWatchLine('{"type":"ADDED","obj'), SyntaxError);
  assert.throws(() => parseWatchLine('{"type":"ADDED"}'), TypeError);
  assert.throws(() => parseWatchLine('{"object":{}}'), TypeError);
  assert.throws(() => parseWatchLine('null'), TypeError);
  assert.throws(() => parseWatchLine('[1,2]'), TypeError);
});

test('tlsFingerprint changes with any TLS setting and only with those; tlsAgentOptions sets only what is given', () => {
  const c = { headers: {}, ca: 'CA', cert: 'C', key: 'K' };
  assert.equal(tlsFingerprint(c), tlsFingerprint({ ...c, headers: { 'X-Other': '1' } }));
  for (const changed of [{ ca: 'CA2' }, { cert: 'C2' }, { key: 'K2' }, { rejectUnauthorized: false }, { servername: 'api' }]) {
    assert.notEqual(tlsFingerprint({ ...c, ...changed }), tlsFingerprint(c), JSON.stringify(changed));
  }
  assert.deepEqual(tlsAgentOptions({ headers: {} }), { keepAlive: true });
  assert.deepEqual(tlsAgentOptions({ headers: {}, ca: 'CA', rejectUnauthorized: true, servername: 'api' }), { keepAlive: true, ca: 'CA', servername: 'api' });
  assert.deepEqual(tlsAgentOptions({ headers: {}, rejectUnauthorized: false }), { keepAlive: true, rejectUnauthorized: false });
});

test("requestHeaders: the credentials' headers, JSON, user agent, bearer token, and type and byte length of a body", () => {
  assert.deepEqual(requestHeaders({ headers: { 'X-A': '1' } }, 'ua', undefined, undefined, undefined), {
    'X-A': '1',
    Accept: 'application/json',
    'User-Agent': 'ua',
  });
  assert.deepEqual(requestHeaders({ headers: {} }, 'ua', 'tok', '{"é":1}', 'application/merge-patch+json'), {
    Accept: 'application/json',
    'User-Agent': 'ua',
    Authorization: 'Bearer tok',
    'Content-Type': 'application/merge-patch+json',
    'Content-Length': '8',
  });
  assert.equal(requestHeaders({ headers: {} }, 'ua', undefined, '{}', undefined)['Content-Type'], 'application/json');
});

test('unreachableError: an abort keeps its reason, a KubeApiError passes, anything else is a NetworkError naming the server', () => {
  const abort = new AbortController();
  abort.abort(new Error('shutting down'));
  assert.equal((unreachableError('https://api', 'GET /x', abort.signal, new Error('socket hang up')) as Error).message, 'shutting down');
  const network = unreachableError('https://api', 'GET /x', undefined, Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
  assert.ok(isKubeApiError(network));
  assert.equal(network.status, 0);
  assert.equal(network.reason, 'NetworkError');
  assert.match(network.message, /^GET \/x could not reach the API server at https:\/\/api: .*ECONNREFUSED/);
  assert.equal(unreachableError('https://api', 'GET /y', undefined, network), network);
});

test('parseResponseBody: empty is undefined, JSON is parsed, anything else is an InvalidResponse', () => {
  assert.equal(parseResponseBody('GET /x', 200, ''), undefined);
  assert.deepEqual(parseResponseBody('GET /x', 201, '{"a":1}'), { a: 1 });
  assert.throws(
    () => parseResponseBody('GET /x', 200, '<html>'),
    (err: unknown) => isKubeApiError(err) && err.reason === 'InvalidResponse' && err.status === 200,
  );
});

test('deliverWatchLine: an event goes to onEvent, a blank line is skipped, a bad line or a throwing onEvent ends the stream', () => {
  const seen: WatchEvent[] = [];
  const keep = (e: WatchEvent) => {
    seen.push(e);
  };
  assert.equal(deliverWatchLine('{"type":"ADDED","object":{"kind":"Pod"}}', keep, 'GET /p', 'https://api'), undefined);
  assert.equal(deliverWatchLine('', keep, 'GET /p', 'https://api'), undefined);
  assert.deepEqual(seen, [{ type: 'ADDED', object: { kind: 'Pod' } }]);
  const bad = deliverWatchLine('not json', keep, 'GET /p', 'https://api');
  assert.ok(bad && isKubeApiError(bad.error) && bad.error.reason === 'InvalidResponse');
  const thrown = new Error('handler broke');
  assert.deepEqual(
    deliverWatchLine(
      '{"type":"ADDED","object":{}}',
      () => {
        throw thrown;
      },
      'GET /p',
      'https://api',
    ),
    { error: thrown },
  );
  assert.equal(seen.length, 1);
});
