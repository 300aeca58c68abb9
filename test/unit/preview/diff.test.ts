/**
 * preview/diff.ts (what a write would change, server-set fields left out) and kube/recording-transport.ts's
 * token bucket (a preview's request rate). The preview on a real API server is
 * test/integration/preview.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffLineText, objectDiff, withoutServerFields } from '../../../src/preview/diff.ts';
import { rateLimiter } from '../../../src/kube/recording-transport.ts';

test('server-set metadata and status are left out; status kept on request', () => {
  const live = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'a', resourceVersion: '7', uid: 'u', generation: 2, creationTimestamp: 't', managedFields: [{}], labels: { x: 'y' } },
    data: { k: 'v' },
    status: { s: 1 },
  };
  assert.deepEqual(withoutServerFields(live, false), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: 'y' } }, data: { k: 'v' } });
  assert.deepEqual((withoutServerFields(live, true) as { status: unknown }).status, { s: 1 });
});

test('a diff line per changed leaf, sorted by path; equal objects give none', () => {
  const before = { metadata: { labels: {} }, spec: { replicas: 1, template: { containers: [{ name: 'web', image: 'a' }] }, gone: true } };
  const after = {
    spec: {
      replicas: 3,
      template: {
        containers: [
          { name: 'web', image: 'b' },
          { name: 'side', image: 'c' },
        ],
      },
    },
    metadata: { labels: { 'app.kubernetes.io/name': 'x' } },
  };
  assert.deepEqual(objectDiff(before, after).map(diffLineText), [
    '+ metadata.labels["app.kubernetes.io/name"]: "x"',
    '- spec.gone: true',
    '~ spec.replicas: 1 → 3',
    '~ spec.template.containers[0].image: "a" → "b"',
    '+ spec.template.containers[1]: {"name":"side","image":"c"}',
  ]);
  assert.deepEqual(objectDiff(before, structuredClone(before)), []);
});

test("the token bucket lets one second's worth through at once, then paces to the rate", async () => {
  let now = 0;
  const slept: number[] = [];
  const take = rateLimiter(
    4,
    () => now,
    async (ms) => {
      slept.push(ms);
      now += ms;
    },
  );
  for (let i = 0; i < 4; i++) await take();
  assert.deepEqual(slept, [], 'the first four start at once');
  for (let i = 0; i < 4; i++) await take();
  assert.equal(now, 1000, 'four more take one second at four per second');
  assert.throws(() => rateLimiter(0), /above 0/);
});
