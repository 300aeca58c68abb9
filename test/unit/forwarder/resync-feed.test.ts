import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_BATCH_ENTRIES, SendBuffer } from '../../../src/forwarder/sink/buffer.ts';
import { feedRoom, RESYNC_AHEAD, ResyncFeed, type ResyncSummary } from '../../../src/forwarder/sink/resync-feed.ts';
import { newMessage, objectKey, type ReconcileMessage } from '../../../src/contract/message.ts';
import { fcParameters } from '../../support/fast-check.ts';

/** fast-check runs replayable from the seed it prints on failure (test/support/fast-check.ts). */
const fcParams = fcParameters();

const ref = (name: string) => ({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name });
const resync = (name: string) => newMessage({ ...ref(name), uid: `u-${name}` }, 'Resync', 1);
const keyOf = (name: string) => objectKey(ref(name));
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

function feed(onFinished?: (s: ResyncSummary) => void): ResyncFeed<ReconcileMessage> {
  return new ResyncFeed<ReconcileMessage>(objectKey, onFinished);
}

test('feedRoom: tops the buffer up to min(RESYNC_AHEAD, capacity / 2), at least 1; none once there', () => {
  assert.equal(feedRoom(0, 10_000), RESYNC_AHEAD);
  assert.equal(feedRoom(RESYNC_AHEAD - 3, 10_000), 3);
  assert.equal(feedRoom(RESYNC_AHEAD, 10_000), 0);
  assert.equal(feedRoom(9_000, 10_000), 0, 'a buffer busy with live changes gets no resync messages');
  assert.equal(feedRoom(0, 10), 5, 'half of a small buffer stays free for live changes');
  assert.equal(feedRoom(0, 1), 1);
  assert.equal(feedRoom(4, 1), 0);
});

test('items come out once each, in list order, sources in start order; fewer than asked only at the end', () => {
  const done: ResyncSummary[] = [];
  const f = feed((s) => done.push(s));
  f.start('a', names('a', 7), resync);
  f.start('b', names('b', 5), resync);
  assert.equal(f.pending, 12);
  const out: string[] = [];
  for (let batch = f.take(5); batch.length > 0; batch = f.take(5)) {
    if (f.pending > 0) assert.equal(batch.length, 5);
    out.push(...batch.map((m) => m.name));
  }
  assert.deepEqual(out, [...names('a', 7), ...names('b', 5)]);
  assert.equal(f.pending, 0);
  assert.equal(f.sources, 0);
  assert.deepEqual(
    done.map((s) => [s.id, s.listed, s.fed, s.satisfied]),
    [
      ['a', 7, 7, 0],
      ['b', 5, 5, 0],
    ],
  );
  assert.ok(out.every((n) => resync(n).reason === 'Resync'));
});

test('a live message for a key not sent yet satisfies it; one from before the resync started does not', () => {
  const done: ResyncSummary[] = [];
  const f = feed((s) => done.push(s));
  f.satisfy(keyOf('x1')); // before the resync: its message may be older than the list
  f.start('s', ['x0', 'x1', 'x2', 'x3'], resync);
  assert.deepEqual(
    f.take(1).map((m) => m.name),
    ['x0'],
  );
  f.satisfy(keyOf('x0')); // already sent: nothing changes
  f.satisfy(keyOf('x2'));
  assert.deepEqual(
    f.take(10).map((m) => m.name),
    ['x1', 'x3'],
  );
  assert.deepEqual(done, [{ id: 's', listed: 4, fed: 3, satisfied: 1 }]);
});

test('a newer resync of the same source replaces the one in progress, and earlier live messages no longer satisfy it', () => {
  const f = feed();
  f.start('s', names('k', 10), resync);
  f.take(4);
  f.satisfy(keyOf('k6'));
  f.start('s', names('k', 10), resync); // e.g. the healing resync after an overflow
  assert.equal(f.pending, 10);
  assert.deepEqual(
    f.take(100).map((m) => m.name),
    names('k', 10),
    'every key again, k6 included (its live message may have been the one dropped)',
  );
});

test('clear forgets every pending resync and reports how many items it held', () => {
  const f = feed();
  f.start('a', names('a', 30), resync);
  f.start('b', names('b', 20), resync);
  f.take(12);
  assert.equal(f.clear(), 38);
  assert.equal(f.pending, 0);
  assert.deepEqual(f.take(10), []);
});

