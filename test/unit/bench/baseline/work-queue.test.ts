import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../../../bench/baseline/work-queue.ts';
import { ItemExponentialBackoff, backoffDelayMs } from '../../../../bench/baseline/rate-limiter.ts';

const tick = () => new Promise((r) => setImmediate(r));

test('a key added many times while it waits is handed out once', async () => {
  const q = new WorkQueue();
  q.add('a');
  q.add('b');
  q.add('a');
  q.add('a');
  assert.equal(q.length, 2);
  assert.equal(await q.get(), 'a');
  assert.equal(await q.get(), 'b');
  assert.equal(q.length, 0);
});

test('a key added while a worker holds it is not handed to a second worker until done()', async () => {
  const q = new WorkQueue();
  q.add('a');
  const first = await q.get();
  assert.equal(first, 'a');
  q.add('a');
  q.add('a');
  assert.equal(q.length, 0, 'held back while processing');
  let second: string | undefined;
  void q.get().then((k) => (second = k));
  await tick();
  assert.equal(second, undefined, 'no concurrent run of the same key');
  q.done('a');
  await tick();
  assert.equal(second, 'a', 'queued again (once) after done()');
  q.done('a');
  assert.equal(q.length, 0);
});

test('other keys flow while one key is processing', async () => {
  const q = new WorkQueue();
  q.add('a');
  await q.get();
  q.add('a');
  q.add('b');
  assert.equal(await q.get(), 'b');
});

test('addAfter queues the key after the delay; the earliest of several delays wins', async () => {
  const q = new WorkQueue();
  q.addAfter('a', 200);
  q.addAfter('a', 20);
  q.addAfter('a', 500);
  assert.equal(q.length, 0);
  assert.equal(q.delayed, 1);
  assert.equal(await q.get(), 'a');
  assert.equal(q.delayed, 0, 'one timer for the key: the earliest, which fired');
  q.done('a');
  await new Promise((r) => setTimeout(r, 250));
  assert.equal(q.length, 0, 'the replaced 200 ms delay did not add the key again');
});

test('addAfter with no delay adds at once', () => {
  const q = new WorkQueue();
  q.addAfter('a', 0);
  assert.equal(q.length, 1);
});

test('addRateLimited doubles the delay per failure of the same key; forget resets it', () => {
  const q = new WorkQueue({ baseDelayMs: 5, maxDelayMs: 1_000_000 });
  assert.deepEqual([q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a')], [5, 10, 20]);
  assert.equal(q.numRequeues('a'), 3);
  assert.equal(q.addRateLimited('b'), 5, 'keys back off independently');
  q.forget('a');
  assert.equal(q.numRequeues('a'), 0);
  assert.equal(q.addRateLimited('a'), 5);
  q.shutDown();
});

test('backoff is capped at 1000 s by default and never overflows', () => {
  const b = new ItemExponentialBackoff();
  let last = 0;
  for (let i = 0; i < 100; i++) last = b.when('k');
  assert.equal(last, 1_000_000);
  assert.equal(backoffDelayMs(0, 5, 1_000_000), 5);
  assert.equal(backoffDelayMs(17, 5, 1_000_000), 655_360);
  assert.equal(backoffDelayMs(18, 5, 1_000_000), 1_000_000);
  assert.equal(backoffDelayMs(10_000, 5, 1_000_000), 1_000_000);
  assert.throws(() => new ItemExponentialBackoff({ baseMs: 0 }), /baseMs/);
});

test('shutDown releases waiting workers and cancels delays', async () => {
  const q = new WorkQueue();
  const waiting = q.get();
  q.addAfter('a', 10_000);
  q.shutDown();
  assert.equal(await waiting, undefined);
  assert.equal(q.delayed, 0);
  q.add('b');
  assert.equal(await q.get(), undefined, 'nothing is handed out after shutdown');
});

test('keys are handed out in the order they were first added', async () => {
  const q = new WorkQueue();
  for (const k of ['c', 'a', 'b', 'a', 'c']) q.add(k);
  assert.deepEqual([await q.get(), await q.get(), await q.get()], ['c', 'a', 'b']);
});
