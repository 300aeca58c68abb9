/**
 * Bad input, property-based: the message decoder and the whole SQS handler (`toSqsHandler`
 * with an in-memory sender and a fake client factory) under random and mutated input —
 * valid messages mutated field by field, random JSON, random bytes, huge bodies, records
 * with odd shapes — never throw, never crash the batch, and account for every record
 * exactly once:
 *
 * - a record the decoder rejects is acknowledged with exactly one DLQ message carrying its
 *   body unchanged and reason `InvalidMessage` plus a non-empty error, or (only when the DLQ
 *   is unreachable) returned in `batchItemFailures`;
 * - a valid record is acknowledged with its key reconciled once, or a follow-up / DLQ entry
 *   for its key, or (only when the queue it needs is unreachable) returned in
 *   `batchItemFailures`;
 * - `batchItemFailures` names only records of the batch, each at most once.
 *
 * Every log line the handler writes is valid JSON.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { fcParameters } from '../../support/fast-check.ts';
import { decodeMessage, encodeMessage, objectKey, MAX_MESSAGE_BYTES, REASONS, type ReconcileMessage } from '../../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_REASON, DLQ_REASONS } from '../../../src/contract/dlq.ts';
import { defineController } from '../../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../../src/core/handler/handler.ts';
import { done, requeueAfter } from '../../../src/core/controller/result.ts';
import { TerminalError } from '../../../src/core/controller/errors.ts';
import type { KindRef } from '../../../src/kube/types.ts';
import { UnknownClusterError } from '../../../src/kube/factory.ts';
import { resetEventMemory } from '../../../src/kube/events.ts';
import { createLogger } from '../../../src/observability/log.ts';
import { noMetrics } from '../../../src/core/reconcile/metrics.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord } from '../core/fakes.ts';

const NOW = 1_700_000_000_000;
const QUEUE = 'http://q/work';
const DLQ = 'http://q/work-dlq';
const WIDGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };
const RUNS = Number(process.env.OPERLESS_FUZZ_RUNS ?? 150);

// ---- generators -------------------------------------------------------------------------

const dns = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/);
/** Valid messages, mostly for the served kind so reconciles really run. */
const validMessage: fc.Arbitrary<ReconcileMessage> = fc
  .record(
    {
      v: fc.constant(1 as const),
      cluster: fc.constantFrom('c1', 'c1', 'c1', 'elsewhere'),
      apiVersion: fc.constantFrom(WIDGET.apiVersion, WIDGET.apiVersion, 'apps/v1'),
      kind: fc.constantFrom('Widget', 'Widget', 'Widget', 'Gadget'),
      namespace: fc.constantFrom('ns', 'other'),
      name: fc.oneof(fc.constantFrom('a', 'b', 'c', 'throws', 'terminal', 'requeue', 'missing'), dns),
      uid: fc.option(fc.uuid(), { nil: undefined }),
      reason: fc.constantFrom(...REASONS),
      resourceVersion: fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }),
      observedAt: fc.integer({ min: 0, max: NOW }),
      attempt: fc.integer({ min: 0, max: 12 }),
      notBefore: fc.option(fc.integer({ min: NOW - 10_000, max: NOW + 10_000_000 }), { nil: undefined }),
    },
    { requiredKeys: ['v', 'cluster', 'apiVersion', 'kind', 'name', 'reason', 'observedAt', 'attempt'] },
  )
  .map((m) => JSON.parse(JSON.stringify(m)) as ReconcileMessage);

const FIELDS = ['v', 'cluster', 'apiVersion', 'kind', 'namespace', 'name', 'uid', 'reason', 'resourceVersion', 'observedAt', 'attempt', 'notBefore'];
const oddValue = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(null, '', -1, 1.5, Number.MAX_SAFE_INTEGER + 2, 'x'.repeat(300), '../../etc/passwd', 'A B', '{"v":1}', '\u0000', '\ud800', [], {}),
  fc.string({ unit: 'binary', maxLength: 40 }),
);
/** A valid message with one field changed, removed, or one unknown field added. */
const mutatedBody = fc
  .tuple(validMessage, fc.constantFrom(...FIELDS, '__proto__', 'constructor', 'extra'), oddValue, fc.constantFrom('set', 'delete'))
  .map(([m, field, value, op]) => {
    const copy: Record<string, unknown> = { ...m };
    if (op === 'delete') delete copy[field];
    else Object.defineProperty(copy, field, { value, enumerable: true, writable: true, configurable: true });
    return JSON.stringify(copy) ?? 'undefined';
  });
const randomBytes = fc
  .tuple(fc.uint8Array({ maxLength: 512 }), fc.constantFrom<BufferEncoding>('utf8', 'latin1', 'base64'))
  .map(([bytes, encoding]) => Buffer.from(bytes).toString(encoding));
const hugeBody = fc
  .tuple(validMessage, fc.integer({ min: MAX_MESSAGE_BYTES - 200, max: 300_000 }))
  .map(([m, n]) => JSON.stringify({ ...m, uid: 'u'.repeat(n) }));
