/**
 * Kubernetes `Time` and `MicroTime` (src/kube/time.ts): the formats the API server accepts,
 * from a Date or epoch milliseconds alike, and the same strings the two copies they replace
 * produced (kube/events.ts for Events, the forwarder's leader election for Leases).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { kubeTime, microTime } from '../../../src/kube/time.ts';
import { fcParameters } from '../../support/fast-check.ts';

const at = Date.UTC(2026, 0, 2, 3, 4, 5, 67);

test('MicroTime has exactly six fractional digits; Time has none', () => {
  assert.equal(microTime(at), '2026-01-02T03:04:05.067000Z');
  assert.equal(microTime(new Date(at)), '2026-01-02T03:04:05.067000Z');
  assert.equal(kubeTime(at), '2026-01-02T03:04:05Z');
  assert.equal(kubeTime(new Date(at)), '2026-01-02T03:04:05Z');
});

/** Any millisecond of years 0000–9999 (what `toISOString` writes with four year digits). */
const instants = fc.integer({ min: Date.parse('0000-01-01T00:00:00Z'), max: Date.parse('9999-12-31T23:59:59.999Z') });

test('the formats are the ones the replaced copies wrote, for any instant of years 0–9999', () => {
  fc.assert(
    fc.property(instants, (ms) => {
      const date = new Date(ms);
      assert.equal(microTime(date), `${date.toISOString().slice(0, 23)}000Z`, 'as kube/events.ts wrote it');
      assert.equal(kubeTime(date), `${date.toISOString().slice(0, 19)}Z`, 'as kube/conditions.ts wrote it');
      assert.match(microTime(ms), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      assert.equal(Date.parse(microTime(ms)), ms);
    }),
    fcParameters({ numRuns: 500 }),
  );
});
