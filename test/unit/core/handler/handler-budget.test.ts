/**
 * The handler against the invocation's time budget when a reconcile does not cooperate:
 * one that ignores its aborted `ctx.signal` is abandoned and counted as failed (retried,
 * then dead-lettered), its batch-mates are acknowledged, and the handler answers before the
 * function timeout with every unfinished key's records in `batchItemFailures`. Driven by
 * Node's mock timers (setTimeout and Date): the clock only moves when the test ticks it.
 */
import { afterEach, beforeEach, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { decodeMessage, encodeMessage, newMessage, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_REASON } from '../../../../src/contract/dlq.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { toSqsHandler, type HandlerOptions } from '../../../../src/core/handler/handler.ts';
import { done } from '../../../../src/core/controller/result.ts';
import type { ReconcileContext } from '../../../../src/core/controller/types.ts';
import type { KindRef, KubeObject } from '../../../../src/kube/types.ts';
import { resetEventMemory } from '../../../../src/kube/events.ts';
import { EVENTS } from '../../../../src/kube/kinds.ts';
import { createLogger } from '../../../../src/observability/log.ts';
import { noMetrics } from '../../../../src/core/reconcile/metrics.ts';
import type { MessageSender } from '../../../../src/queue/sender.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord } from '../fakes.ts';

const QUEUE = 'http://q/work';
const DLQ = 'http://q/work-dlq';
const WIDGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };
/** A 4 s invocation with a 2 s reserve: abort at 3000 ms, abandon at 3500 ms, answer at 3800 ms. */
const TIMEOUT_MS = 4000;
const RESERVE_MS = 2000;

beforeEach(() => {
  resetEventMemory();
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_700_000_000_000 });
});
afterEach(() => {
  mock.timers.reset();
});

/** Lets pending promise callbacks run (setImmediate is not mocked). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Widgets whose behaviour depends on their name: `stuck-*` ignore the signal, `polite-*` honour it, others are done at once. */
async function reconcileWidget(obj: KubeObject, ctx: ReconcileContext<KubeObject>) {
  const name = obj.metadata.name;
  if (name.startsWith('stuck')) await new Promise(() => {});
  if (name.startsWith('polite')) {
    await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
  }
  return done();
}

function setup(options: Partial<HandlerOptions> = {}) {
  const cluster = fakeCluster();
  const sender = recordingSender();
  const lines: Record<string, unknown>[] = [];
  const handler = toSqsHandler(defineController({ ...WIDGET, reconcile: reconcileWidget, retry: { maxAttempts: 3 } }), {
    queueUrl: QUEUE,
    deadLetterQueueUrl: DLQ,
    clients: async () => cluster.client,
    sender,
    metrics: noMetrics,
    log: createLogger({ level: 'debug', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
    budgetReserveMs: RESERVE_MS,
    random: () => 1 - Number.EPSILON,
    ...options,
  });
  const message = (name: string, extra: Partial<ReconcileMessage> = {}): ReconcileMessage => {
    const obj = cluster.put(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name, namespace: 'ns' }, spec: {} });
    return { ...newMessage({ cluster: 'c1', ...WIDGET, namespace: 'ns', name, uid: obj.metadata.uid }, 'Modified', Date.now()), ...extra };
  };
  /** Starts one invocation; `answer` resolves with the indexes of the failed records. */
  const invoke = (messages: ReconcileMessage[]) => {
    const event: SQSEvent = { Records: messages.map((m) => sqsRecord(encodeMessage(m))) };
    const end = Date.now() + TIMEOUT_MS;
    let response: SQSBatchResponse | undefined;
    const pending = handler(
      event,
      lambdaContext(() => Math.max(0, end - Date.now())),
    ).then((r) => {
      response = r;
    });
    return {
      /** Whether the handler has answered yet. */
      answered: () => response !== undefined,
      /** Fails (instead of waiting on a clock that only the test moves) when no answer came yet. */
      async failedIndexes(): Promise<number[]> {
        await settle();
        assert.ok(response !== undefined, 'the handler has answered');
        await pending;
        return (response?.batchItemFailures ?? []).map((f) => event.Records.findIndex((r) => r.messageId === f.itemIdentifier));
      },
    };
  };
  /** Moves the clock to `ms` after the invocation started (in steps, letting promises run). */
  let at = 0;
  const advanceTo = async (ms: number) => {
    await settle();
    while (at < ms) {
      const step = Math.min(50, ms - at);
      mock.timers.tick(step);
      at += step;
      await settle();
    }
  };
  return { cluster, sender, lines, message, invoke, advanceTo };
}

