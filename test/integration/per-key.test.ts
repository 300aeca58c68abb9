/**
 * Per-key ordering end to end (docs/architecture.md, "Per-key ordering") on a REAL
 * kube-apiserver + etcd and a REAL broker (ElasticMQ's FIFO queues): the handler, the delay
 * mover and the local Lambda runner's event source, with ConfigMaps as primaries (no CRD).
 *
 * - Two runners and a burst of duplicated messages on one key: no two reconciles of the key
 *   overlap in time (each reconcile logs its start and end).
 * - A requeue storm: 100 reconciles of one key, each returning `requeueAfter(30)`, leave
 *   exactly one requeue in the delay queue, named by the object's pending-requeue mark
 *   (requeue-merge.ts); a replaced requeue is acknowledged without a reconcile; the marked
 *   one, once due (the handler's clock moved on rather than waiting 30 s), is reconciled and
 *   its own requeue becomes the pending one.
 * - The same storm on the real path with the real clock: 100 changes of each of 3 keys sent to
 *   the FIFO work queue while the function runs on both its event sources (the work queue, and
 *   the delay queue whose batches go to the mover), each reconcile asking for a 2 s requeue
 *   until the key has polled 3 times: each key's changes are reconciled in the order sent,
 *   never two at once, the newest one included; the storm's requeues merge or are superseded,
 *   so exactly one polling chain per key runs to its end; the queues drain, the DLQ is empty.
 * - A poisoned key (its reconcile always fails) blocks no other key, and reaches the DLQ with
 *   its reason after its retries went through the delay queue.
 * - Whoever can send to the delay queue cannot drop another key's follow-up: a message sent
 *   there with the `operless.mergeId` of a key's retry (the attribute the mover trusted until
 *   2026-12-03) is moved on its own id, and the key's retry still reaches the work queue.
 * - A requeue longer than the longest delay goes through the re-delay chain (delay queue,
 *   mover, `notBefore`) and is reconciled when due, not before: SQS's longest delay (900 s)
 *   is lowered to 2 s by configuration (`maxDelaySeconds`, OPERLESS_MAX_DELAY_SECONDS), so a
 *   5 s requeue takes the hops a 16-minute one takes, in seconds.
 * - Marks under failure and tampering: a primary whose annotations leave no room for the mark
 *   (every mark write 422) polls to the end, drains and dead-letters nothing; a tenant's mark
 *   below the pending requeue stops nothing, one far ahead stops polling only until the next
 *   reconcile (a Resync) writes over it; a redriven `Requeue` is reconciled.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as sdk from '@aws-sdk/client-sqs';
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { buildSqsEvent, createLambdaContext, queueArnFromUrl, startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { decodeMessage, encodeMessage, followUp, newMessage, objectKey, type ReconcileMessage } from '../../src/contract/message.ts';
import { REQUEUE_MARK_ANNOTATION, requeueMarkOf } from '../../src/contract/requeue-mark.ts';
import { DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler, type SqsBatchHandler } from '../../src/core/handler/handler.ts';
import { toDelayMoverHandler } from '../../src/core/per-key/mover.ts';
import { done, requeueAfter } from '../../src/core/controller/result.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import type { BoundKubeClient } from '../../src/kube/client.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import type { MessageSender } from '../../src/queue/sender.ts';
import { sqsQueuePort } from '../../src/queue/sqs-port.ts';
import { createLogger, silentLogger, type Logger } from '../../src/observability/log.ts';
import { dlqRedrive } from '../../src/cli/commands/dlq.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';

const CONFIGMAP: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const NS = 'default';
const CLUSTER = 'it';
/** The storm's `requeueAfter`, the figure. */
const POLL_SECONDS = 30;
/** The longest single delay in the long-requeue test, and the requeue it asks for. */
const LOWERED_MAX_DELAY_SECONDS = 2;
const LONG_REQUEUE_SECONDS = 5;
/** The real-clock storm: keys, changes sent per key, the requeue each reconcile asks for, and the polls a key makes before it is done. */
const STORM_KEYS = 3;
const STORM_CHANGES = 100;
const STORM_REQUEUE_SECONDS = 2;
const STORM_POLLS = 3;
/** The requeues of the `short-poll` behaviour (1 s apart). */
const SHORT_POLLS = 3;
/** The API server's limit on the total size of an object's annotations (keys and values). */
const ANNOTATIONS_LIMIT_BYTES = 256 * 1024;

