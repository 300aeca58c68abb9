/**
 * Forwarder configuration that cannot work is refused at start-up with a message naming the
 * field: the SQS timeouts (`send.connectTimeoutMs`, `send.requestTimeoutMs`) and every
 * cross-field rule (a backoff whose maximum is below its start, a backlog window below the
 * base window, leader-election timings out of order). fast-check cases print their seed on
 * failure; `OPERLESS_FC_SEED` replays one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ConfigError, parseConfig } from '../../../src/forwarder/config/config.ts';
import { DEFAULT_SQS_TIMEOUTS } from '../../../src/queue/sender.ts';
import { fcParameters } from '../../support/fast-check.ts';

const minimal = {
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
};

function check<T>(property: fc.IProperty<T>): void {
  fc.assert(property, fcParameters({ numRuns: 200 }));
}

function problems(doc: unknown): string[] {
  try {
    parseConfig(doc);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return [...err.problems];
  }
  return [];
}

test('the SQS timeouts default to the shared defaults and are taken from send.*', () => {
  const c = parseConfig(minimal);
  assert.equal(c.send.connectTimeoutMs, DEFAULT_SQS_TIMEOUTS.connectTimeoutMs);
  assert.equal(c.send.requestTimeoutMs, DEFAULT_SQS_TIMEOUTS.requestTimeoutMs);
  const set = parseConfig({ ...minimal, send: { connectTimeoutMs: 1500, requestTimeoutMs: 4000 } });
  assert.deepEqual([set.send.connectTimeoutMs, set.send.requestTimeoutMs], [1500, 4000]);
});

test('SQS timeouts out of range, not whole numbers or the connection one above the request one are refused naming the field', () => {
  assert.deepEqual(problems({ ...minimal, send: { requestTimeoutMs: 0 } }), ['send.requestTimeoutMs: must be between 100 and 600000, got 0']);
  assert.deepEqual(problems({ ...minimal, send: { connectTimeoutMs: 'soon' } }), ['send.connectTimeoutMs: must be a number, got string "soon"']);
  assert.deepEqual(problems({ ...minimal, send: { requestTimeoutMs: 1500.5 } }), ['send.requestTimeoutMs: must be a whole number, got 1500.5']);
  const [problem, ...rest] = problems({ ...minimal, send: { connectTimeoutMs: 8000, requestTimeoutMs: 2000 } });
  assert.deepEqual(rest, []);
  assert.match(problem ?? '', /^send\.connectTimeoutMs: must be at most send\.requestTimeoutMs \(2000\).*got 8000$/);
});

/** Each cross-field rule: the document that breaks it and the path its problem must name. */
const crossField: [string, Record<string, unknown>, string][] = [
  ['send backoff', { send: { backoffInitialMs: 5000, backoffMaxMs: 1000 } }, 'send.backoffMaxMs'],
  ['watch backoff', { watch: { backoffInitialMs: 5000, backoffMaxMs: 1000 } }, 'watch.backoffMaxMs'],
  ['backlog window', { coalesceWindowMs: 2000, coalesceMaxWindowMs: 1000 }, 'coalesceMaxWindowMs'],
  ['renew deadline', { leaderElection: { leaseDurationSeconds: 10, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 } }, 'leaderElection.renewDeadlineSeconds'],
  ['retry period', { leaderElection: { leaseDurationSeconds: 15, renewDeadlineSeconds: 5, retryPeriodSeconds: 5 } }, 'leaderElection.retryPeriodSeconds'],
  ['SQS timeouts', { send: { connectTimeoutMs: 3000, requestTimeoutMs: 1000 } }, 'send.connectTimeoutMs'],
];

for (const [rule, doc, path] of crossField) {
  test(`cross-field rule "${rule}" is refused at start-up naming ${path}`, () => {
    const found = problems({ ...minimal, ...doc });
    assert.equal(found.length, 1, found.join('\n'));
    assert.ok(found[0]!.startsWith(`${path}: must be`), found[0]);
  });
}

test('property: a backoff pair is accepted exactly when its maximum is at least its start, else refused naming the maximum', () => {
  check(
    fc.property(fc.constantFrom('send', 'watch'), fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 1, max: 600_000 }), (section, initial, max) => {
      const found = problems({ ...minimal, [section]: { backoffInitialMs: initial, backoffMaxMs: max } });
      if (max >= initial) assert.deepEqual(found, []);
      else
        assert.deepEqual(
          found.map((p) => p.split(':')[0]),
          [`${section}.backoffMaxMs`],
        );
    }),
  );
});

test('property: SQS timeouts are accepted exactly when the connection one is at most the request one', () => {
  check(
    fc.property(fc.integer({ min: 100, max: 600_000 }), fc.integer({ min: 100, max: 600_000 }), (connectTimeoutMs, requestTimeoutMs) => {
      const found = problems({ ...minimal, send: { connectTimeoutMs, requestTimeoutMs } });
      assert.deepEqual(
        found.map((p) => p.split(':')[0]),
        connectTimeoutMs <= requestTimeoutMs ? [] : ['send.connectTimeoutMs'],
      );
    }),
  );
});
