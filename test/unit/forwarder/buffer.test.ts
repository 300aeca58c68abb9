import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../support/fast-check.ts';
import { MAX_BATCH_ENTRIES, SendBuffer } from '../../../src/forwarder/sink/buffer.ts';
import { decodeMessage, newMessage, objectKey, type Reason } from '../../../src/contract/message.ts';

const msg = (name: string, at = 1, reason: Reason = 'Modified') =>
  newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name, uid: `u-${name}`, resourceVersion: String(at) }, reason, at);

test('messages for a pending key merge (one per key, newest state, earliest observedAt)', () => {
  const b = new SendBuffer(100);
  b.push(msg('a', 1));
  b.push(msg('b', 2));
  b.push(msg('a', 3, 'Owned'));
  assert.equal(b.size, 2);
  const batch = b.takeBatch(1 << 20);
  assert.deepEqual(
    batch.map((e) => e.message.name),
    ['a', 'b'],
  );
  assert.equal(batch[0]!.message.reason, 'Owned', 'the newest event wins');
  assert.equal(batch[0]!.message.resourceVersion, undefined, 'two events: no single resourceVersion names them');
  assert.equal(batch[1]!.message.resourceVersion, '2', 'a single event keeps its version');
  assert.equal(batch[0]!.message.observedAt, 1);
});

test('when full, the oldest key is dropped and reported; the newest message per key is kept', () => {
  const b = new SendBuffer(10);
  for (let i = 0; i < 10; i++) b.push(msg(`k${i}`, i));
  assert.deepEqual(b.push(msg('k3', 50, 'Owned')), [], 'a pending key merges even when full');
  const dropped = b.push(msg('new', 99));
  assert.deepEqual(
    dropped.map((m) => m.name),
    ['k0'],
  );
  assert.equal(b.size, 10);
  const all = [...b.takeBatch(1 << 20), ...b.takeBatch(1 << 20)];
  assert.equal(all.find((e) => e.message.name === 'k3')!.message.reason, 'Owned');
  assert.ok(all.some((e) => e.message.name === 'new'));
});

test('batches hold at most 10 entries and respect the byte limit; ids are unique', () => {
  const b = new SendBuffer(1000);
  for (let i = 0; i < 25; i++) b.push(msg(`object-${String(i).padStart(2, '0')}`));
  const first = b.takeBatch(1 << 20);
  assert.equal(first.length, MAX_BATCH_ENTRIES);
  assert.equal(new Set(first.map((e) => e.id)).size, first.length);
  const one = Buffer.byteLength(first[0]!.body);
  const small = b.takeBatch(one * 3 + 1);
  assert.equal(small.length, 3);
  assert.ok(small.reduce((n, e) => n + Buffer.byteLength(e.body), 0) <= one * 3 + 1);
  assert.equal(b.takeBatch(1).length, 1, 'never an empty batch while messages wait');
});

test('putBack restores a failed batch at the front, merged with newer arrivals', () => {
  const b = new SendBuffer(100);
  b.push(msg('a', 1));
  b.push(msg('b', 1));
  const batch = b.takeBatch(1 << 20);
  b.push(msg('c', 5));
  b.push(msg('a', 6, 'Owned'));
  b.putBack(batch.map((e) => e.message));
  const next = b.takeBatch(1 << 20);
  assert.deepEqual(
    next.map((e) => e.message.name),
    ['a', 'b', 'c'],
  );
  assert.equal(next[0]!.message.reason, 'Owned', 'the newer arrival wins');
  assert.equal(next[0]!.message.observedAt, 1);
});

test('property: nothing is lost or duplicated — every key pushed comes out exactly once unless reported dropped', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.boolean()), { maxLength: 200 }), fc.integer({ min: 10, max: 30 }), (ops, cap) => {
      const b = new SendBuffer(cap);
      const dropped = new Set<string>();
      const out: string[] = [];
      const pushed = new Set<string>();
      for (const [n, take] of ops) {
        const m = msg(`k${n}`);
        pushed.add(objectKey(m));
        dropped.delete(objectKey(m));
        for (const d of b.push(m)) dropped.add(objectKey(d));
        if (take) {
          const batch = b.takeBatch(1 << 20);
          for (const e of batch) {
            out.push(objectKey(e.message));
            assert.ok(decodeMessage(e.body).ok);
          }
          if (out.length % 3 === 0) {
            for (const d of b.putBack(batch.map((e) => e.message))) dropped.add(objectKey(d));
            out.splice(out.length - batch.length, batch.length);
          }
        }
        assert.ok(b.size <= cap);
      }
      while (b.size > 0) out.push(...b.takeBatch(1 << 20).map((e) => objectKey(e.message)));
      for (const key of pushed) {
        if (!dropped.has(key)) assert.ok(out.includes(key), `${key} was lost`);
      }
    }),
    fcParameters(),
  );
});