let cp: ControlPlane;
let broker: Broker;
let sqs: SQSClient;
let admin: BoundKubeClient;

interface Queues {
  work: string;
  dlq: string;
  delay: string;
}

/** A FIFO work queue with its FIFO DLQ (maxReceiveCount 5) and a standard delay queue. */
async function perKeyQueues(visibilityTimeoutSeconds = 20): Promise<Queues> {
  const name = `pk-${randomUUID().slice(0, 8)}`;
  const create = async (queueName: string, attributes: Record<string, string>) =>
    (await sqs.send(new CreateQueueCommand({ QueueName: queueName, Attributes: attributes }))).QueueUrl!;
  const dlq = await create(`${name}-dlq.fifo`, { FifoQueue: 'true' });
  const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  const work = await create(`${name}.fifo`, {
    FifoQueue: 'true',
    VisibilityTimeout: String(visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 5 }),
  });
  const delay = await create(`${name}-delay`, { VisibilityTimeout: '20' });
  return { work, dlq, delay };
}

/** Each reconcile's start and end, per key, and the message it ran for. */
interface Span {
  key: string;
  start: number;
  end: number;
  reason: string;
  observedAt: number;
}

function handlerFor(
  queues: Queues,
  spans: Span[],
  options: { maxDelaySeconds?: number; log?: Logger; now?: () => number; sender?: MessageSender } = {},
): SqsBatchHandler {
  const controller = defineController<KubeObject & { data?: Record<string, string> }>({
    ...CONFIGMAP,
    async reconcile(cm, ctx) {
      const span: Span = { key: cm.metadata.name, start: performance.now(), end: Number.NaN, reason: ctx.message.reason, observedAt: ctx.message.observedAt };
      spans.push(span);
      try {
        switch (cm.data?.behaviour) {
          case 'slow':
            await sleep(20);
            return done();
          case 'poll':
            return requeueAfter(POLL_SECONDS);
          case 'short-poll':
            // Polls SHORT_POLLS times, 1 s apart, then is done.
            return spans.filter((s) => s.key === cm.metadata.name).length <= SHORT_POLLS ? requeueAfter(1) : done();
          case 'storm-poll':
            // Polls until the key's chain has had STORM_POLLS requeues reconciled (a second chain would show as one more).
            return spans.filter((s) => s.key === cm.metadata.name && s.reason === 'Requeue').length < STORM_POLLS
              ? requeueAfter(STORM_REQUEUE_SECONDS)
              : done();
          case 'long':
            return spans.filter((s) => s.key === cm.metadata.name).length === 1 ? requeueAfter(LONG_REQUEUE_SECONDS) : done();
          case 'broken':
            throw new Error('the backend of this object is down');
          default:
            return done();
        }
      } finally {
        span.end = performance.now();
      }
    },
    retry: { baseSeconds: 1, capSeconds: 1, maxAttempts: 3 },
  });
  return toSqsHandler(controller, {
    queueUrl: queues.work,
    deadLetterQueueUrl: queues.dlq,
    delayQueueUrl: queues.delay,
    clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: CLUSTER } }),
    sender: options.sender ?? createSqsSender(sqs),
    log: options.log ?? silentLogger,
    metrics: noMetrics,
    ...(options.maxDelaySeconds ? { maxDelaySeconds: options.maxDelaySeconds } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
}

async function configMap(behaviour: string, annotations?: Record<string, string>): Promise<KubeObject> {
  const metadata = { name: `cm-${behaviour}-${randomUUID().slice(0, 6)}`, namespace: NS, ...(annotations ? { annotations } : {}) };
  return admin.create(CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { behaviour } });
}

const messageOf = (cm: KubeObject, reason: 'Modified' | 'Owned' = 'Modified') =>
  encodeMessage(newMessage({ cluster: CLUSTER, apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: cm.metadata.name, uid: cm.metadata.uid }, reason));

function decodeOk(body: string): ReconcileMessage {
  const decoded = decodeMessage(body);
  assert.ok(decoded.ok);
  return decoded.message;
}

async function depth(url: string) {
  const a =
    (
      await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
        }),
      )
    ).Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed),
  };
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean, seconds = 60): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(200);
  }
  assert.fail(`${what}: not reached within ${seconds} s`);
}

const empty = async (url: string) => {
  const d = await depth(url);
  return d.visible + d.inFlight + d.delayed === 0;
};

