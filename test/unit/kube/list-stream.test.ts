/**
 * The streamed LIST reader (src/kube/list-stream.ts): items come out exactly as a whole-body
 * JSON.parse would give them, wherever the chunks split the text; the envelope keeps the
 * list's metadata; what is not a JSON list is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ListScanner, MAX_ENVELOPE_BYTES } from '../../../src/kube/list-stream.ts';

/** The items and envelope of `text` read in chunks of `sizes` (cycled) bytes. */
function scan(text: string | Buffer, size: number): { items: unknown[]; envelope: Record<string, unknown> } {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const items: unknown[] = [];
  const scanner = new ListScanner((item) => items.push(item));
  for (let i = 0; i < bytes.length; i += size) scanner.push(bytes.subarray(i, i + size));
  return { items, envelope: scanner.finish() };
}

/** What a whole-body parse says: the items, and the rest with items emptied. */
function expected(text: string): { items: unknown[]; envelope: Record<string, unknown> } {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  return { items: (parsed.items as unknown[]).filter((i) => typeof i === 'object' && i !== null && !Array.isArray(i)), envelope: { ...parsed, items: [] } };
}

const tricky = JSON.stringify({
  kind: 'ConfigMapList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '42', continue: 'abc"}]\\', items: ['not', 'the', 'list'] },
  items: [
    { metadata: { name: 'a', annotations: { 'x/items': '[{"items":[]}]' } }, data: { q: '"}],\\', e: 'back\\\\slash\\"quote', u: 'é中😀\u0000\n' } },
    { metadata: { name: 'b' }, items: [{ nested: true }], data: {} },
    {},
  ],
  trailer: { after: 'items', n: [1, 2, { x: '}' }] },
});

test('items and envelope are exactly what a whole-body parse gives, at every chunk size', () => {
  const want = expected(tricky);
  const bytes = Buffer.from(tricky, 'utf8');
  for (let size = 1; size <= bytes.length; size += size < 40 ? 1 : 37) assert.deepEqual(scan(bytes, size), want, `chunks of ${size} bytes`);
});

test('a split at every byte position (inside escapes and multi-byte characters) changes nothing', () => {
  const want = expected(tricky);
  const bytes = Buffer.from(tricky, 'utf8');
  for (let at = 0; at <= bytes.length; at++) {
    const items: unknown[] = [];
    const scanner = new ListScanner((item) => items.push(item));
    scanner.push(bytes.subarray(0, at));
    scanner.push(bytes.subarray(at));
    assert.deepEqual({ items, envelope: scanner.finish() }, want, `split at ${at}`);
  }
});

test('pretty-printed lists, empty lists, and metadata after the items', () => {
  for (const text of [
    JSON.stringify(JSON.parse(tricky), null, 2),
    '{"kind":"List","metadata":{"resourceVersion":"1"},"items":[]}',
    '{ "items" : [ ] , "metadata" : { "continue" : "" } }',
    '{"items":[{"a":1},{"b":"]"}],"metadata":{"resourceVersion":"9"}}',
  ]) {
    for (const size of [1, 3, 1000]) assert.deepEqual(scan(text, size), expected(text), text);
  }
});

test('a list without items is its envelope', () => {
  const text = '{"kind":"List","metadata":{"resourceVersion":"1"}}';
  assert.deepEqual(scan(text, 2), { items: [], envelope: JSON.parse(text) });
});

test('an element that is not an object is skipped; the objects around it are delivered', () => {
  const text = '{"items":[null, 1 ,"s",[1],{"a":"x"},true,{"b":2}],"metadata":{}}';
  for (const size of [1, 2, 5, 100]) assert.deepEqual(scan(text, size).items, [{ a: 'x' }, { b: 2 }]);
});

test('each item is delivered as soon as its bytes arrived, before the rest of the page', () => {
  const seen: unknown[] = [];
  const scanner = new ListScanner((item) => seen.push(item));
  scanner.push(Buffer.from('{"metadata":{},"items":[{"n":1},{"n"'));
  assert.deepEqual(seen, [{ n: 1 }]);
  scanner.push(Buffer.from(':2}]}'));
  assert.deepEqual(seen, [{ n: 1 }, { n: 2 }]);
  assert.equal(scanner.items, 2);
});

test('what is not a JSON list is refused', () => {
  for (const text of ['', '{"items":[{"a":1}', '{"items":[{"a":1},x]}', '[1,2]', '{"items":[]', '{"a":"unterminated}', 'not json']) {
    assert.throws(
      () => scan(text, 4),
      (err: unknown) => err instanceof SyntaxError || err instanceof TypeError,
      JSON.stringify(text),
    );
  }
});

test('an envelope past its bound is refused (a body that is not a list is not held whole)', () => {
  const text = `{"kind":"NotAList","blob":"${'x'.repeat(MAX_ENVELOPE_BYTES)}"}`;
  assert.throws(() => scan(text, 65536), /envelope/);
});

test('a throwing consumer stops the scan with its own error', () => {
  const scanner = new ListScanner(() => {
    throw new RangeError('consumer');
  });
  assert.throws(() => scanner.push(Buffer.from('{"items":[{"a":1}]}')), RangeError);
});