test('a reconcile that ignores ctx.signal is abandoned: retried like a throw, batch-mates acknowledged, the answer comes before the timeout', async () => {
  const s = setup();
  const run = s.invoke([s.message('ok-a'), s.message('stuck-b'), s.message('polite-c'), s.message('ok-d')]);
  await s.advanceTo(3400);
  assert.equal(run.answered(), false, 'before the abandon point the stuck reconcile is still awaited');
  await s.advanceTo(3600);
  assert.equal(run.answered(), true, 'answered after abandoning the stuck reconcile, before the function timeout');
  assert.deepEqual(await run.failedIndexes(), [], 'every record is acknowledged: the stuck key has its retry message');
  const sent = s.sender.sent
    .map((m) => {
      const d = decodeMessage(m.body);
      assert.ok(d.ok);
      return { queue: m.queueUrl, name: d.message.name, reason: d.message.reason, attempt: d.message.attempt };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  assert.deepEqual(sent, [
    { queue: QUEUE, name: 'polite-c', reason: 'Retry', attempt: 1 },
    { queue: QUEUE, name: 'stuck-b', reason: 'Retry', attempt: 1 },
  ]);
  const abandoned = s.lines.filter((l) => /ignored ctx.signal/.test(String(l.msg)));
  assert.deepEqual(
    abandoned.map((l) => l.key),
    ['Widget/ns/stuck-b'],
    'one log line names the key that ignored the signal',
  );
  assert.equal(abandoned[0]?.level, 'error');
  const retrying = s.lines.find((l) => l.msg === 'reconcile failed; retrying' && l.key === 'Widget/ns/stuck-b');
  assert.match(String(retrying?.error), /did not stop .* after its signal was aborted/);
});

test('a stuck reconcile on its last attempt: dead-lettered with RetriesExhausted and a Warning Event on the object', async () => {
  const s = setup();
  const run = s.invoke([s.message('stuck-a', { attempt: 2, reason: 'Retry' }), s.message('ok-b')]);
  await s.advanceTo(3600);
  assert.deepEqual(await run.failedIndexes(), []);
  assert.equal(s.sender.sent.length, 1);
  const letter = s.sender.sent[0]!;
  assert.equal(letter.queueUrl, DLQ);
  assert.equal(letter.attributes?.[DLQ_ATTRIBUTE_REASON], 'RetriesExhausted');
  const events = [...s.cluster.objects.values()].filter((o) => o.kind === EVENTS.kind) as (KubeObject & { reason?: string; regarding?: { name?: string } })[];
  assert.deepEqual(
    events.map((e) => [e.reason, e.regarding?.name]),
    [['ReconcileFailed', 'stuck-a']],
  );
});

test('at the answer deadline unfinished keys are failures (a hung follow-up send, a key never started); a finished batch-mate is acknowledged', async () => {
  const base = recordingSender();
  // The stuck key's retry does not get through until the test lets it (SQS hangs).
  let release = () => {};
  const sender: MessageSender = {
    send: (url, m) =>
      m.body.includes('"stuck-b"')
        ? new Promise<void>((resolve) => {
            release = resolve;
          })
        : base.send(url, m),
  };
  const s = setup({ sender, concurrency: 1 });
  // One lane: ok-a finishes at once, stuck-b is abandoned at 3500 ms and its send hangs, ok-e waits for the lane.
  const messages = [s.message('ok-a'), s.message('stuck-b'), s.message('ok-e')];
  const run = s.invoke(messages);
  await s.advanceTo(3700);
  assert.equal(run.answered(), false, 'still waiting for the hung send before the answer deadline');
  await s.advanceTo(3850);
  assert.equal(run.answered(), true, 'answered at the deadline, before the function timeout');
  assert.deepEqual(
    (await run.failedIndexes()).map((i) => messages[i]!.name),
    ['stuck-b', 'ok-e'],
    'unfinished keys are failed so SQS delivers them again; ok-a is acknowledged',
  );
  const deadline = s.lines.find((l) => /time budget is spent/.test(String(l.msg)));
  assert.deepEqual(deadline?.unfinishedKeys, ['Widget/ns/stuck-b', 'Widget/ns/ok-e'], 'a log line names the unfinished keys');
  // The hung send completes after the answer: the lane moves on, but nothing more is started.
  release();
  await s.advanceTo(8000);
  assert.equal(s.lines.filter((l) => l.key === 'Widget/ns/ok-e').length, 0, 'ok-e was never started, not even after the answer');
  assert.deepEqual(base.sent, [], 'no hand-back or retry of ok-e was sent besides its failure');
});