/**
 * Sends a `Modified` of `cm` and runs the function on both its event sources — the work queue
 * and the delay queue (the handler hands the delay queue's batches to its mover) — until `cm`
 * had `reconciles` reconciles and both queues drained.
 */
async function runUntilDrained(
  queues: Queues,
  handler: SqsBatchHandler,
  cm: KubeObject,
  spans: Span[],
  until: { what: string; reconciles: number; seconds: number },
): Promise<void> {
  const port = sqsQueuePort(sdk, sqs, queues.work);
  assert.deepEqual((await port.sendBatch([{ id: 'm0', body: messageOf(cm) }])).failed, []);
  const runners = [
    await startLambdaRunner({ queueUrl: queues.work, sqs, handler, maxConcurrency: 1, logger: silentLogger }),
    await startLambdaRunner({ queueUrl: queues.delay, sqs, handler, maxConcurrency: 1, logger: silentLogger }),
  ];
  try {
    await waitFor(
      until.what,
      () => spans.filter((s) => s.key === cm.metadata.name).length >= until.reconciles && Number.isFinite(spans.at(-1)!.end),
      until.seconds,
    );
    await waitFor('both queues drained', async () => (await empty(queues.work)) && (await empty(queues.delay)), 60);
  } finally {
    await Promise.all(runners.map((r) => r.stop()));
  }
}

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane(), startBroker()]);
  sqs = broker.sqs();
  admin = await createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath } })('admin');
});

after(async () => {
  await Promise.allSettled([cp?.stop(), broker?.stop()]);
});

test('two runners, a burst of duplicated messages on one key: its reconciles never overlap', async () => {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const [hot, other] = [await configMap('slow'), await configMap('slow')];
  const port = sqsQueuePort(sdk, sqs, queues.work);
  for (let i = 0; i < 4; i++) {
    const burst = Array.from({ length: 10 }, (_, j) => ({ id: `m${j}`, body: messageOf(j % 5 === 4 ? other : hot, j % 2 ? 'Owned' : 'Modified') }));
    assert.deepEqual((await port.sendBatch(burst)).failed, []);
  }
  const handler = handlerFor(queues, spans);
  const runners: LambdaRunner[] = [];
  for (let i = 0; i < 2; i++)
    runners.push(await startLambdaRunner({ queueUrl: queues.work, sqs, handler, batchSize: 2, maxConcurrency: 2, logger: silentLogger }));
  try {
    await waitFor('the work queue drained', () => empty(queues.work));
  } finally {
    await Promise.all(runners.map((r) => r.stop()));
  }
  const ofHot = spans.filter((s) => s.key === hot.metadata.name).sort((a, b) => a.start - b.start);
  assert.ok(ofHot.length >= 5, `several reconciles of the key ran (${ofHot.length})`);
  for (let i = 1; i < ofHot.length; i++) {
    assert.ok(ofHot[i]!.start >= ofHot[i - 1]!.end, `reconcile ${i} of ${hot.metadata.name} started before reconcile ${i - 1} ended`);
  }
  assert.ok(
    spans.some((s) => s.key === other.metadata.name),
    'the other key was reconciled too',
  );
});

