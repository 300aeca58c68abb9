import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError, helpText, intOption, parseCommandArgs, type CommandSpec } from '../../../src/cli/args.ts';
import { findCommand, usage } from '../../../src/cli/main.ts';

const spec: CommandSpec = {
  name: 'demo',
  summary: 'a demo command',
  usage: '<thing> [options]',
  options: {
    limit: { type: 'string', description: 'How many', default: '5', placeholder: 'n' },
    json: { type: 'boolean', description: 'JSON output' },
  },
  examples: ['operless demo x --limit 3'],
};

test('options parse with defaults and positionals', () => {
  const parsed = parseCommandArgs(spec, ['x', '--json']);
  assert.deepEqual(parsed.positionals, ['x']);
  assert.equal(parsed.values.json, true);
  assert.equal(parsed.values.limit, '5');
});

test('an unknown flag is a usage error that names the flag and points at --help', () => {
  assert.throws(
    () => parseCommandArgs(spec, ['--nope']),
    (err: unknown) => {
      assert.ok(err instanceof UsageError);
      assert.match(err.message, /--nope/);
      assert.match(err.message, /operless demo --help/);
      return true;
    },
  );
});

test('intOption rejects values outside the range with the flag name', () => {
  const parsed = parseCommandArgs(spec, ['--limit', '0']);
  assert.throws(() => intOption(parsed.values, 'limit', 1, 10), /--limit must be a whole number from 1 to 10, got "0"/);
  assert.equal(intOption(parseCommandArgs(spec, ['--limit', '7']).values, 'limit', 1, 10), 7);
});

test('help text lists every option, its default and the examples', () => {
  const text = helpText(spec);
  assert.match(text, /--limit <n>\s+How many \(default: 5\)/);
  assert.match(text, /--json\s+JSON output/);
  assert.match(text, /-h, --help/);
  assert.match(text, /operless demo x --limit 3/);
});

test('two-word commands are found before one-word ones', () => {
  assert.deepEqual(findCommand(['dlq', 'redrive', '--dry-run']), { name: 'dlq redrive', rest: ['--dry-run'] });
  assert.deepEqual(findCommand(['status', '--json']), { name: 'status', rest: ['--json'] });
  assert.equal(findCommand(['dlq']), undefined);
  assert.match(usage(), /dlq redrive/);
});
