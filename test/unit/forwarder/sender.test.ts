import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyBatchResult, Sender, type ResyncSource } from '../../../src/forwarder/sink/sender.ts';
import { MAX_BATCH_ENTRIES, SendBuffer } from '../../../src/forwarder/sink/buffer.ts';
import { feedRoom, ResyncFeed } from '../../../src/forwarder/sink/resync-feed.ts';
import { createForwarderMetrics } from '../../../src/forwarder/metrics.ts';
import type { EntryFailure, QueuePort } from '../../../src/queue/port.ts';
import { decodeMessage, newMessage, objectKey, type ReconcileMessage } from '../../../src/contract/message.ts';
import { createLogger, silentLogger, type Logger } from '../../../src/observability/log.ts';

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
    queue,
    queueLabel: 'work',
    maxMessages: 100,
    maxBatchBytes: 1 << 20,
    maxSenderFaultRetries: 2,
    backoffInitialMs: 1,
    backoffMaxMs: 5,
    metrics: createForwarderMetrics(),
    log: silentLogger,
    ...extra,
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
  assert.deepEqual(
    exhausted.giveUp.map((g) => g.entry.message.name),
    ['c'],
  );
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
  assert.deepEqual(
    left.map((m) => m.name),
    ['a', 'b'],
  );
});

test('overflow: dropped messages trigger onOverflowDrained once the buffer has drained', async () => {
  let healed = 0;
  const down = () => new Error('down');
  const q = scriptedQueue([down, down]);
  const s = sender(q, {
    maxMessages: 10,
    onOverflowDrained: () => {
      healed += 1;
    },
  });
  s.setActive(true);
  s.enqueue(Array.from({ length: 15 }, (_, i) => msg(`o${i}`)));
  assert.equal(s.overflowed, true);
  assert.equal(await s.flush(Date.now() + 5000), 0);
  for (let i = 0; i < 50 && healed === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await s.stop();
  assert.equal(healed, 1);
  assert.equal(s.overflowed, false);
});

/** A logger that keeps every line (level, message, fields). */
function capturingLogger(): { log: Logger; lines: { level: string; msg: string; [k: string]: unknown }[] } {
  const lines: { level: string; msg: string; [k: string]: unknown }[] = [];
  return { log: createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line)) }), lines };
}

async function counter(
  metrics: ReturnType<typeof createForwarderMetrics>,
  name: 'messagesDropped' | 'sendErrors',
  labels: Record<string, string>,
): Promise<number> {
  return (await metrics[name].get()).values
    .filter((v) => Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val))
    .reduce((n, v) => n + v.value, 0);
}

test('takeBatch drops a message that fails the contract (name "Bad_Name"), reports it once, and returns the rest', () => {
  const b = new SendBuffer(10);
  b.push(msg('a'));
  b.push(msg('Bad_Name'));
  b.push(msg('c'));
  const invalid: { name: string; reason: string }[] = [];
  const batch = b.takeBatch(1 << 20, (m, reason) => invalid.push({ name: m.name, reason }));
  assert.deepEqual(
    batch.map((e) => e.message.name),
    ['a', 'c'],
  );
  assert.equal(invalid.length, 1);
  assert.equal(invalid[0]!.name, 'Bad_Name');
  assert.match(invalid[0]!.reason, /name/);
  assert.equal(b.size, 0, 'the invalid message left the buffer');
  b.push(msg('Bad_Name'));
  assert.deepEqual(b.takeBatch(1 << 20), [], 'only invalid messages waiting: an empty batch, no throw');
});

test('a message that fails the contract is dropped with one ERROR line naming it and a counter; the loop goes on sending', async () => {
  const q = scriptedQueue([]);
  const metrics = createForwarderMetrics();
  const { log, lines } = capturingLogger();
  const s = sender(q, { metrics, log });
  s.setActive(true);
  s.enqueue([msg('a'), msg('Bad_Name'), msg('b')]);
  assert.equal(await s.flush(Date.now() + 5000), 0);
  s.enqueue([msg('later')]);
  assert.equal(await s.flush(Date.now() + 5000), 0, 'the loop is still alive');
  await s.stop();
  assert.deepEqual(q.accepted.sort(), ['a', 'b', 'later']);
  assert.equal(await counter(metrics, 'messagesDropped', { cause: 'invalid', queue: 'work' }), 1);
  const errors = lines.filter((l) => l.level === 'error');
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.equal(errors[0]!.key, 'Gadget/ns/Bad_Name');
});