test(`a requeue storm: 100 reconciles returning requeueAfter(${POLL_SECONDS}) leave exactly one pending requeue of the key, marked on the object; a replaced requeue is never reconciled`, async (t) => {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const storm = await configMap('poll');
  const handler = handlerFor(queues, spans);
  const source = { eventSourceARN: queueArnFromUrl(queues.work, broker.region), awsRegion: broker.region };
  const group = objectKey({ cluster: CLUSTER, apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: storm.metadata.name });
  const deliver = async (h: SqsBatchHandler, body: string, id: string) => {
    const event = buildSqsEvent([{ MessageId: randomUUID(), ReceiptHandle: 'r', Body: body, Attributes: { MessageGroupId: group } }], source);
    const response = await h(
      event,
      createLambdaContext({ functionName: 'cm', region: broker.region, requestId: id, deadline: Date.now() + 30_000, memoryLimitMB: 512 }),
    );
    assert.deepEqual(response.batchItemFailures, []);
  };
  const started = Date.now();
  for (let i = 0; i < 100; i++) await deliver(handler, messageOf(storm), `storm-${i}`);
  const stormMs = Date.now() - started;
  assert.equal(spans.length, 100);
  assert.ok(
    stormMs < (POLL_SECONDS - 2) * 1000,
    `the storm (${stormMs} ms) is shorter than the requeue, so every requeue after the first is due after the pending one`,
  );

  // Exactly one requeue waits in the delay queue, and the object's mark names its due time.
  const pending = await depth(queues.delay);
  assert.equal(pending.visible + pending.inFlight + pending.delayed, 1, `one pending requeue of the key (${JSON.stringify(pending)})`);
  const mark = requeueMarkOf(await admin.get(CONFIGMAP, storm.metadata.name, NS));
  assert.ok(
    mark !== undefined && mark >= started + POLL_SECONDS * 1000 && mark <= started + stormMs + POLL_SECONDS * 1000 + 1000,
    `the mark (${mark}) is the first requeue's due time`,
  );
  t.diagnostic(`storm of 100 reconciles took ${stormMs} ms; 1 requeue pending, due ${mark - started} ms after the storm began`);

  // A requeue a later one replaced (due, but not the marked one) is acknowledged without a reconcile.
  const requeue = (notBefore: number) => encodeMessage(followUp(decodeOk(messageOf(storm)), { reason: 'Requeue', attempt: 0, notBefore }));
  await deliver(handler, requeue(Date.now() - 1000), 'replaced');
  assert.equal(spans.length, 100, 'the replaced requeue ran no reconcile');

  // When the marked one is due (the clock moved past it), it is reconciled, and the requeue it
  // returns becomes the pending one: a second delivery of the old one is then replaced too.
  const later = () => Date.now() + (POLL_SECONDS + 1) * 1000;
  const whenDue = handlerFor(queues, spans, { now: later });
  await deliver(whenDue, requeue(mark), 'marked');
  assert.equal(spans.length, 101, 'the marked requeue was reconciled');
  const next = requeueMarkOf(await admin.get(CONFIGMAP, storm.metadata.name, NS));
  assert.ok(next !== undefined && next > mark + POLL_SECONDS * 1000, `the new mark (${next}) is the next requeue's due time`);
  await deliver(whenDue, requeue(mark), 'marked-again');
  assert.equal(spans.length, 101, 'a second delivery of the consumed requeue ran no reconcile');
});

