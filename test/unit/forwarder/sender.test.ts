import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyBatchResult, Sender } from '../../../src/forwarder/sender.ts';
import { SendBuffer } from '../../../src/forwarder/buffer.ts';
import { createForwarderMetrics } from '../../../src/forwarder/metrics.ts';
import type { EntryFailure, QueuePort } from '../../../src/forwarder/queue-client.ts';
import { decodeMessage, newMessage, objectKey } from '../../../src/contract/message.ts';
import { silentLogger } from '../../../src/observability/log.ts';

const msg = (name: string) => newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name }, 'Modified', 1);

/** A scripted queue: each call takes the next behaviour; records what was accepted. */
function scriptedQueue(script: ((ids: string[]) => EntryFailure[] | Error)[]): QueuePort & { accepted: string[]; calls: number } {
  const q = {
    accepted: [] as string[],
    calls: 0,
    async sendBatch(entries: readonly { id: string; body: string }[]) {
      const step = script[q.calls] ?? (() => []);
      q.calls += 1;
      const result = step(entries.map((e) => e.id));
      if (result instanceof Error) throw result;
      const failed = new Set(result.map((f) => f.id));
      for (const e of entries) if (!failed.has(e.id)) q.accepted.push((decodeMessage(e.body) as { ok: true; message: { name: string } }).message.name);
      return { failed: result };
    },
    async probe() {},
  };
  return q;
}

function sender(queue: QueuePort, extra: Partial<ConstructorParameters<typeof Sender>[0]> = {}) {
  return new Sender({
    queue, queueLabel: 'work', maxMessages: 100, maxBatchBytes: 1 << 20, maxSenderFaultRetries: 2, backoffInitialMs: 1, backoffMaxMs: 5,
    metrics: createForwarderMetrics(), log: silentLogger, ...extra,
  });
}

test('classifyBatchResult: accepted, retried and given-up entries', () => {
  const b = new SendBuffer(10);
  for (const n of ['a', 'b', 'c']) b.push(msg(n));
  const batch = b.takeBatch(1 << 20);
  const failed = [
    { id: 'm1', senderFault: false, code: 'InternalError', message: '' },
    { id: 'm2', senderFault: true, code: 'InvalidMessageContents', message: 'bad' },
  ];
  const fresh = classifyBatchResult(batch, failed, new Map(), 2);
  assert.deepEqual([fresh.sent.length, fresh.retry.length, fresh.giveUp.length], [1, 2, 0]);
  const exhausted = classifyBatchResult(batch, failed, new Map([[objectKey(msg('c')), 2]]), 2);
  assert.deepEqual(exhausted.giveUp.map((g) => g.entry.message.name), ['c']);
});

test('rejected entries are retried until accepted; accepted ones are not sent twice', async () => {
  const q = scriptedQueue([
    (ids) => [{ id: ids[1]!, senderFault: false, code: 'InternalError', message: 'try again' }],
    (ids) => [{ id: ids[0]!, senderFault: false, code: 'InternalError', message: 'again' }],
  ]);
  const s = sender(q);
  s.setActive(true);
  s.enqueue(['a', 'b', 'c'].map(msg));
  assert.equal(await s.flush(Date.now() + 5000), 0);
  await s.stop();
  assert.deepEqual([...q.accepted].sort(), ['a', 'b', 'c']);
});

test('an outage (requests throwing) keeps everything buffered and delivers it afterwards', async () => {
  const down = () => new Error('connect ECONNREFUSED');
  const q = scriptedQueue([down, down, down, down]);
  const s = sender(q);
  s.setActive(true);
  s.enqueue(Array.from({ length: 25 }, (_, i) => msg(`o${i}`)));
  assert.equal(await s.flush(Date.now() + 5000), 0);
  assert.equal(s.reachable, true);
  await s.stop();
  assert.equal(q.accepted.length, 25);
  assert.ok(q.calls >= 4 + 3);
});

test('an entry the queue keeps rejecting as our fault is dropped after the retry limit', async () => {
  const reject = (ids: string[]) => [{ id: ids[0]!, senderFault: true, code: 'InvalidMessageContents', message: 'nope' }];
  const q = scriptedQueue([reject, reject, reject, reject, reject]);
  const metrics = createForwarderMetrics();
  const s = sender(q, { metrics });
  s.setActive(true);
  s.enqueue([msg('bad')]);
  assert.equal(await s.flush(Date.now() + 5000), 0);
  await s.stop();
  assert.equal(q.calls, 3, 'first try + maxSenderFaultRetries (2)');
  assert.equal((await metrics.messagesDropped.get()).values.find((v) => v.labels.cause === 'rejected')?.value, 1);
});

test('an inactive sender (not leader) sends nothing; stop returns what was never sent', async () => {
  const q = scriptedQueue([]);
  const s = sender(q);
  s.enqueue([msg('a'), msg('b')]);
  assert.equal(await s.flush(Date.now() + 50), 2);
  const left = await s.stop();
  assert.equal(q.calls, 0);
  assert.deepEqual(left.map((m) => m.name), ['a', 'b']);
});

test('overflow: dropped messages trigger onOverflowDrained once the buffer has drained', async () => {
  let healed = 0;
  const down = () => new Error('down');
  const q = scriptedQueue([down, down]);
  const s = sender(q, { maxMessages: 10, onOverflowDrained: () => { healed += 1; } });
  s.setActive(true);
  s.enqueue(Array.from({ length: 15 }, (_, i) => msg(`o${i}`)));
  assert.equal(s.overflowed, true);
  assert.equal(await s.flush(Date.now() + 5000), 0);
  for (let i = 0; i < 50 && healed === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await s.stop();
  assert.equal(healed, 1);
  assert.equal(s.overflowed, false);
});
