import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../../support/fast-check.ts';
import { isDue, resolveMaxDelaySeconds, scheduleAfter, scheduleUntil } from '../../../../src/core/invocation/schedule.ts';

const NOW = 1_700_000_000_000;

test('waits up to 900 s are a plain delay, rounded up', () => {
  assert.deepEqual(scheduleAfter(0, NOW), { delaySeconds: 0 });
  assert.deepEqual(scheduleAfter(2.1, NOW), { delaySeconds: 3 });
  assert.deepEqual(scheduleAfter(900, NOW), { delaySeconds: 900 });
});

test('longer waits carry notBefore and use the maximum delay', () => {
  assert.deepEqual(scheduleAfter(3600, NOW), { delaySeconds: 900, notBefore: NOW + 3_600_000 });
});

test('a not-yet-due message is re-delayed until due, dropping notBefore on the last hop', () => {
  const due = NOW + 3_600_000;
  assert.deepEqual(scheduleUntil(due, NOW + 900_000), { delaySeconds: 900, notBefore: due });
  assert.deepEqual(scheduleUntil(due, NOW + 3_000_000), { delaySeconds: 600 });
  assert.deepEqual(scheduleUntil(due, due + 5), { delaySeconds: 0 });
});

test('isDue', () => {
  assert.equal(isDue(undefined, NOW), true);
  assert.equal(isDue(NOW, NOW), true);
  assert.equal(isDue(NOW + 1, NOW), false);
});

test('property: chaining re-delays reaches the due time within one second, in ceil(wait/900) hops', () => {
  fc.assert(
    fc.property(fc.integer({ min: 901, max: 14 * 86_400 }), (wait) => {
      let now = NOW;
      let s = scheduleAfter(wait, now);
      const due = NOW + wait * 1000;
      let hops = 1;
      while (s.notBefore !== undefined) {
        assert.ok(Number.isInteger(s.delaySeconds) && s.delaySeconds >= 0 && s.delaySeconds <= 900);
        now += s.delaySeconds * 1000;
        s = scheduleUntil(s.notBefore, now);
        hops++;
      }
      now += s.delaySeconds * 1000;
      assert.ok(now >= due && now - due < 1000, `arrived at ${now - due} ms from due`);
      assert.equal(hops, Math.ceil(wait / 900));
    }),
    fcParameters(),
  );
});

test('a lower maximum delay (tests): the same chain in smaller hops', () => {
  assert.deepEqual(scheduleAfter(5, NOW, 2), { delaySeconds: 2, notBefore: NOW + 5000 });
  assert.deepEqual(scheduleAfter(2, NOW, 2), { delaySeconds: 2 });
  assert.deepEqual(scheduleUntil(NOW + 5000, NOW + 2000, 2), { delaySeconds: 2, notBefore: NOW + 5000 });
  assert.deepEqual(scheduleUntil(NOW + 5000, NOW + 4000, 2), { delaySeconds: 1 });
});

test("resolveMaxDelaySeconds: SQS's 900 unless set; only whole seconds 1–900, the error naming the setting", () => {
  assert.equal(resolveMaxDelaySeconds(undefined), 900);
  assert.equal(resolveMaxDelaySeconds(''), 900);
  assert.equal(resolveMaxDelaySeconds('2'), 2);
  assert.equal(resolveMaxDelaySeconds(900), 900);
  for (const bad of ['0', '901', '1.5', 'ten', '-3', ' ', 0, 1.5, Number.NaN]) {
    assert.throws(() => resolveMaxDelaySeconds(bad), /OPERLESS_MAX_DELAY_SECONDS must be a whole number of seconds from 1 to 900/, String(bad));
  }
  assert.throws(() => resolveMaxDelaySeconds(0, 'the maxDelaySeconds option'), /^TypeError: the maxDelaySeconds option must/);
});

test('property: with any maximum delay m, re-delays reach the due time within one second in ceil(wait/m) hops', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 900 }), fc.integer({ min: 1, max: 20_000 }), (max, wait) => {
      let now = NOW;
      let s = scheduleAfter(wait, now, max);
      let hops = 1;
      while (s.notBefore !== undefined) {
        assert.ok(s.delaySeconds <= max);
        now += s.delaySeconds * 1000;
        s = scheduleUntil(s.notBefore, now, max);
        hops++;
      }
      now += s.delaySeconds * 1000;
      assert.ok(now >= NOW + wait * 1000 && now - NOW - wait * 1000 < 1000);
      assert.equal(hops, Math.ceil(wait / max));
    }),
    fcParameters(),
  );
});