test(`a requeue storm on the real path and clock: ${STORM_CHANGES} changes of each of ${STORM_KEYS} keys through the FIFO work queue, the delay queue and the mover, each reconcile asking for requeueAfter(${STORM_REQUEUE_SECONDS}): per-key order, one polling chain per key, converged`, async (t) => {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const lines: string[] = [];
  const handler = handlerFor(queues, spans, { log: createLogger({ write: (line) => lines.push(line), level: 'info' }) });
  const keys = await Promise.all(Array.from({ length: STORM_KEYS }, () => configMap('storm-poll')));
  const runners = [
    await startLambdaRunner({ queueUrl: queues.work, sqs, handler, batchSize: 10, maxConcurrency: 2, logger: silentLogger }),
    await startLambdaRunner({ queueUrl: queues.delay, sqs, handler, maxConcurrency: 1, logger: silentLogger }),
  ];
  // The changes carry increasing observedAt values (ms), the keys interleaved: what a burst of edits sends.
  const base = Date.now();
  const storm = Array.from({ length: STORM_CHANGES }, (_, i) => keys.map((cm) => ({ ...decodeOk(messageOf(cm)), observedAt: base + i }))).flat();
  const port = sqsQueuePort(sdk, sqs, queues.work);
  let maxDelayed = 0;
  const started = Date.now();
  try {
    for (let i = 0; i < storm.length; i += 10) {
      assert.deepEqual((await port.sendBatch(storm.slice(i, i + 10).map((m, j) => ({ id: `m${j}`, body: encodeMessage(m) })))).failed, []);
    }
    const polled = (cm: KubeObject) => spans.filter((s) => s.key === cm.metadata.name && s.reason === 'Requeue').length;
    await waitFor(
      'every key polled to its end and both queues drained',
      async () => {
        const d = await depth(queues.delay);
        maxDelayed = Math.max(maxDelayed, d.visible + d.inFlight + d.delayed);
        return (
          keys.every((cm) => polled(cm) >= STORM_POLLS) &&
          spans.every((s) => Number.isFinite(s.end)) &&
          (await empty(queues.work)) &&
          (await empty(queues.delay))
        );
      },
      120,
    );
    // A second chain of a key would reconcile one more requeue after the first chain's end.
    await sleep((STORM_REQUEUE_SECONDS + 1) * 1000);
    assert.ok((await empty(queues.work)) && (await empty(queues.delay)), 'nothing more was sent after the chains ended');
  } finally {
    await Promise.all(runners.map((r) => r.stop()));
  }
  const log = reconcileLog(lines);
  for (const cm of keys) {
    const name = cm.metadata.name;
    const ofKey = spans.filter((s) => s.key === name).sort((a, b) => a.start - b.start);
    for (let i = 1; i < ofKey.length; i++) assert.ok(ofKey[i]!.start >= ofKey[i - 1]!.end, `reconcile ${i} of ${name} started before reconcile ${i - 1} ended`);
    const changes = ofKey.filter((s) => s.reason === 'Modified').map((s) => s.observedAt - base);
    assert.deepEqual(
      changes,
      [...changes].sort((a, b) => a - b),
      `${name}: its changes were reconciled in the order sent`,
    );
    assert.equal(new Set(changes).size, changes.length, `${name}: no change was reconciled twice`);
    assert.equal(changes.at(-1), STORM_CHANGES - 1, `${name}: the newest change was reconciled`);
    assert.equal(
      ofKey.filter((s) => s.reason === 'Requeue').length,
      STORM_POLLS,
      `${name}: exactly one polling chain — ${STORM_POLLS} requeues reconciled, none of a replaced one`,
    );
  }
  assert.deepEqual(await depth(queues.dlq), { visible: 0, inFlight: 0, delayed: 0 }, 'nothing in the DLQ');
  const merged = lines.filter((l) => l.includes('its requeue merged into the pending one')).length;
  t.diagnostic(
    `real-clock storm: ${storm.length} changes of ${STORM_KEYS} keys, ${spans.length} reconciles (${spans.filter((s) => s.reason === 'Modified').length} of changes, ${STORM_POLLS * STORM_KEYS} of requeues), ${merged} requeues merged, ${log.superseded} replaced ones acknowledged, at most ${maxDelayed} messages in the delay queue, ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
});

test('a poisoned key blocks no other key and reaches the DLQ with its reason', async () => {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const poison = await configMap('broken');
  const healthy = await Promise.all(Array.from({ length: 4 }, () => configMap('slow')));
  const port = sqsQueuePort(sdk, sqs, queues.work);
  assert.deepEqual((await port.sendBatch([poison, ...healthy].map((cm, i) => ({ id: `m${i}`, body: messageOf(cm) })))).failed, []);
  const handler = handlerFor(queues, spans);
  const runner = await startLambdaRunner({ queueUrl: queues.work, sqs, handler, batchSize: 2, maxConcurrency: 1, logger: silentLogger });
  const mover = await startLambdaRunner({
    queueUrl: queues.delay,
    sqs,
    handler: toDelayMoverHandler({ queueUrl: queues.work, delayQueueUrl: queues.delay, sender: createSqsSender(sqs), log: silentLogger }),
    maxConcurrency: 1,
    logger: silentLogger,
  });
  try {
    await waitFor('the poisoned message reached the DLQ', async () => (await depth(queues.dlq)).visible === 1, 60);
  } finally {
    await Promise.all([runner.stop(), mover.stop()]);
  }
  const attempts = spans.filter((s) => s.key === poison.metadata.name);
  assert.equal(attempts.length, 3, 'maxAttempts reconciles of the poisoned key, the retries through the delay queue');
  for (const cm of healthy) {
    const first = spans.find((s) => s.key === cm.metadata.name);
    assert.ok(first, `${cm.metadata.name} was reconciled`);
    assert.ok(first.end <= attempts.at(-1)!.start, `${cm.metadata.name} was reconciled before the poisoned key's last attempt: it did not wait behind it`);
  }
  const [dead] = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.dlq, MessageAttributeNames: ['All'] }))).Messages ?? [];
  assert.equal(dead?.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue, 'RetriesExhausted');
  assert.ok(dead?.Body?.includes(poison.metadata.name));
});

