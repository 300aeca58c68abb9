/** The lanes of `npm test` (scripts/test-lanes.ts): which suites run beside which, and how. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planLanes, SUITES } from '../../../scripts/test-lanes.ts';

const filesOf = (dir: string) => [`${dir}/a.test.ts`, `${dir}/b.test.ts`];

test('every suite: servers live first, faults and soak beside them, unit beside both', () => {
  const lanes = planLanes(Object.keys(SUITES), false, filesOf);
  assert.deepEqual(lanes.map((l) => [l.name, l.concurrency, l.timeoutMs, l.files.length]), [
    ['integration, e2e, security', 1, 600_000, 6],
    ['faults, soak', 1, 900_000, 4],
    ['unit', 1, 60_000, 2],
  ]);
  assert.deepEqual(lanes[1]!.files, ['test/faults/a.test.ts', 'test/faults/b.test.ts', 'test/soak/a.test.ts', 'test/soak/b.test.ts']);
});

test('side by side, every lane runs one file at a time; alone, the unit suite runs two', () => {
  for (const names of [Object.keys(SUITES), ['unit', 'soak'], ['integration', 'faults']]) {
    for (const lane of planLanes(names, false, filesOf)) assert.equal(lane.concurrency, 1, `${names.join(' ')}: ${lane.name}`);
  }
  assert.equal(planLanes(['unit'], false, filesOf)[0]!.concurrency, 2);
});

test('serial: one lane of everything, one file at a time', () => {
  const [only, ...rest] = planLanes(Object.keys(SUITES), true, filesOf);
  assert.deepEqual(rest, []);
  assert.equal(only!.concurrency, 1);
  assert.equal(only!.timeoutMs, 900_000);
  assert.equal(only!.files.length, 12);
});

test('one suite asked for is one lane; lanes without files are left out', () => {
  assert.deepEqual(planLanes(['unit'], false, filesOf).map((l) => [l.name, l.concurrency]), [['unit', 2]]);
  assert.deepEqual(planLanes(['faults', 'integration'], false, filesOf).map((l) => l.name), ['integration', 'faults']);
  const onlyFaultsHaveFiles = (dir: string) => (dir === 'test/faults' ? filesOf(dir) : []);
  assert.deepEqual(planLanes(['faults', 'integration', 'unit'], false, onlyFaultsHaveFiles).map((l) => l.name), ['faults']);
  assert.deepEqual(planLanes(['integration'], false, () => []), []);
});
