/** The fcParameters fast-check parameters: a failure names its seed and path, and the seed replays it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters, replayFromEnv, replayLine } from '../../support/fast-check.ts';

const failing = fc.property(fc.integer({ min: 0, max: 1000 }), (n) => n < 500);

function failure(run: () => void): Error {
  try {
    run();
  } catch (err) {
    return err as Error;
  }
  assert.fail('the property was expected to fail');
}

test('a failing property throws with its seed and path and the line that replays it', () => {
  const err = failure(() => fc.assert(failing, fcParameters({ numRuns: 1000 })));
  const replay = /replay: OPERLESS_FC_SEED=(-?\d+) OPERLESS_FC_PATH=([\d:]+)/.exec(err.message);
  assert.ok(replay, err.message);
  assert.match(err.message, /Counterexample: \[500\]/, "fast-check's own report, shrunk");
  // The printed seed and path replay exactly that counterexample.
  const details = fc.check(failing, { seed: Number(replay[1]), path: replay[2] });
  assert.equal(details.failed, true);
  assert.deepEqual(details.counterexample, [500]);
});

test('an async property reports the same way', async () => {
  const property = fc.asyncProperty(fc.integer({ min: 0, max: 1000 }), async (n) => n < 500);
  await assert.rejects(fc.assert(property, fcParameters({ numRuns: 1000 })), /replay: OPERLESS_FC_SEED=-?\d+ OPERLESS_FC_PATH=/);
});

test('a passing property is silent', () => {
  fc.assert(
    fc.property(fc.integer(), (n) => Number.isInteger(n)),
    fcParameters({ numRuns: 50 }),
  );
});

test('the seed and path come from the environment, validated', () => {
  assert.deepEqual(replayFromEnv({}), {});
  assert.deepEqual(replayFromEnv({ OPERLESS_FC_SEED: '-1234' }), { seed: -1234 });
  assert.deepEqual(replayFromEnv({ OPERLESS_FC_SEED: '42', OPERLESS_FC_PATH: '7:0:1' }), { seed: 42, path: '7:0:1' });
  assert.throws(() => replayFromEnv({ OPERLESS_FC_SEED: 'abc' }), /OPERLESS_FC_SEED="abc" is refused/);
  assert.throws(() => replayFromEnv({ OPERLESS_FC_SEED: '' }), /OPERLESS_FC_SEED="" is refused/);
  assert.throws(() => replayFromEnv({ OPERLESS_FC_PATH: '1:2' }), /OPERLESS_FC_PATH is set without OPERLESS_FC_SEED/);
  assert.throws(() => replayFromEnv({ OPERLESS_FC_SEED: '1', OPERLESS_FC_PATH: 'x' }), /OPERLESS_FC_PATH="x" is refused/);
  assert.equal(replayLine(5, '1:2'), 'replay: OPERLESS_FC_SEED=5 OPERLESS_FC_PATH=1:2 node --test <this test file>');
});

test('with OPERLESS_FC_SEED set, every run uses that seed', () => {
  const before = process.env.OPERLESS_FC_SEED;
  process.env.OPERLESS_FC_SEED = '31337';
  try {
    const seen: number[][] = [];
    for (let i = 0; i < 2; i++) {
      const values: number[] = [];
      fc.assert(
        fc.property(fc.integer(), (n) => {
          values.push(n);
        }),
        fcParameters({ numRuns: 20 }),
      );
      seen.push(values);
    }
    assert.deepEqual(seen[0], seen[1], 'the same seed draws the same values');
    assert.equal(fcParameters().seed, 31337);
  } finally {
    if (before === undefined) delete process.env.OPERLESS_FC_SEED;
    else process.env.OPERLESS_FC_SEED = before;
  }
});
