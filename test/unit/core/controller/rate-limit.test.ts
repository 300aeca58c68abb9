/**
 * The shared rate limit, the pure part (core/controller/rate-limit.ts, rate-limit-lease.ts): validation
 * naming the field, the fixed-second count (never more than perSecond in a second, whatever
 * the order and the clocks of the deciders), the wait of a key that finds its second full, and
 * the window stored on the Lease.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../../support/fast-check.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { done } from '../../../../src/core/controller/result.ts';
import {
  admission,
  rateLimitedDelaySeconds,
  RATE_LIMIT_SPREAD_SECONDS,
  resolveRateLimit,
  type RateWindow,
} from '../../../../src/core/controller/rate-limit.ts';
import { RATE_WINDOW_ANNOTATION, rateLeaseName, storedWindow } from '../../../../src/core/controls/rate-limit-lease.ts';

const KIND = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true } as const;

test('defineController validates rateLimit, naming the field', () => {
  const define = (rateLimit: unknown) => defineController({ ...KIND, reconcile: async () => done(), rateLimit: rateLimit as never });
  assert.equal(define(undefined).rateLimit, undefined);
  assert.deepEqual(define({ perSecond: 5 }).rateLimit, { perSecond: 5, namespace: 'default' });
  assert.deepEqual(define({ perSecond: 5, namespace: 'ops' }).rateLimit, { perSecond: 5, namespace: 'ops' });
  const cases: [unknown, RegExp][] = [
    [5, /rateLimit must be an object like \{ perSecond: 5 \}/],
    [{ perSecond: 0 }, /rateLimit\.perSecond must be a whole number from 1 to 1000, got 0/],
    [{ perSecond: 2.5 }, /rateLimit\.perSecond .* got 2.5/],
    [{ perSecond: '5' }, /rateLimit\.perSecond .* got "5"/],
    [{ perSecond: 5, burst: 2 }, /rateLimit has unknown field\(s\) burst/],
    [{ perSecond: 5, namespace: 'Not_A_Namespace' }, /rateLimit\.namespace must be a namespace name/],
  ];
  for (const [value, error] of cases) {
    assert.throws(
      () => define(value),
      (err: Error) => err instanceof TypeError && err.message.startsWith('defineController(ConfigMap): ') && error.test(err.message),
      JSON.stringify(value),
    );
  }
  assert.equal(resolveRateLimit(undefined), undefined);
});

test('admission: at most perSecond in a second; a new second starts at 0; a window ahead of this clock is used as it is', () => {
  assert.deepEqual(admission(undefined, 5_250, 2), { admit: true, next: { second: 5, admitted: 1 } });
  assert.deepEqual(admission({ second: 5, admitted: 1 }, 5_900, 2), { admit: true, next: { second: 5, admitted: 2 } });
  assert.deepEqual(admission({ second: 5, admitted: 2 }, 5_900, 2), { admit: false, waitMs: 100 });
  assert.deepEqual(admission({ second: 5, admitted: 2 }, 6_000, 2), { admit: true, next: { second: 6, admitted: 1 } });
  assert.deepEqual(
    admission({ second: 7, admitted: 1 }, 6_500, 2),
    { admit: true, next: { second: 7, admitted: 2 } },
    "another invocation's clock is ahead: its window is counted, not reset",
  );
  assert.deepEqual(admission({ second: 7, admitted: 2 }, 6_500, 2), { admit: false, waitMs: 1_500 });
  assert.deepEqual(
    admission({ second: 32_503_680_000, admitted: 999 }, 6_500, 2),
    { admit: true, next: { second: 6, admitted: 1 } },
    'a window no function could have written (the year 3000) is counted over, never waited for',
  );
});

test('property: a sequence of guarded writes, each deciding on the window the last one stored, never counts more than perSecond in a second', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5 }), fc.array(fc.integer({ min: 0, max: 4_000 }), { minLength: 1, maxLength: 60 }), (perSecond, clocks) => {
      let stored: RateWindow | undefined;
      const admittedPerSecond = new Map<number, number>();
      for (const now of clocks) {
        const decided = admission(stored, now, perSecond);
        if (!decided.admit) continue;
        stored = decided.next;
        admittedPerSecond.set(decided.next.second, (admittedPerSecond.get(decided.next.second) ?? 0) + 1);
      }
      return [...admittedPerSecond.values()].every((n) => n <= perSecond);
    }),
    fcParameters(),
  );
});

test("a key that found its second full waits past the second's end, at least 1 s, plus a bounded jitter", () => {
  assert.equal(
    rateLimitedDelaySeconds(100, () => 0),
    1,
  );
  assert.equal(
    rateLimitedDelaySeconds(1_500, () => 0),
    2,
  );
  assert.equal(
    rateLimitedDelaySeconds(0, () => 0.9999),
    1 + RATE_LIMIT_SPREAD_SECONDS,
  );
});

test('the window stored on the Lease: parsed when well-formed, else counting starts again', () => {
  const lease = (value?: string) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'l', ...(value === undefined ? {} : { annotations: { [RATE_WINDOW_ANNOTATION]: value } }) },
  });
  assert.deepEqual(storedWindow(lease('1700000000/3')), { second: 1_700_000_000, admitted: 3 });
  assert.equal(storedWindow(lease()), undefined);
  assert.equal(storedWindow(lease('soon/3')), undefined);
  assert.equal(storedWindow(undefined), undefined);
  assert.equal(rateLeaseName('memcached'), 'operless-rate-memcached');
});