test(`a requeue longer than the longest delay (lowered to ${LOWERED_MAX_DELAY_SECONDS} s) hops through the delay queue and is reconciled when due, not before`, async () => {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const lines: string[] = [];
  const log = createLogger({ write: (line) => lines.push(line), level: 'info' });
  const cm = await configMap('long');
  const handler = handlerFor(queues, spans, { maxDelaySeconds: LOWERED_MAX_DELAY_SECONDS, log });
  await runUntilDrained(queues, handler, cm, spans, { what: 'the requeue was reconciled', reconciles: 2, seconds: 60 });
  const [first, second, ...more] = spans.filter((s) => s.key === cm.metadata.name);
  assert.deepEqual(more, [], 'exactly one requeue');
  const waitedMs = second!.start - first!.end;
  // notBefore is set after the first reconcile ended; a few ms of difference between clocks are allowed.
  assert.ok(
    waitedMs >= LONG_REQUEUE_SECONDS * 1000 - 50,
    `reconciled ${waitedMs.toFixed(0)} ms after the requeue of ${LONG_REQUEUE_SECONDS} s: not before it was due`,
  );
  const entries = lines.map((l) => JSON.parse(l) as { msg: string });
  const hops = entries.filter((e) => e.msg === 'not due yet: back to the delay queue').length;
  const moved = entries.filter((e) => e.msg === 'moved a due follow-up into the work queue').length;
  // 5 s with at most 2 s per hop: sent for 2 s, then re-delayed (once or twice, by when the mover
  // received it) until due, then moved. With SQS's 900 s it would be sent for 5 s and moved at once.
  assert.ok(hops >= 1, `${hops} re-delays in the delay queue: the chain of a long wait was taken`);
  assert.equal(moved, 1, 'moved into the work queue once, when due');
});

// Issue 29 item 10 (the audit's repro on the real broker): the mover took the sender's
// `operless.mergeId` as the FIFO deduplication id, so a message injected into the delay queue
// with a key's (predictable) retry id made SQS drop that key's retry for 5 minutes.
test("a message injected into the delay queue with another key's merge id does not drop that key's retry", async () => {
  const queues = await perKeyQueues();
  const victim = await configMap('quiet');
  const stolenId = 'the-victims-retry-id';
  const send = (body: string) =>
    sqs.send(
      new sdk.SendMessageCommand({
        QueueUrl: queues.delay,
        MessageBody: body,
        MessageAttributes: { 'operless.mergeId': { DataType: 'String', StringValue: stolenId } },
      }),
    );
  const injected = encodeMessage(newMessage({ cluster: CLUSTER, apiVersion: 'v1', kind: 'ConfigMap', namespace: 'tenant', name: 'whatever' }, 'Modified'));
  const retry = encodeMessage(followUp(decodeOk(messageOf(victim)), { reason: 'Retry', attempt: 1 }));
  await send(injected);
  await send(retry);
  const mover = await startLambdaRunner({
    queueUrl: queues.delay,
    sqs,
    handler: toDelayMoverHandler({ queueUrl: queues.work, delayQueueUrl: queues.delay, sender: createSqsSender(sqs), log: silentLogger }),
    maxConcurrency: 1,
    logger: silentLogger,
  });
  try {
    await waitFor('the mover moved both out of the delay queue', () => empty(queues.delay));
  } finally {
    await mover.stop();
  }
  assert.equal((await depth(queues.work)).visible, 2, 'both moved: neither merged into the other');
  const bodies: string[] = [];
  await waitFor('both read from the work queue', async () => {
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.work, MaxNumberOfMessages: 10 }));
    bodies.push(...(got.Messages ?? []).map((m) => m.Body ?? ''));
    return bodies.length >= 2;
  });
  assert.deepEqual(bodies.map((b) => objectKey(decodeOk(b))).sort(), [objectKey(decodeOk(injected)), objectKey(decodeOk(retry))].sort());
});