const truncated = fc.tuple(validMessage, fc.nat()).map(([m, cut]) => {
  const s = encodeMessage(m);
  return s.slice(0, cut % s.length);
});
const anyBody: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: validMessage.map((m) => encodeMessage(m)), weight: 4 },
  { arbitrary: mutatedBody, weight: 4 },
  { arbitrary: fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 200 }), weight: 1 },
  { arbitrary: randomBytes, weight: 1 },
  { arbitrary: hugeBody, weight: 1 },
  { arbitrary: truncated, weight: 1 },
);

// ---- the system under test ----------------------------------------------------------------

function harness(failing: { queue: boolean; dlq: boolean }) {
  resetEventMemory();
  const cluster = fakeCluster();
  for (const name of ['a', 'b', 'c', 'throws', 'terminal', 'requeue']) {
    for (const namespace of ['ns', 'other']) {
      cluster.put(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name, namespace }, spec: {} });
    }
  }
  const sender = recordingSender();
  if (failing.queue) sender.failFor.add(QUEUE);
  if (failing.dlq) sender.failFor.add(DLQ);
  const reconciled: string[] = [];
  const controller = defineController({
    ...WIDGET,
    retry: { maxAttempts: 5 },
    async reconcile(obj) {
      reconciled.push(`${obj.metadata.namespace}/${obj.metadata.name}`);
      if (obj.metadata.name === 'throws') throw new Error('boom');
      if (obj.metadata.name === 'terminal') throw new TerminalError('bad spec', { reason: 'InvalidSpec' });
      if (obj.metadata.name === 'requeue') return requeueAfter(30);
      return done();
    },
  });
  const lines: string[] = [];
  const handler = toSqsHandler(controller, {
    queueUrl: QUEUE,
    deadLetterQueueUrl: DLQ,
    sender,
    metrics: noMetrics,
    now: () => NOW,
    random: () => 0.5,
    log: createLogger({ level: 'debug', write: (l) => lines.push(l) }),
    clients: async (id) => {
      if (id !== 'c1') throw new UnknownClusterError(`no access configured for cluster "${id}"`);
      return cluster.client;
    },
  });
  return { handler, sender, reconciled, lines, requests: cluster.requests };
}

interface Outcome {
  failures: string[];
  sent: ReturnType<typeof recordingSender>['sent'];
  reconciled: string[];
  lines: string[];
  requests: string[];
}

async function runBatch(records: SQSRecord[], failing: { queue: boolean; dlq: boolean }): Promise<Outcome> {
  const h = harness(failing);
  const event: SQSEvent = { Records: records };
  const response = await h.handler(event, lambdaContext());
  assert.ok(response && Array.isArray(response.batchItemFailures), 'the handler returns an SQSBatchResponse');
  return {
    failures: response.batchItemFailures.map((f) => f.itemIdentifier),
    sent: h.sender.sent,
    reconciled: h.reconciled,
    lines: h.lines,
    requests: h.requests,
  };
}

function assertAccounting(records: SQSRecord[], failing: { queue: boolean; dlq: boolean }, out: Outcome): void {
  const ids = new Set(records.map((r) => r.messageId));
  assert.equal(new Set(out.failures).size, out.failures.length, 'no record is failed twice');
  for (const id of out.failures) assert.ok(ids.has(id), `batchItemFailures names a record of the batch: ${id}`);
  if (!failing.queue && !failing.dlq) assert.deepEqual(out.failures, [], 'with a healthy queue nothing is handed back');
  const failed = new Set(out.failures);

  // Poison: every acknowledged invalid record has exactly one DLQ copy of its body.
  const poisonDlq = out.sent
    .filter((s) => s.queueUrl === DLQ && s.attributes?.[DLQ_ATTRIBUTE_REASON] === 'InvalidMessage')
    .map((s) => s.body)
    .sort();
  const ackedPoison = records
    .filter((r) => !decodeMessage(r.body).ok && !failed.has(r.messageId))
    .map((r) => r.body)
    .sort();
  assert.deepEqual(poisonDlq, ackedPoison, 'each acknowledged poison record went to the DLQ exactly once, body unchanged');
  if (failing.dlq) {
    for (const r of records) if (!decodeMessage(r.body).ok) assert.ok(failed.has(r.messageId), 'poison with the DLQ down is handed back');
  }
  for (const s of out.sent.filter((x) => x.queueUrl === DLQ)) {
    assert.ok((DLQ_REASONS as readonly string[]).includes(s.attributes?.[DLQ_ATTRIBUTE_REASON] ?? ''), 'a DLQ entry has a known reason');
    assert.ok((s.attributes?.[DLQ_ATTRIBUTE_ERROR] ?? '').length > 0, 'a DLQ entry says why');
    assert.ok((s.attributes?.[DLQ_ATTRIBUTE_ERROR] ?? '').length <= 1024, 'the DLQ error fits an attribute');
  }

  // Valid records: their key was reconciled, or something was sent for it, or they were handed back.
  const sentKeys = new Set(
    out.sent.flatMap((s) => {
      const d = decodeMessage(s.body);
      return d.ok ? [objectKey(d.message)] : [];
    }),
  );
  assert.equal(new Set(out.reconciled).size, out.reconciled.length, 'each key is reconciled at most once per batch');
  for (const r of records) {
    const d = decodeMessage(r.body);
    if (!d.ok || failed.has(r.messageId)) continue;
    const m = d.message;
    // Read from the API server (reconciled, or found gone: nothing left to do) or sent on.
    const served = m.cluster === 'c1' && m.kind === 'Widget' && m.apiVersion === WIDGET.apiVersion;
    const read = served && out.requests.includes(`get Widget ${m.name}`);
    assert.ok(read || sentKeys.has(objectKey(m)), `valid record ${r.body} is accounted for (read and reconciled, follow-up or DLQ)`);
  }
  for (const s of out.sent.filter((x) => x.queueUrl === QUEUE)) {
    assert.ok(decodeMessage(s.body).ok, 'every follow-up is a valid message');
    assert.ok((s.delaySeconds ?? 0) >= 0 && (s.delaySeconds ?? 0) <= 900, 'a follow-up delay is within the SQS limit');
  }
  for (const line of out.lines) assert.doesNotThrow(() => JSON.parse(line), `log line is JSON: ${line.slice(0, 200)}`);
}