test('property: per source, every item of its latest start comes out exactly once unless a live message satisfied it after that start', () => {
  type Op = { kind: 'start'; source: number; size: number } | { kind: 'satisfy'; key: number } | { kind: 'take'; n: number };
  const op = fc.oneof(
    fc.record({ kind: fc.constant('start' as const), source: fc.integer({ min: 0, max: 2 }), size: fc.integer({ min: 0, max: 30 }) }),
    fc.record({ kind: fc.constant('satisfy' as const), key: fc.integer({ min: 0, max: 30 }) }),
    fc.record({ kind: fc.constant('take' as const), n: fc.integer({ min: 1, max: 12 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 120 }), (ops: Op[]) => {
      const f = feed();
      const name = (source: number, i: number) => `s${source}-${i}`;
      const sourceOf = (n: string) => Number(n.slice(1, n.indexOf('-')));
      // Model, per source since its latest start: names due, names that may be skipped, names out.
      const model = new Map<number, { due: Set<string>; optional: Set<string>; out: Set<string> }>();
      const account = (out: readonly ReconcileMessage[]) => {
        for (const m of out) {
          const s = model.get(sourceOf(m.name))!;
          assert.ok(!s.out.has(m.name), `${m.name} came out twice`);
          assert.ok(s.due.has(m.name) || s.optional.has(m.name), `${m.name} is not part of the latest start`);
          s.due.delete(m.name);
          s.out.add(m.name);
        }
      };
      for (const o of ops) {
        if (o.kind === 'start') {
          const items = Array.from({ length: o.size }, (_, i) => name(o.source, i));
          f.start(String(o.source), items, resync);
          model.set(o.source, { due: new Set(items), optional: new Set(), out: new Set() });
        } else if (o.kind === 'satisfy') {
          for (const [source, s] of model) {
            f.satisfy(keyOf(name(source, o.key)));
            if (s.due.delete(name(source, o.key))) s.optional.add(name(source, o.key));
          }
        } else {
          const out = f.take(o.n);
          assert.ok(out.length <= o.n);
          if (out.length < o.n) assert.equal(f.pending, 0, 'fewer than asked only when empty');
          account(out);
        }
        assert.equal(f.pending >= [...model.values()].reduce((n, s) => n + s.due.size, 0), true, 'pending bounds what is due');
      }
      account(f.take(Number.MAX_SAFE_INTEGER));
      for (const [source, s] of model) assert.deepEqual([...s.due], [], `source ${source}: items never fed`);
      assert.equal(f.pending, 0);
    }),
    fcParams,
  );
});

/**
 * The pacing as the sender runs it, without I/O: a send buffer of `capacity`, a resync feed of
 * `objects` keys topped up by `feedRoom` before every batch, live changes arriving between
 * batches. Pure simulation.
 */
function simulate(capacity: number, objects: number, live: readonly { atBatch: number; key: number }[]) {
  const buffer = new SendBuffer(capacity);
  const f = feed();
  f.start('s', names('o', objects), resync);
  const sentPerKey = new Map<string, string[]>();
  const liveEnqueuedAt = new Map<string, number>();
  const liveWaitBatches: number[] = [];
  let dropped = 0;
  let maxDepth = 0;
  let batches = 0;
  const arrivals = [...live].sort((a, b) => a.atBatch - b.atBatch);
  while (buffer.size > 0 || f.pending > 0 || arrivals.length > 0) {
    while (arrivals.length > 0 && arrivals[0]!.atBatch <= batches) {
      const m = newMessage({ ...ref(`o${arrivals.shift()!.key}`), uid: 'u' }, 'Modified', 2);
      f.satisfy(objectKey(m)); // as forward() does for every live message
      dropped += buffer.push(m).length;
      liveEnqueuedAt.set(m.name, batches);
    }
    for (const m of f.take(feedRoom(buffer.size, capacity))) dropped += buffer.push(m).length;
    maxDepth = Math.max(maxDepth, buffer.size);
    batches++;
    for (const { message } of buffer.takeBatch(1 << 20)) {
      sentPerKey.set(message.name, [...(sentPerKey.get(message.name) ?? []), message.reason]);
      const enqueuedAt = liveEnqueuedAt.get(message.name);
      if (enqueuedAt !== undefined && message.reason === 'Modified') {
        liveWaitBatches.push(batches - enqueuedAt);
        liveEnqueuedAt.delete(message.name);
      }
    }
  }
  return { sentPerKey, dropped, maxDepth, liveWaitBatches };
}

test('pacing: a resync of 25 × the buffer never overflows it; every key is sent once; the buffer stays at the low-water mark', () => {
  const { sentPerKey, dropped, maxDepth } = simulate(200, 5000, []);
  assert.equal(dropped, 0);
  assert.equal(sentPerKey.size, 5000);
  assert.ok([...sentPerKey.values()].every((r) => r.length === 1 && r[0] === 'Resync'));
  assert.equal(maxDepth, RESYNC_AHEAD, 'the buffer holds at most the low-water mark of resync messages');
});

test('property: live changes during a paced resync: no overflow, every key sent, at most once as Resync, a live change waits behind at most RESYNC_AHEAD resync messages', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 10, max: 400 }),
      fc.integer({ min: 0, max: 2000 }),
      fc.array(fc.record({ atBatch: fc.integer({ min: 0, max: 250 }), key: fc.integer({ min: 0, max: 2000 }) }), { maxLength: 60 }),
      (capacity, objects, live) => {
        // Live changes of distinct keys, fewer than half the buffer at a time (more would be a real overflow).
        const changes = live.filter((c, i) => c.key < objects && live.findIndex((d) => d.key === c.key) === i).slice(0, Math.floor(capacity / 2));
        const { sentPerKey, dropped, liveWaitBatches } = simulate(capacity, objects, changes);
        assert.equal(dropped, 0, 'no overflow');
        assert.equal(sentPerKey.size, objects, 'every key sent');
        for (const [name, reasons] of sentPerKey) {
          assert.ok(reasons.filter((r) => r === 'Resync').length <= 1, `${name}: ${reasons.join(',')}`);
          assert.ok(reasons.length <= 2, `${name}: ${reasons.join(',')}`);
        }
        const bound = Math.ceil((Math.min(RESYNC_AHEAD, Math.floor(capacity / 2)) + changes.length) / MAX_BATCH_ENTRIES) + 1;
        for (const wait of liveWaitBatches) assert.ok(wait >= 0 && wait <= bound, `a live change waited ${wait} batches (bound ${bound})`);
      },
    ),
    fcParams,
  );
});
