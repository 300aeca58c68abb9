/**
 * The EventBridge adapter of the queue port (src/queue/eventbridge-port.ts): the PutEvents
 * entries it builds (source, detail-type per reason, the body unchanged as detail, the bus),
 * the per-entry outcome read positionally from the answer (transient codes retried, others the
 * sender's fault), an invalid body failing only its own entry without a request, the limits it
 * refuses before any request, and the probe. The client is a recorder of the commands sent
 * (the end-to-end path against a real emulator is test/integration/eventbridge.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DescribeEventBusCommand, PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import {
  detailTypeOf,
  eventBridgePort,
  eventEntryBytes,
  PUT_EVENTS_MAX_BYTES,
  putEventsFailures,
  putEventsInput,
} from '../../../src/queue/eventbridge-port.ts';

const TARGET = { bus: 'operless', source: 'operless.test' };
const SDK = { PutEventsCommand, DescribeEventBusCommand };
const body = (reason: string, name = 'a') => JSON.stringify({ v: 1, kind: 'Gadget', name, reason });

function recordingClient(answer: (input: unknown) => unknown): { client: EventBridgeClient; sent: unknown[] } {
  const sent: unknown[] = [];
  const client = {
    send: async (command: { input: unknown }) => {
      sent.push(command);
      return answer(command.input);
    },
  } as unknown as EventBridgeClient;
  return { client, sent };
}

test('detail-type names the reason; anything else gives the plain type', () => {
  assert.equal(detailTypeOf({ reason: 'Modified' }), 'Reconcile Modified');
  assert.equal(detailTypeOf({ reason: 'x'.repeat(200) }), 'Reconcile');
  assert.equal(detailTypeOf({ reason: 42 }), 'Reconcile');
  assert.equal(detailTypeOf({}), 'Reconcile');
});

test('each entry becomes one event with the body unchanged as its detail; a body that is not an object fails alone', () => {
  const { input, ids, invalid } = putEventsInput(TARGET, [
    { id: 'a', body: body('Added') },
    { id: 'b', body: '[1,2]' },
    { id: 'c', body: 'not json' },
    { id: 'd', body: body('Resync') },
  ]);
  assert.deepEqual(ids, ['a', 'd']);
  assert.deepEqual(input.Entries, [
    { EventBusName: 'operless', Source: 'operless.test', DetailType: 'Reconcile Added', Detail: body('Added') },
    { EventBusName: 'operless', Source: 'operless.test', DetailType: 'Reconcile Resync', Detail: body('Resync') },
  ]);
  assert.deepEqual(
    invalid.map((f) => [f.id, f.senderFault, f.code]),
    [
      ['b', true, 'MalformedDetail'],
      ['c', true, 'MalformedDetail'],
    ],
  );
});

test("failures are read by position: throttling and internal errors are retried, the rest are the sender's fault", () => {
  const failures = putEventsFailures(['a', 'b', 'c', 'd'], {
    FailedEntryCount: 3,
    Entries: [{ EventId: '1' }, { ErrorCode: 'ThrottlingException', ErrorMessage: 'slow down' }, { ErrorCode: 'AccessDeniedException', ErrorMessage: 'no' }],
  });
  assert.deepEqual(failures, [
    { id: 'b', senderFault: false, code: 'ThrottlingException', message: 'slow down' },
    { id: 'c', senderFault: true, code: 'AccessDeniedException', message: 'no' },
    { id: 'd', senderFault: false, code: 'MissingResult', message: 'PutEvents returned no result for this entry' },
  ]);
});

test('the port sends one PutEvents per batch and reports the rejected entries', async () => {
  const { client, sent } = recordingClient(() => ({
    FailedEntryCount: 1,
    Entries: [{ EventId: '1' }, { ErrorCode: 'InternalFailure', ErrorMessage: 'oops' }],
  }));
  const port = eventBridgePort(SDK, client, TARGET);
  const result = await port.sendBatch([
    { id: 'a', body: body('Added') },
    { id: 'b', body: body('Modified', 'b') },
    { id: 'x', body: '"str"' },
  ]);
  assert.equal(sent.length, 1);
  assert.ok(sent[0] instanceof PutEventsCommand);
  assert.deepEqual(
    result.failed.map((f) => [f.id, f.senderFault, f.code]),
    [
      ['x', true, 'MalformedDetail'],
      ['b', false, 'InternalFailure'],
    ],
  );
});

test('nothing to send sends nothing; too many entries or bytes are refused before any request', async () => {
  const { client, sent } = recordingClient(() => ({ FailedEntryCount: 0, Entries: [] }));
  const port = eventBridgePort(SDK, client, TARGET);
  assert.deepEqual(await port.sendBatch([]), { failed: [] });
  assert.deepEqual(
    (await port.sendBatch([{ id: 'x', body: '1' }])).failed.map((f) => f.id),
    ['x'],
  );
  await assert.rejects(port.sendBatch(Array.from({ length: 11 }, (_, i) => ({ id: `m${i}`, body: body('Added') }))), RangeError);
  const huge = JSON.stringify({ v: 1, reason: 'Added', pad: 'x'.repeat(PUT_EVENTS_MAX_BYTES / 2) });
  await assert.rejects(
    port.sendBatch([
      { id: 'a', body: huge },
      { id: 'b', body: huge },
    ]),
    /at most 262144 bytes/,
  );
  assert.equal(sent.length, 0);
});

test('a failed request throws (nothing is known to have been sent); the probe describes the bus', async () => {
  const { client, sent } = recordingClient((input) => {
    if ((input as { Entries?: unknown }).Entries) throw new Error('connection refused');
    return { Name: 'operless' };
  });
  const port = eventBridgePort(SDK, client, TARGET);
  await assert.rejects(port.sendBatch([{ id: 'a', body: body('Added') }]), /connection refused/);
  await port.probe();
  assert.ok(sent[1] instanceof DescribeEventBusCommand);
  assert.deepEqual((sent[1] as DescribeEventBusCommand).input, { Name: 'operless' });
});

test('entry size is counted as EventBridge counts it', () => {
  assert.equal(eventEntryBytes({ Source: 'ab', DetailType: 'cd', Detail: '{"é":1}' }), 14 + 2 + 2 + 8); // é is two bytes
});

test('a traced entry carries its trace twice: the X-Ray TraceHeader and the traceparent in the detail', () => {
  const traceparent = `00-${'4'.repeat(32)}-${'5'.repeat(16)}-01`;
  const awsTraceHeader = `Root=1-44444444-${'4'.repeat(24)};Parent=${'5'.repeat(16)};Sampled=1`;
  const { input } = putEventsInput(TARGET, [
    { id: 'a', body: body('Added'), trace: { traceparent, awsTraceHeader } },
    { id: 'b', body: body('Resync') },
  ]);
  const [traced, untraced] = input.Entries ?? [];
  assert.equal(traced?.TraceHeader, awsTraceHeader);
  assert.deepEqual(JSON.parse(traced?.Detail ?? ''), { ...JSON.parse(body('Added')), traceparent });
  assert.equal(untraced?.Detail, body('Resync'), 'an entry without a trace keeps its body unchanged');
  assert.equal(untraced?.TraceHeader, undefined);
});