// ---- properties ---------------------------------------------------------------------------

test('decodeMessage never throws and explains every rejection', () => {
  fc.assert(
    fc.property(anyBody, (body) => {
      const d = decodeMessage(body);
      if (d.ok) {
        assert.equal(encodeMessage(d.message), JSON.stringify(d.message), 'an accepted body re-encodes');
      } else {
        assert.equal(typeof d.error, 'string');
        assert.ok(d.error.length > 0 && d.error.length < 2000, `a short, non-empty error: ${d.error.length} chars`);
      }
    }),
    fcParameters({ numRuns: RUNS * 10 }),
  );
});

test('decodeMessage names the mutated field when a single field of a valid message is broken', () => {
  fc.assert(
    fc.property(validMessage, fc.constantFrom(...FIELDS), oddValue, (m, field, value) => {
      const copy: Record<string, unknown> = { ...m, [field]: value };
      const d = decodeMessage(JSON.stringify(copy));
      if (!d.ok && field !== 'v') assert.ok(d.error.includes(`"${field}"`), `error names "${field}": ${d.error}`);
    }),
    fcParameters({ numRuns: RUNS * 5 }),
  );
});

test('the handler accounts for every record of a random batch exactly once and never throws', async () => {
  const record = fc.tuple(anyBody, fc.integer({ min: 1, max: 20 })).map(([body, count]) => sqsRecord(body, count));
  await fc.assert(
    fc.asyncProperty(fc.array(record, { minLength: 0, maxLength: 25 }), fc.record({ queue: fc.boolean(), dlq: fc.boolean() }), async (records, failing) => {
      const out = await runBatch(records, failing);
      assertAccounting(records, failing, out);
    }),
    fcParameters({ numRuns: RUNS }),
  );
});

test('a batch made only of the same valid record repeated is reconciled once', async () => {
  await fc.assert(
    fc.asyncProperty(validMessage, fc.integer({ min: 1, max: 10 }), async (m, n) => {
      const body = encodeMessage({ ...m, cluster: 'c1', kind: 'Widget', apiVersion: WIDGET.apiVersion, name: 'a', namespace: 'ns' });
      const records = Array.from({ length: n }, () => sqsRecord(body));
      const out = await runBatch(records, { queue: false, dlq: false });
      assertAccounting(records, { queue: false, dlq: false }, out);
      assert.ok(out.reconciled.length <= 1);
    }),
    fcParameters({ numRuns: RUNS / 3 }),
  );
});

test('records with odd shapes (missing/non-string body, missing attributes) never crash the batch', async () => {
  const odd = [undefined, null, 42, { v: 1 }, ['x']];
  for (const body of odd) {
    const good = sqsRecord(
      encodeMessage({
        v: 1,
        cluster: 'c1',
        apiVersion: WIDGET.apiVersion,
        kind: 'Widget',
        namespace: 'ns',
        name: 'a',
        reason: 'Added',
        observedAt: NOW,
        attempt: 0,
      }),
    );
    const bad = { ...sqsRecord(''), body: body as unknown as string, attributes: undefined as never, messageAttributes: undefined as never };
    const out = await runBatch([bad, good], { queue: false, dlq: false });
    assert.deepEqual(out.failures, [], `body ${JSON.stringify(body)}`);
    assert.deepEqual(out.reconciled, ['ns/a'], 'the good record of the same batch is still reconciled');
    const dlq = out.sent.filter((s) => s.queueUrl === DLQ);
    assert.equal(dlq.length, 1, 'the odd record is dead-lettered');
    assert.equal(dlq[0]?.attributes?.[DLQ_ATTRIBUTE_REASON], 'InvalidMessage');
  }
  const empty = await runBatch([], { queue: false, dlq: false });
  assert.deepEqual(empty.failures, []);
  const h = harness({ queue: false, dlq: false });
  const noRecords = await h.handler({} as SQSEvent, lambdaContext());
  assert.deepEqual(noRecords.batchItemFailures, [], 'an event without Records is an empty batch');
});
