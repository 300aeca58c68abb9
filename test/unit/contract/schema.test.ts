/**
 * The JSON Schema in events/ and decodeMessage (src/contract/message.ts) describe the same
 * contract: on valid messages, on random JSON values and on mutations of valid messages,
 * they accept and reject the same inputs. And every sample SQS event in events/samples has
 * the Lambda SQS event shape and decodes (except the poison one, which must not).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SQSEvent } from 'aws-lambda';
import fc from 'fast-check';
import { fcParameters } from '../../support/fast-check.ts';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { decodeMessage, validateMessage, REASONS, MAX_MESSAGE_BYTES, MAX_WAIT_SECONDS, NOT_BEFORE_SKEW_MS } from '../../../src/contract/message.ts';

const root = fileURLToPath(new URL('../../../events/', import.meta.url));
const schema = JSON.parse(readFileSync(`${root}message.schema.json`, 'utf8'));
// unicode: false — string lengths in UTF-16 code units, as the schema states and JS counts.
const validate = new Ajv2020({ strict: true, unicode: false, allErrors: false }).compile(schema);

const dns = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
const validMessage = fc.record(
  {
    v: fc.constant(1),
    cluster: fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?$/),
    apiVersion: fc.oneof(
      fc.constant('v1'),
      fc.constant('apps/v1'),
      dns.map((g) => `${g}.example.com/v1alpha1`),
    ),
    kind: fc.stringMatching(/^[A-Z][A-Za-z0-9]{0,20}$/),
    namespace: fc.option(dns, { nil: undefined }),
    name: dns,
    uid: fc.option(fc.uuid(), { nil: undefined }),
    reason: fc.constantFrom(...REASONS),
    resourceVersion: fc.option(fc.stringMatching(/^[0-9]{1,10}$/), { nil: undefined }),
    ownedKinds: fc.option(fc.uniqueArray(fc.stringMatching(/^[A-Z][A-Za-z0-9]{0,20}$/), { minLength: 1, maxLength: 16 }), { nil: undefined }),
    observedAt: fc.integer({ min: 0, max: 4_000_000_000_000 }),
    attempt: fc.integer({ min: 0, max: 10_000 }),
    notBefore: fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: undefined }),
    timer: fc.option(dns, { nil: undefined }),
  },
  { requiredKeys: ['v', 'cluster', 'apiVersion', 'kind', 'name', 'reason', 'observedAt', 'attempt'] },
);

const strip = (o: Record<string, unknown>) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>;

// The schema cannot express notBefore's bound relative to the consumer's clock: compared at
// the end of time, where every integer notBefore is within it (the bound has its own tests).
const END_OF_TIME = Number.MAX_SAFE_INTEGER;

const agree = (value: unknown) => {
  const body = JSON.stringify(value);
  if (body === undefined || Buffer.byteLength(body) > MAX_MESSAGE_BYTES) return;
  const decoded = decodeMessage(body, { now: END_OF_TIME });
  const schemaOk = validate(JSON.parse(body));
  assert.equal(
    decoded.ok,
    schemaOk,
    `decodeMessage ${decoded.ok ? 'accepts' : `rejects (${!decoded.ok && decoded.error})`} but the schema ${schemaOk ? 'accepts' : `rejects (${JSON.stringify(validate.errors)})`}: ${body}`,
  );
};

test('valid messages are accepted by both', () => {
  fc.assert(
    fc.property(validMessage, (m) => {
      const value = strip(m);
      assert.equal(validateMessage(value, { now: END_OF_TIME }).ok, true);
      agree(value);
    }),
    fcParameters({ numRuns: 500 }),
  );
});

test('random JSON values: both agree', () => {
  fc.assert(fc.property(fc.jsonValue(), agree), fcParameters({ numRuns: 500 }));
});

const mutation = fc.oneof(
  fc.record({ op: fc.constant('delete' as const), field: fc.constantFrom(...Object.keys(schema.properties)) }),
  fc.record({
    op: fc.constant('set' as const),
    field: fc.oneof(fc.constantFrom(...Object.keys(schema.properties)), fc.string({ maxLength: 8 })),
    value: fc.oneof(
      fc.jsonValue({ maxDepth: 1 }),
      fc.string({ maxLength: 300 }),
      fc.string({ unit: 'grapheme', maxLength: 140 }),
      fc.integer(),
      fc.double(),
      fc.constant(''),
      fc.constant(-1),
      fc.constant(1.5),
      fc.constant(Number.MAX_SAFE_INTEGER + 2),
      fc.constant(10_001),
      fc.constantFrom(...[63, 64, 128, 129, 253, 254, 317, 318].flatMap((n) => ['a'.repeat(n), 'A'.repeat(n)])),
      fc.constantFrom(...REASONS, 'Poked', 'added', 'v2', 'apps/v1', 'Apps/v1', 'core/v1beta1', 'a.b/v1gamma1', 'UPPER', 'with space', 'a..b', '-a', 'a-'),
    ),
  }),
);

test('mutations of valid messages: both agree', () => {
  fc.assert(
    fc.property(validMessage, fc.array(mutation, { minLength: 1, maxLength: 3 }), (m, mutations) => {
      const value = strip(m);
      for (const mu of mutations) {
        if (mu.op === 'delete') delete value[mu.field];
        else value[mu.field] = mu.value;
      }
      agree(value);
    }),
    fcParameters({ numRuns: 2000 }),
  );
});

test('known edge cases agree', () => {
  const base = { v: 1, cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', name: 'x', reason: 'Added', observedAt: 0, attempt: 0 };
  for (const value of [
    base,
    { ...base, v: 2 },
    { ...base, v: '1' },
    { ...base, attempt: 10_000 },
    { ...base, attempt: 10_001 },
    { ...base, namespace: 'a'.repeat(63) },
    { ...base, namespace: 'a'.repeat(64) },
    { ...base, name: 'a.b-c' },
    { ...base, name: 'A' },
    { ...base, uid: '' },
    { ...base, notBefore: -1 },
    { ...base, extra: 1 },
    { ...base, extra: { nested: [1] } },
    { ...base, kind: 'X'.repeat(64) },
    { ...base, namespace: 'a.b' },
    { ...base, namespace: 'a-b' },
    { ...base, namespace: 'A' },
    { ...base, apiVersion: 'apps/v1beta2' },
    { ...base, apiVersion: '/v1' },
    [],
    null,
    'str',
    1,
  ])
    agree(value);
  // every string field at its maximum length and one past it
  for (const field of Object.keys(schema.properties)) {
    const max = schema.properties[field].maxLength as number | undefined;
    if (max === undefined) continue;
    for (const n of [max, max + 1]) {
      for (const ch of ['a', 'A', '1']) agree({ ...base, [field]: ch.repeat(n) });
    }
  }
});

test("the schema states the bounds it cannot express, with the contract's values", () => {
  assert.match(schema.description, new RegExp(`${MAX_MESSAGE_BYTES} bytes`));
  assert.match(schema.description, new RegExp(`${MAX_WAIT_SECONDS} s`));
  assert.match(schema.description, new RegExp(`${NOT_BEFORE_SKEW_MS / 60_000} minutes of clock skew`));
  assert.equal(schema.additionalProperties, true, 'consumers ignore fields they do not know within v=1');
});

const samples = readdirSync(`${root}samples`)
  .filter((f) => f.endsWith('.json'))
  .sort();

test('there is a sample SQS event for every reason, plus a poison one', () => {
  const reasons = new Set<string>();
  for (const file of samples) {
    const event = JSON.parse(readFileSync(`${root}samples/${file}`, 'utf8')) as SQSEvent;
    for (const r of event.Records) {
      const d = decodeMessage(r.body);
      if (d.ok) reasons.add(d.message.reason);
    }
  }
  assert.deepEqual([...reasons].sort(), [...REASONS].sort());
  assert.ok(samples.includes('poison.json'));
});

for (const file of samples) {
  test(`sample ${file} has the Lambda SQS event shape and ${file === 'poison.json' ? 'does not decode' : 'decodes'}`, () => {
    const event = JSON.parse(readFileSync(`${root}samples/${file}`, 'utf8')) as SQSEvent;
    assert.ok(Array.isArray(event.Records) && event.Records.length > 0);
    for (const r of event.Records) {
      assert.equal(r.eventSource, 'aws:sqs');
      assert.match(r.eventSourceARN, /^arn:aws:sqs:[a-z0-9-]+:\d{12}:[\w-]+$/);
      assert.equal(r.awsRegion, r.eventSourceARN.split(':')[3]);
      assert.match(r.messageId, /^[0-9a-f-]{36}$/);
      assert.ok(r.receiptHandle.length > 0);
      assert.equal(r.md5OfBody, createHash('md5').update(r.body).digest('hex'));
      for (const a of ['ApproximateReceiveCount', 'SentTimestamp', 'SenderId', 'ApproximateFirstReceiveTimestamp'] as const) {
        assert.equal(typeof r.attributes[a], 'string', a);
      }
      assert.match(r.attributes.ApproximateReceiveCount, /^[1-9]\d*$/);
      assert.deepEqual(r.messageAttributes, {});
      const d = decodeMessage(r.body, { now: END_OF_TIME });
      assert.equal(d.ok, file !== 'poison.json', d.ok ? '' : d.error);
      assert.equal(validate(JSON.parse(r.body)), d.ok);
    }
  });
}
