/**
 * The generated reference pages (scripts/docs-reference.ts) are a fresh render of their sources:
 * a change to the configuration schema, a CLI spec, a metric, a bound log field, the message
 * schema or the DLQ reasons must come with its docs/reference/*.md diff
 * (`node scripts/docs-reference.ts --write`). Every command `operless --help` lists has its spec
 * in the CLI reference.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usage } from '../../src/cli/main.ts';
import { DLQ_REASONS } from '../../src/contract/dlq.ts';
import { COMMAND_SPECS, renderReference, schemaRows, stalePages } from '../../scripts/docs-reference.ts';
import type { JsonSchema } from '../../src/forwarder/config/schema.ts';

const pages = renderReference();

test('docs/reference/*.md are fresh renders of their sources', () => {
  assert.deepEqual(stalePages(pages), [], 'a source of the reference changed: run node scripts/docs-reference.ts --write and commit the diff');
});

test('every command operless --help lists is in the CLI reference, and nothing else', () => {
  const listed = [...usage().matchAll(/^ {2}(\S+(?: [a-z]+)?)\s{2,}/gm)].map((m) => m[1]);
  assert.deepEqual(
    COMMAND_SPECS.map((s) => s.name),
    listed,
  );
  for (const name of listed) assert.match(pages['cli.md']!, new RegExp(`^## \`operless ${name}\`$`, 'm'));
});

test('every DLQ reason and forwarder metric has its row', () => {
  for (const reason of DLQ_REASONS) assert.match(pages['dlq-reasons.md']!, new RegExp(`^\\| \`${reason}\` \\| \\S`, 'm'), reason);
  assert.match(pages['metrics.md']!, /^\| `operless_forwarder_forward_lag_seconds` \| histogram \| `queue` \|/m);
  assert.match(pages['logs.md']!, /^\| `key` \| .*`src\/core\/handler\/key\.ts`/m);
});

test('schemaRows walks nested objects, arrays of objects and $refs, and leaves out forbidden fields', () => {
  const schema: JsonSchema = {
    type: 'object',
    required: ['a'],
    definitions: { port: { type: 'integer', minimum: 1, maximum: 65535, description: 'a port' } },
    properties: {
      a: { type: 'object', default: {}, properties: { port: { $ref: '#/definitions/port', default: 80 } } },
      list: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string', pattern: 'x|y' }, gone: { not: {} } } } },
    },
  };
  assert.deepEqual(
    schemaRows(schema, schema).map((r) => [r.path, r.required, r.type, r.defaultValue, r.constraints]),
    [
      ['a', true, 'object', {}, ''],
      ['a.port', false, 'integer', 80, '1–65535'],
      ['list', false, 'object[]', undefined, ''],
      ['list[].name', true, 'string', undefined, 'pattern `x|y`'],
    ],
  );
});

test('no machine path in the reference', () => {
  for (const [file, text] of Object.entries(pages)) assert.ok(!/\/work\/|\/home\/|\/root\//.test(text), file);
});
