import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mapBounded } from '../../../../src/core/invocation/concurrency.ts';

test('never runs more than the limit at once, and returns results in order', async () => {
  let running = 0;
  let peak = 0;
  const results = await mapBounded([5, 1, 4, 2, 3, 0, 6], 3, async (n) => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < n; i++) await Promise.resolve();
    running--;
    return n * 2;
  });
  assert.equal(peak, 3);
  assert.deepEqual(
    results.map((r) => r.status === 'fulfilled' && r.value),
    [10, 2, 8, 4, 6, 0, 12],
  );
});

test('a throwing worker fails only its own slot', async () => {
  const results = await mapBounded([1, 2, 3], 2, async (n) => {
    if (n === 2) throw new Error('two');
    return n;
  });
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
});

test('an empty list resolves at once', async () => {
  assert.deepEqual(await mapBounded([], 4, async () => 1), []);
});