test('an unexpected failure inside the send loop is logged, counted, marks the sender failing, and the loop recovers', async () => {
  const q = scriptedQueue([]);
  const metrics = createForwarderMetrics();
  const { log, lines } = capturingLogger();
  let failures = 2;
  const failingSeen: (string | undefined)[] = [];
  let s!: Sender;
  const resync: ResyncSource = {
    get pending() {
      return failures > 0 ? 1 : 0;
    },
    take() {
      failingSeen.push(s.failing);
      failures -= 1;
      throw new Error('feed exploded');
    },
  };
  s = sender(q, { metrics, log, resync });
  s.setActive(true);
  s.enqueue([msg('a')]);
  assert.equal(await s.flush(Date.now() + 5000), 0);
  s.enqueue([msg('b')]);
  assert.equal(await s.flush(Date.now() + 5000), 0);
  await s.stop();
  assert.deepEqual(q.accepted.sort(), ['a', 'b']);
  assert.ok(failingSeen.includes('feed exploded'), 'failing named the error while it failed');
  assert.equal(s.failing, undefined, 'failing clears once an iteration succeeds');
  assert.equal(await counter(metrics, 'sendErrors', { kind: 'internal', queue: 'work' }), 2);
  assert.equal(lines.filter((l) => l.msg.startsWith('the send loop failed unexpectedly')).length, 2);
});

test('a resync fed through the sender: 2,000 messages with a buffer of 20 — no overflow, each sent once, the buffer never past the low-water mark; a live change overtakes the rest of the resync', async () => {
  const metrics = createForwarderMetrics();
  const feed = new ResyncFeed<ReconcileMessage>(objectKey);
  const depths: number[] = [];
  let s!: Sender;
  const accepted: string[] = [];
  let liveSentAfter: number | undefined;
  const pendingSeen: number[] = [];
  const q: QueuePort = {
    async sendBatch(entries) {
      depths.push(s.depth);
      pendingSeen.push((await metrics.resyncPending.get()).values[0]?.value ?? -1);
      for (const e of entries) {
        const m = (decodeMessage(e.body) as { ok: true; message: ReconcileMessage }).message;
        accepted.push(m.name);
        if (m.name === 'live') liveSentAfter = accepted.length;
      }
      if (accepted.length === 500)
        s.enqueue([newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name: 'live' }, 'Added', 2)]);
      return { failed: [] };
    },
    async probe() {},
  };
  s = sender(q, { metrics, maxMessages: 20, resync: feed });
  s.setActive(true);
  feed.start(
    'gadgets',
    Array.from({ length: 2000 }, (_, i) => `o${i}`),
    (name) => newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name }, 'Resync', 1),
  );
  s.resyncAdded();
  assert.equal(await s.flush(Date.now() + 30_000), 0);
  await s.stop();
  assert.equal(accepted.length, 2001);
  assert.equal(new Set(accepted).size, 2001, 'each key once');
  assert.equal(s.overflowed, false);
  assert.equal(await counter(metrics, 'messagesDropped', {}), 0);
  assert.ok(Math.max(...depths) <= feedRoom(0, 20), `buffer depth max ${Math.max(...depths)}`);
  assert.ok(pendingSeen[0]! > 1900, `the resync_pending gauge showed the feed (${pendingSeen[0]})`);
  assert.equal((await metrics.resyncPending.get()).values[0]?.value, 0);
  assert.ok(
    liveSentAfter !== undefined && liveSentAfter <= 500 + feedRoom(0, 20) + MAX_BATCH_ENTRIES,
    `the live change went out after ${liveSentAfter} messages, not behind the whole resync`,
  );
});

test('overflow of live changes during a resync: healed by one resync once the buffer and the feed have drained', async () => {
  let healed = 0;
  const down = () => new Error('down');
  const q = scriptedQueue([down, down]);
  const feed = new ResyncFeed<ReconcileMessage>(objectKey);
  const s = sender(q, {
    maxMessages: 10,
    resync: feed,
    onOverflowDrained: () => {
      healed += 1;
    },
  });
  s.setActive(true);
  feed.start('gadgets', ['r0', 'r1', 'r2'], (name) =>
    newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name }, 'Resync', 1),
  );
  s.resyncAdded();
  s.enqueue(Array.from({ length: 15 }, (_, i) => msg(`o${i}`)));
  assert.equal(s.overflowed, true);
  assert.equal(await s.flush(Date.now() + 5000), 0, 'buffer and feed drained');
  for (let i = 0; i < 100 && healed === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await s.stop();
  assert.equal(healed, 1);
  assert.equal(feed.pending, 0);
});
