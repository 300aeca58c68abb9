/**
 * Messages routed by an EventBridge rule (docs/semantics.md, "Through EventBridge"): the
 * decoder takes the bare message (the shape a target with InputPath `$.detail` delivers) and
 * the whole event envelope alike, to the same message; a hostile envelope never throws and is
 * refused with the same kind of error as any invalid body (the DLQ reason stays
 * InvalidMessage); the size bound still holds for what the envelope carries.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeMessage, encodeMessage, eventDetail, MAX_EVENT_ENVELOPE_BYTES, MAX_MESSAGE_BYTES, newMessage } from '../../../src/contract/message.ts';

const NOW = 1_700_000_000_000;
const message = newMessage({ cluster: 'c', apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'ns', name: 'm' }, 'Modified', NOW);
const envelope = (detail: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    version: '0',
    id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
    'detail-type': 'Reconcile Modified',
    source: 'operless',
    account: '123456789012',
    time: '2026-12-02T00:00:00Z',
    region: 'eu-west-1',
    resources: [],
    detail,
    ...extra,
  });

test('the bare message and the event carrying it decode to the same message', () => {
  const bare = decodeMessage(encodeMessage(message), { now: NOW });
  const wrapped = decodeMessage(envelope(message), { now: NOW });
  assert.ok(bare.ok && wrapped.ok);
  assert.deepEqual(wrapped.message, bare.message);
});

test('an envelope whose detail is not a valid message is refused like any invalid body', () => {
  for (const detail of [null, [message], 'text', 7, {}, { ...message, name: 'Not A Name' }, { ...message, v: 2 }]) {
    const decoded = decodeMessage(envelope(detail), { now: NOW });
    assert.equal(decoded.ok, false, JSON.stringify(detail));
  }
  assert.equal(eventDetail({ source: 'x', 'detail-type': 'y', detail: message, v: 1 }), undefined, 'a message is never read as an envelope');
  assert.equal(eventDetail({ 'detail-type': 'y', detail: message }), undefined, 'no source: not an envelope');
});

test('the size bound holds for the message an envelope carries', () => {
  const large = { ...message, padding: 'x'.repeat(MAX_MESSAGE_BYTES) };
  const decoded = decodeMessage(envelope(large), { now: NOW });
  assert.equal(decoded.ok, false);
  assert.match(decoded.ok ? '' : decoded.error, /limit of a reconcile message/);
  const notAnEnvelope = JSON.stringify({ ...message, padding: 'x'.repeat(MAX_MESSAGE_BYTES) });
  assert.match((decodeMessage(notAnEnvelope) as { error: string }).error, /limit of a reconcile message/);
  assert.match((decodeMessage('x'.repeat(MAX_MESSAGE_BYTES + MAX_EVENT_ENVELOPE_BYTES + 1)) as { error: string }).error, /limit/);
});

test('any envelope decodes without throwing', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.jsonValue(), (detail, source) => {
      const body = JSON.stringify({ source, 'detail-type': 'Reconcile Added', detail });
      const decoded = decodeMessage(body, { now: NOW });
      return typeof decoded.ok === 'boolean';
    }),
    { numRuns: 300 },
  );
});

test('the traceparent transport field is read from the bare detail and the envelope, dropped from the message, and never counted in its size', () => {
  const traceparent = `00-${'4'.repeat(32)}-${'5'.repeat(16)}-01`;
  const bare = decodeMessage(JSON.stringify({ ...message, traceparent }), { now: NOW });
  const wrapped = decodeMessage(envelope({ ...message, traceparent }), { now: NOW });
  assert.ok(bare.ok && wrapped.ok);
  assert.equal(bare.traceparent, traceparent);
  assert.equal(wrapped.traceparent, traceparent);
  assert.deepEqual(bare.message, message, 'not a message field');
  const plain = decodeMessage(encodeMessage(message), { now: NOW });
  assert.ok(plain.ok && plain.traceparent === undefined);
  // A body at the size limit (a later release's field padding it: consumers drop unknown fields) still decodes with the transport field beside it.
  const room = MAX_MESSAGE_BYTES - Buffer.byteLength(JSON.stringify({ ...message, padding: '' }), 'utf8');
  const full = { ...message, padding: 'x'.repeat(room) };
  assert.equal(Buffer.byteLength(JSON.stringify(full), 'utf8'), MAX_MESSAGE_BYTES);
  const atLimit = decodeMessage(JSON.stringify({ ...full, traceparent }), { now: NOW });
  assert.ok(atLimit.ok, atLimit.ok ? '' : atLimit.error);
  assert.equal(decodeMessage(JSON.stringify({ ...full, padding: `${full.padding}x`, traceparent }), { now: NOW }).ok, false, 'one byte more is too large');
  // Not a string, or far too long: ignored.
  for (const hostile of [7, { a: 1 }, 'x'.repeat(65)]) {
    const decoded = decodeMessage(JSON.stringify({ ...message, traceparent: hostile }), { now: NOW });
    assert.ok(decoded.ok && decoded.traceparent === undefined);
  }
});
