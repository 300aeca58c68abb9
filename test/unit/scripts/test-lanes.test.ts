/** The lanes of `npm test` (scripts/test-lanes.ts): which suites run beside which, and how. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { failureSummary, planLanes, SUITES } from '../../../scripts/test-lanes.ts';

const filesOf = (dir: string) => [`${dir}/a.test.ts`, `${dir}/b.test.ts`];

test('every suite: servers live first, faults, security and soak beside them, unit beside both', () => {
  const lanes = planLanes(Object.keys(SUITES), false, filesOf);
  assert.deepEqual(
    lanes.map((l) => [l.name, l.concurrency, l.timeoutMs, l.files.length]),
    [
      ['integration, e2e', 1, 600_000, 4],
      ['faults, security, soak', 1, 900_000, 6],
      ['unit', 1, 60_000, 2],
    ],
  );
  assert.deepEqual(lanes[1]!.files, [
    'test/faults/a.test.ts',
    'test/faults/b.test.ts',
    'test/security/a.test.ts',
    'test/security/b.test.ts',
    'test/soak/a.test.ts',
    'test/soak/b.test.ts',
  ]);
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
  assert.deepEqual(
    planLanes(['unit'], false, filesOf).map((l) => [l.name, l.concurrency]),
    [['unit', 2]],
  );
  assert.deepEqual(
    planLanes(['faults', 'integration'], false, filesOf).map((l) => l.name),
    ['integration', 'faults'],
  );
  const onlyFaultsHaveFiles = (dir: string) => (dir === 'test/faults' ? filesOf(dir) : []);
  assert.deepEqual(
    planLanes(['faults', 'integration', 'unit'], false, onlyFaultsHaveFiles).map((l) => l.name),
    ['faults'],
  );
  assert.deepEqual(
    planLanes(['integration'], false, () => []),
    [],
  );
});

test('failureSummary: the "failing tests" section, capped; without one, the report\'s last lines', () => {
  const report = [
    '✔ a (1ms)',
    '✖ b (2ms)',
    'ℹ fail 1',
    '',
    '✖ failing tests:',
    '',
    'test at test/x.test.ts:3:1',
    '✖ b (2ms)',
    '  AssertionError: 1 !== 2',
  ].join('\n');
  const summary = failureSummary(report);
  assert.match(summary, /^failing tests:/);
  assert.match(summary, /test\/x\.test\.ts:3:1/);
  assert.match(summary, /AssertionError/);
  assert.doesNotMatch(summary, /✔ a/);
  assert.match(failureSummary(report, 2), /… 3 more lines/);
  const crashed = failureSummary(Array.from({ length: 60 }, (_, i) => `line ${i}`).join('\n'));
  assert.match(crashed, /no "failing tests" section/);
  assert.match(crashed, /line 59$/);
  assert.doesNotMatch(crashed, /line 19\n/);
});
