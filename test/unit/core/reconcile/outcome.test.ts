/**
 * The fold from typed outcomes to the Lambda response (core/reconcile/outcome.ts): which records SQS
 * must deliver again. Pure; the handler tests drive it through real batches.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { SQSRecord } from 'aws-lambda';
import { batchResponse, deliveredOutcome, redelivers, UNFINISHED, type KeyOutcome, type SettledWork } from '../../../../src/core/reconcile/outcome.ts';
import { newMessage } from '../../../../src/contract/message.ts';
import { fcParameters } from '../../../support/fast-check.ts';
import { sqsRecord } from '../fakes.ts';

const OUTCOMES: readonly KeyOutcome[] = [
  { type: 'acknowledged', label: 'success' },
  { type: 'sent', label: 'requeue_after', delaySeconds: 5 },
  { type: 'sent', label: 'deferred', delaySeconds: 0 },
  { type: 'deadLettered', reason: 'TerminalError' },
  { type: 'sendFailed', followUp: 'send', error: 'SQS down' },
  { type: 'crashed', error: 'bug' },
  UNFINISHED,
];

const failedIds = (records: readonly SQSRecord[], settled: readonly SettledWork[]) =>
  batchResponse(records, settled).batchItemFailures.map((f) => f.itemIdentifier);

test('acknowledged, sent and dead-lettered work is acknowledged; a failed send, a crash and unfinished work are delivered again', () => {
  assert.deepEqual(
    OUTCOMES.map((o) => [o.type, redelivers(o)]),
    [
      ['acknowledged', false],
      ['sent', false],
      ['sent', false],
      ['deadLettered', false],
      ['sendFailed', true],
      ['crashed', true],
      ['unfinished', true],
    ],
  );
});

test("a key's records share its outcome; failures keep the batch order", () => {
  const r = Array.from({ length: 5 }, () => sqsRecord('{}'));
  const settled: SettledWork[] = [
    { records: [r[3]!, r[0]!], outcome: { type: 'sendFailed', followUp: 'deadLetter', error: 'x' } },
    { records: [r[1]!], outcome: { type: 'acknowledged', label: 'success' } },
    { records: [r[2]!, r[4]!], outcome: UNFINISHED },
  ];
  assert.deepEqual(
    failedIds(r, settled),
    [r[0]!, r[2]!, r[3]!, r[4]!].map((x) => x.messageId),
  );
});

test('a record no work covers is reported as a failure: nothing is lost', () => {
  const r = [sqsRecord('{}'), sqsRecord('{}')];
  assert.deepEqual(failedIds(r, [{ records: [r[0]!], outcome: { type: 'deadLettered', reason: 'InvalidMessage' } }]), [r[1]!.messageId]);
  assert.deepEqual(failedIds([], []), []);
});

test('a follow-up the queue accepted: nothing → acknowledged, a send → sent, a dead letter → deadLettered', () => {
  const message = newMessage({ cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'a' }, 'Modified', 1);
  assert.deepEqual(deliveredOutcome({ type: 'none', label: 'success' }), { type: 'acknowledged', label: 'success' });
  assert.deepEqual(deliveredOutcome({ type: 'send', label: 'requeue_after', message, delaySeconds: 7 }), {
    type: 'sent',
    label: 'requeue_after',
    delaySeconds: 7,
  });
  assert.deepEqual(deliveredOutcome({ type: 'deadLetter', label: 'retries_exhausted', reason: 'RetriesExhausted', error: 'e' }), {
    type: 'deadLettered',
    reason: 'RetriesExhausted',
  });
});

test('property: a record is reported exactly when its work must be redelivered or no work covers it, once, in batch order', () => {
  fc.assert(
    fc.property(
      fc.array(fc.option(fc.constantFrom(...OUTCOMES), { nil: undefined }), { maxLength: 30 }),
      fc.integer({ min: 1, max: 5 }),
      (perRecord, groupSize) => {
        const records = perRecord.map(() => sqsRecord('{}'));
        // Consecutive records with an outcome form groups of up to `groupSize` sharing the first one's outcome.
        const settled: SettledWork[] = [];
        const expected = new Map<string, boolean>();
        for (let i = 0; i < records.length; ) {
          const outcome = perRecord[i];
          if (outcome === undefined) {
            expected.set(records[i]!.messageId, true);
            i++;
            continue;
          }
          const group = records.slice(i, i + groupSize);
          settled.push({ records: group, outcome });
          for (const r of group) expected.set(r.messageId, redelivers(outcome));
          i += group.length;
        }
        const want = records.filter((r) => expected.get(r.messageId)).map((r) => r.messageId);
        assert.deepEqual(failedIds(records, settled.reverse()), want);
      },
    ),
    fcParameters({ numRuns: 300 }),
  );
});

test("FIFO records: after a group's first failure, every later record of that group fails too; other groups and earlier records are untouched", () => {
  const inGroup = (group: string) => {
    const r = sqsRecord('{}');
    return { ...r, attributes: { ...r.attributes, MessageGroupId: group } };
  };
  const [a1, b1, a2, b2, a3] = [inGroup('a'), inGroup('b'), inGroup('a'), inGroup('b'), inGroup('a')];
  const settled: SettledWork[] = [
    { records: [a1], outcome: { type: 'acknowledged', label: 'success' } },
    { records: [a2], outcome: { type: 'crashed', error: 'bug' } },
    { records: [a3, b1, b2], outcome: { type: 'acknowledged', label: 'success' } },
  ];
  assert.deepEqual(failedIds([a1, b1, a2, b2, a3], settled), [a2.messageId, a3.messageId]);
  // Standard-queue records (no group) keep the per-record rule.
  const [s1, s2] = [sqsRecord('{}'), sqsRecord('{}')];
  assert.deepEqual(
    failedIds(
      [s1, s2],
      [
        { records: [s1], outcome: UNFINISHED },
        { records: [s2], outcome: { type: 'acknowledged', label: 'success' } },
      ],
    ),
    [s1.messageId],
  );
});
