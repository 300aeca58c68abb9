import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWatchLine, requestUrl, takeLines } from '../../../src/kube/transport.ts';

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
    type: 'ADDED', object: { kind: 'Pod', metadata: { name: 'p' } },
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
