import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitUntil } from '../../../src/testing/wait.ts';

test('waitUntil resolves once the check holds, retrying checks that throw', async () => {
  let calls = 0;
  await waitUntil(
    'the third call',
    () => {
      calls++;
      if (calls === 1) throw new Error('not ready');
      return calls >= 3;
    },
    { intervalMs: 1 },
  );
  assert.equal(calls, 3);
});

test('on timeout it names what was awaited, the last error and the context', async () => {
  await assert.rejects(
    waitUntil(
      'the sky turns green',
      () => {
        throw new Error('still blue');
      },
      { timeoutMs: 20, intervalMs: 5, context: () => 'log tail: nothing' },
    ),
    /timed out after 20 ms waiting until the sky turns green \(last error: still blue\)\nlog tail: nothing/,
  );
});
