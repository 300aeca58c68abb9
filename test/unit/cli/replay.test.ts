/**
 * `operless replay`'s arguments (src/cli/commands/replay.ts): the StartReplay input they give,
 * and one line naming the option for each mistake, before any request. The replay itself runs
 * against the emulator in test/integration/eventbridge.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/args.ts';
import { replayInput } from '../../../src/cli/commands/replay.ts';

const NOW = Date.parse('2026-12-02T00:00:00Z');
const ARCHIVE = 'arn:aws:events:eu-west-1:123456789012:archive/EventArchive-abc';
const BUS = 'arn:aws:events:eu-west-1:123456789012:event-bus/operless-prod';
const RULE = 'arn:aws:events:eu-west-1:123456789012:rule/operless-prod/memcached';
const ok = { archive: ARCHIVE, bus: BUS, from: '2026-12-01T10:00:00Z', to: '2026-12-01T11:00:00Z' };

test('the input names the archive, the range and the bus, limited to the given rules', () => {
  assert.deepEqual(replayInput({ ...ok, rule: [RULE], name: 'after-incident' }, NOW), {
    ReplayName: 'after-incident',
    EventSourceArn: ARCHIVE,
    EventStartTime: new Date(ok.from),
    EventEndTime: new Date(ok.to),
    Destination: { Arn: BUS, FilterArns: [RULE] },
  });
  assert.equal(replayInput(ok, NOW).ReplayName, 'operless-20261202000000');
  assert.deepEqual(replayInput(ok, NOW).Destination, { Arn: BUS });
});

test('each mistake is one usage error naming the option', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...ok, archive: undefined }, /^--archive is required/],
    [{ ...ok, archive: BUS }, /^--archive must be an archive ARN/],
    [{ ...ok, bus: 'operless' }, /^--bus must be an event bus ARN/],
    [{ ...ok, from: 'yesterday' }, /^--from must be an ISO 8601 time/],
    [{ ...ok, to: '2026-13-45T99:00:00Z' }, /^--to must be an ISO 8601 time/],
    [{ ...ok, from: ok.to, to: ok.from }, /^--from .* must be before --to/],
    [{ ...ok, to: '2027-01-01T00:00:00Z' }, /^--to .* is in the future/],
    [{ ...ok, rule: ['memcached'] }, /^--rule must be a rule ARN/],
    [{ ...ok, name: 'has space' }, /^--name must be/],
  ];
  for (const [values, message] of cases) {
    assert.throws(
      () => replayInput(values as Record<string, string>, NOW),
      (err: unknown) => err instanceof UsageError && message.test(err.message),
      JSON.stringify(values),
    );
  }
});