test(`a primary whose annotations are a few bytes short of ${ANNOTATIONS_LIMIT_BYTES} B: every mark write is refused (422), the polling chain goes on, the queues drain, nothing is dead-lettered`, async () => {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const lines: string[] = [];
  const log = createLogger({ write: (line) => lines.push(line), level: 'info' });
  // A tenant's mark of "1" (in the past: it holds nothing back), and a pad that leaves 7 bytes: a 13-digit mark needs 12 more.
  const short = { [REQUEUE_MARK_ANNOTATION]: '1' };
  const used = Object.entries(short).reduce((n, [k, v]) => n + k.length + v.length, 0) + 'pad'.length;
  const cm = await configMap('short-poll', { ...short, pad: 'a'.repeat(ANNOTATIONS_LIMIT_BYTES - used - 7) });
  const handler = handlerFor(queues, spans, { log });
  await runUntilDrained(queues, handler, cm, spans, { what: 'the polling chain ran to its end', reconciles: SHORT_POLLS + 1, seconds: 90 });
  assert.equal(spans.filter((s) => s.key === cm.metadata.name).length, SHORT_POLLS + 1, 'one reconcile per requeue: nothing piled up');
  assert.deepEqual(await depth(queues.dlq), { visible: 0, inFlight: 0, delayed: 0 }, 'nothing dead-lettered');
  const live = await admin.get(CONFIGMAP, cm.metadata.name, NS);
  assert.equal(live?.metadata.annotations?.[REQUEUE_MARK_ANNOTATION], '1', 'the API server refused every mark');
  const entries = lines.map((l) => JSON.parse(l) as { msg: string; error?: string; reason?: string });
  const reconciled = entries.filter((e) => e.msg === 'reconciled').map((e) => e.reason);
  assert.deepEqual(
    reconciled,
    ['Modified', ...Array.from({ length: SHORT_POLLS }, () => 'Requeue')],
    'the change once (never delivered again), then each requeue when due: the chain',
  );
  assert.equal(entries.filter((e) => e.msg.startsWith('a requeue a later one replaced')).length, 0, 'no unmarked requeue was taken for a replaced one');
  const unmarked = entries.filter((e) => e.msg.startsWith('could not mark the requeue just sent'));
  assert.equal(unmarked.length, SHORT_POLLS, 'each requeue stood unmarked, logged');
  assert.match(unmarked[0]?.error ?? '', /Too long|262144/);
});

/** The log entries of a handler's logger: each reconcile's line and its message reason, and the superseded ones. */
function reconcileLog(lines: readonly string[]) {
  const entries = lines.map((l) => JSON.parse(l) as { msg: string; reason?: string });
  return {
    reconciled: entries.filter((e) => e.msg === 'reconciled').map((e) => e.reason),
    superseded: entries.filter((e) => e.msg.startsWith('a requeue a later one replaced')).length,
  };
}

/**
 * A `short-poll` ConfigMap whose first requeue's mark a tenant overwrites with `mark` while the
 * requeue waits in the delay queue (the delay queue's event source starts only after the edit);
 * `meanwhile` runs with both event sources up, then the test waits for the chain's end and
 * both queues drained.
 */
async function pollWithTamperedMark(
  mark: string,
  meanwhile: (ctx: { cm: KubeObject; lines: string[]; port: ReturnType<typeof sqsQueuePort> }) => Promise<void> = async () => {},
) {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const lines: string[] = [];
  const handler = handlerFor(queues, spans, { log: createLogger({ write: (line) => lines.push(line), level: 'info' }) });
  const cm = await configMap('short-poll');
  const port = sqsQueuePort(sdk, sqs, queues.work);
  assert.deepEqual((await port.sendBatch([{ id: 'm0', body: messageOf(cm) }])).failed, []);
  const work = await startLambdaRunner({ queueUrl: queues.work, sqs, handler, maxConcurrency: 1, logger: silentLogger });
  let delay: LambdaRunner | undefined;
  try {
    await waitFor('the first reconcile marked its requeue', async () => requeueMarkOf(await admin.get(CONFIGMAP, cm.metadata.name, NS)) !== undefined, 30);
    await admin.mergePatch(CONFIGMAP, cm.metadata.name, NS, { metadata: { annotations: { [REQUEUE_MARK_ANNOTATION]: mark } } });
    delay = await startLambdaRunner({ queueUrl: queues.delay, sqs, handler, maxConcurrency: 1, logger: silentLogger });
    await meanwhile({ cm, lines, port });
    await waitFor(
      'the polling chain ran to its end',
      () => spans.filter((s) => s.key === cm.metadata.name).length >= SHORT_POLLS + 1 && Number.isFinite(spans.at(-1)!.end),
      60,
    );
    await waitFor('both queues drained', async () => (await empty(queues.work)) && (await empty(queues.delay)), 60);
  } finally {
    await Promise.all([work.stop(), delay?.stop()]);
  }
  return { cm, queues, log: reconcileLog(lines) };
}

test("a tenant sets the pending-requeue mark below the pending requeue's due time: the requeue is still reconciled, polling goes on by itself", async () => {
  const { queues, log } = await pollWithTamperedMark('1');
  assert.deepEqual(
    log.reconciled,
    ['Modified', ...Array.from({ length: SHORT_POLLS }, () => 'Requeue')],
    'each requeue reconciled when due, with no event to restart the chain',
  );
  assert.equal(log.superseded, 0);
  assert.deepEqual(await depth(queues.dlq), { visible: 0, inFlight: 0, delayed: 0 });
});

