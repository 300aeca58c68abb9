import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff, backoffDelay } from '../../../src/forwarder/backoff.ts';

const policy = { initialMs: 800, maxMs: 30_000 };

test('delay doubles from the initial value and is capped', () => {
  assert.equal(backoffDelay(0, policy, () => 1), 800);
  assert.equal(backoffDelay(1, policy, () => 1), 1600);
  assert.equal(backoffDelay(5, policy, () => 1), 25_600);
  assert.equal(backoffDelay(6, policy, () => 1), 30_000);
  assert.equal(backoffDelay(1000, policy, () => 1), 30_000);
});

test('jitter spreads delays over [d/2, d]', () => {
  assert.equal(backoffDelay(0, policy, () => 0), 400);
  for (let i = 0; i < 200; i++) {
    const d = backoffDelay(3, policy);
    assert.ok(d >= 3200 && d <= 6400, `delay ${d}`);
  }
});

test('the tracker grows per failure and resets after a healthy period', () => {
  let now = 0;
  const b = new Backoff({ ...policy, resetAfterMs: 120_000 }, () => 1, () => now);
  assert.deepEqual([b.fail(), b.fail(), b.fail()], [800, 1600, 3200]);
  b.healthy();
  now += 60_000;
  assert.equal(b.fail(), 6400, 'a short healthy spell does not reset');
  b.healthy();
  now += 120_000;
  assert.equal(b.fail(), 800, 'a long healthy spell resets');
  b.reset();
  assert.equal(b.attempt, 0);
});