test('a tenant sets the mark far ahead: the pending requeue is taken for a replaced one, and the next reconcile (here the periodic Resync) writes its own mark over it and polling resumes', async () => {
  const forged = '999999999999999';
  const { cm, log } = await pollWithTamperedMark(forged, async ({ cm, lines, port }) => {
    await waitFor('the pending requeue was taken for a replaced one', () => reconcileLog(lines).superseded === 1, 30);
    const resync = encodeMessage(
      newMessage({ cluster: CLUSTER, apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: cm.metadata.name, uid: cm.metadata.uid }, 'Resync'),
    );
    assert.deepEqual((await port.sendBatch([{ id: 'r0', body: resync }])).failed, []);
  });
  assert.deepEqual(
    log.reconciled,
    ['Modified', 'Resync', ...Array.from({ length: SHORT_POLLS - 1 }, () => 'Requeue')],
    'after the Resync, each requeue is reconciled again',
  );
  assert.notEqual(
    (await admin.get(CONFIGMAP, cm.metadata.name, NS))?.metadata.annotations?.[REQUEUE_MARK_ANNOTATION],
    forged,
    'the forged mark was written over',
  );
});

test('`operless dlq redrive` of a dead-lettered Requeue, on an object with a mark: it comes back as a Retry and is reconciled, not taken for a replaced requeue', async () => {
  const queues = await perKeyQueues();
  const spans: Span[] = [];
  const lines: string[] = [];
  const handler = handlerFor(queues, spans, { log: createLogger({ write: (line) => lines.push(line), level: 'info' }) });
  const cm = await configMap('done', { [REQUEUE_MARK_ANNOTATION]: String(Date.now() + 3_600_000) });
  const requeue = followUp(decodeOk(messageOf(cm)), { reason: 'Requeue', attempt: 0, notBefore: Date.now() - 60_000 });
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queues.dlq,
      MessageBody: encodeMessage(requeue),
      MessageGroupId: objectKey(requeue),
      MessageDeduplicationId: randomUUID(),
      MessageAttributes: { [DLQ_ATTRIBUTE_REASON]: { DataType: 'String', StringValue: 'RetriesExhausted' } },
    }),
  );
  const result = await dlqRedrive(['--queue-url', queues.work, '--dlq-url', queues.dlq, '--endpoint', broker.endpoint, '--region', broker.region, '--json']);
  assert.equal((JSON.parse(result.output) as { redriven?: number }).redriven, 1);
  const work = await startLambdaRunner({ queueUrl: queues.work, sqs, handler, maxConcurrency: 1, logger: silentLogger });
  try {
    await waitFor('the redriven message was handled', async () => await empty(queues.work), 30);
  } finally {
    await work.stop();
  }
  const log = reconcileLog(lines);
  assert.deepEqual(log.reconciled, ['Retry'], 'reconciled once, as a Retry');
  assert.equal(log.superseded, 0);
  assert.equal(spans.filter((s) => s.key === cm.metadata.name).length, 1);
});

test("a requeue whose send fails once (the delay queue throttled): the record comes back after a short backoff, not the work queue's 300 s visibility timeout", async () => {
  const queues = await perKeyQueues(300);
  const spans: Span[] = [];
  const lines: string[] = [];
  const real = createSqsSender(sqs);
  let failures = 1;
  const throttledOnce: MessageSender = {
    send: async (queueUrl, message) => {
      if (queueUrl === queues.delay && failures-- > 0) throw new Error('ThrottlingException: Rate exceeded');
      return real.send(queueUrl, message);
    },
    changeVisibility: (queueUrl, entries) => real.changeVisibility!(queueUrl, entries),
  };
  const handler = handlerFor(queues, spans, { log: createLogger({ write: (line) => lines.push(line), level: 'info' }), sender: throttledOnce });
  const cm = await configMap('short-poll');
  // Waits well under the visibility timeout: only a shortened wait brings the record back in time.
  await runUntilDrained(queues, handler, cm, spans, { what: 'the polling chain ran to its end', reconciles: SHORT_POLLS + 1, seconds: 90 });
  assert.deepEqual(reconcileLog(lines).reconciled.slice(0, 2), ['Modified', 'Modified'], 'the change, handed back after the failed send, reconciled again');
  assert.deepEqual(await depth(queues.dlq), { visible: 0, inFlight: 0, delayed: 0 });
});
