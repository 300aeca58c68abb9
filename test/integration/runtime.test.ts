/**
 * The reconcile runtime end to end against a REAL kube-apiserver + etcd and a REAL
 * SQS-compatible broker (ElasticMQ), one test per path of docs/semantics.md. Each test sends
 * messages to the work queue, receives them the way Lambda's event source mapping does,
 * invokes the handler, settles the batch (deletes what was acknowledged), and then asserts on
 * what is really in the API server and in the queues.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { startBroker, startControlPlane, testCrd, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { buildSqsEvent, createLambdaContext, queueArnFromUrl, settleBatch } from '../../src/local/lambda-runner.ts';
import { decodeMessage, encodeMessage, newMessage, type ReconcileMessage } from '../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import { defineController, type Controller } from '../../src/core/controller/controller.ts';
import { toSqsHandler, type HandlerOptions, type SqsBatchHandler } from '../../src/core/handler/handler.ts';
import { done, requeueAfter } from '../../src/core/controller/result.ts';
import { TerminalError } from '../../src/core/controller/errors.ts';
import type { ReconcileContext } from '../../src/core/controller/types.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { applyOwnedIfChanged, OWNER_GENERATION_ANNOTATION } from '../../src/kube/owned.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import type { BoundKubeClient } from '../../src/kube/client.ts';
import { resetEventMemory } from '../../src/kube/events.ts';
import { EVENTS } from '../../src/kube/kinds.ts';
import { setCondition } from '../../src/kube/conditions.ts';
import { PAUSED_ANNOTATION } from '../../src/contract/pause.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import { createLogger, silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';

const WIDGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };
const CONFIGMAP: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const FINALIZER = 'test.operless.dev/finalizer';
const NS = 'default';
const CLUSTER = 'it';

const WIDGET_CRD = testCrd({ group: 'test.operless.dev', kind: 'Widget' });

interface Widget extends KubeObject {
  spec: {
    behaviour?: 'ok' | 'poll' | 'flaky' | 'broken' | 'terminal' | 'conflict' | 'slow' | 'overtaken';
    failTimes?: number;
    note?: string;
    /** When a newer reconcile applies the `-desired` child while the first reconcile runs (see `raceForChild`). */
    childRace?: ChildRace;
  };
  status?: { phase?: string; conditions?: never[]; observedGeneration?: number };
}

let cp: ControlPlane;
let broker: Broker;
let sqs: SQSClient;
let admin: BoundKubeClient;
let WORK: string;
let DLQ: string;

/** What each reconcile saw, per widget name. */
const seen = new Map<string, ReconcileMessage[]>();
const finalized: string[] = [];

type ChildRace = 'before-read' | 'after-read' | 'created-meanwhile' | 'duplicate';

const desiredChild = (widget: Widget): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: `${widget.metadata.name}-desired`, namespace: NS },
  data: { note: widget.spec.note ?? '' },
});

/**
 * A reconcile overtaken while it computes its child (the `-desired` ConfigMap, whose data is
 * the owner's spec.note): on its first run, a newer change of the owner lands and a newer
 * reconcile applies the newer child — after this one read the child, before it read it, or
 * creating it after this one found none. This one then applies what it computed from the
 * older owner; the guard must refuse it.
 */
async function raceForChild(obj: Widget, ctx: ReconcileContext<Widget>, race: ChildRace): Promise<void> {
  const childName = `${obj.metadata.name}-desired`;
  const reread = () => ctx.client.get<KubeObject>(CONFIGMAP, childName, NS);
  // The widget controller's default field manager (defineController): the one ctx.applyOwned and ctx.client write with.
  const fieldManager = 'operless-widget';
  const readOwner = () => ctx.client.get<Widget>(WIDGET, obj.metadata.name, NS);
  if (race === 'duplicate') {
    // A second invocation of the same generation (a duplicate delivery) creates the same child
    // after this one read it as missing: the lost precondition is decided again, nothing to do.
    const live = await reread();
    await applyOwnedIfChanged((kind, child) => ctx.client.apply(kind, child), obj, CONFIGMAP, desiredChild(obj), undefined, { fieldManager, readOwner });
    await applyOwnedIfChanged((kind, child) => ctx.applyOwned(kind, child), obj, CONFIGMAP, desiredChild(obj), live, { fieldManager, readOwner, reread });
    return;
  }
  const newerReconcile = async () => {
    const newer = await admin.mergePatch<Widget>(WIDGET, obj.metadata.name, NS, { spec: { note: 'newer' } });
    const live = await ctx.client.get<KubeObject>(CONFIGMAP, childName, NS);
    await applyOwnedIfChanged((kind, child) => ctx.client.apply(kind, child), newer, CONFIGMAP, desiredChild(newer), live, { fieldManager, readOwner });
  };
  if (race === 'after-read') await newerReconcile();
  const live = await ctx.client.get<KubeObject>(CONFIGMAP, childName, NS);
  if (race !== 'after-read') await newerReconcile();
  // With the re-read: reading the child again after the lost precondition must not get past the fence.
  await applyOwnedIfChanged((kind, child) => ctx.applyOwned(kind, child), obj, CONFIGMAP, desiredChild(obj), live, { fieldManager, readOwner, reread });
}

async function widgetReconcile(obj: Widget, ctx: ReconcileContext<Widget>) {
  const name = obj.metadata.name;
  const runs = [...(seen.get(name) ?? []), ctx.message];
  seen.set(name, runs);
  if (obj.spec.childRace && runs.length === 1) await raceForChild(obj, ctx, obj.spec.childRace);
  await ctx.applyOwned(CONFIGMAP, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-child` }, data: { owner: name } });
  switch (obj.spec.behaviour) {
    case 'poll':
      if (runs.length === 1) return requeueAfter(1);
      break;
    case 'flaky':
      if (runs.length <= (obj.spec.failTimes ?? 1)) throw new Error(`flaky failure #${runs.length}`);
      break;
    case 'broken':
      throw new Error('the widget backend is down');
    case 'terminal':
      throw new TerminalError('spec.size must be even', { reason: 'InvalidSpec' });
    case 'conflict':
      if (runs.length === 1) {
        // A write based on a stale read: the real API server answers 409.
        await ctx.client.mergePatch(WIDGET, name, NS, { metadata: { resourceVersion: '1', labels: { touched: 'yes' } } });
      }
      break;
    case 'slow':
      await sleep(1500);
      break;
    case 'overtaken':
      if (runs.length === 1) {
        // A newer change (and a newer reconcile's status) lands while this one still runs on
        // what it read: its status write must not overwrite them.
        const newer = await admin.mergePatch<Widget>(WIDGET, name, NS, { spec: { note: 'newer' } });
        await admin.applyStatus(WIDGET, {
          apiVersion: WIDGET.apiVersion,
          kind: 'Widget',
          metadata: { name, namespace: NS },
          status: { phase: 'Newer', observedGeneration: newer.metadata.generation },
        });
      }
      break;
  }
  await ctx.updateStatus({
    phase: 'Ready',
    conditions: setCondition(obj.status?.conditions, {
      type: 'Ready',
      status: 'True',
      reason: 'Reconciled',
      message: 'ok',
      observedGeneration: obj.metadata.generation,
    }),
  });
  return done();
}

function controller(retry: { maxAttempts?: number } = {}): Controller<Widget> {
  return defineController<Widget>({
    ...WIDGET,
    reconcile: widgetReconcile,
    async finalize(obj) {
      finalized.push(obj.metadata.name);
      return done();
    },
    retry: { baseSeconds: 1, capSeconds: 2, maxAttempts: retry.maxAttempts ?? 5 },
  });
}

function handlerWith(options: Partial<HandlerOptions> = {}, retry: { maxAttempts?: number } = {}): SqsBatchHandler {
  return toSqsHandler(controller(retry), {
    queueUrl: WORK,
    deadLetterQueueUrl: DLQ,
    clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: CLUSTER } }),
    sender: createSqsSender(sqs),
    log: silentLogger,
    metrics: noMetrics,
    ...options,
  });
}

async function receive(queueUrl: string, waitSeconds = 0, max = 10): Promise<Message[]> {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: max,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return out.Messages ?? [];
}

async function counts(queueUrl: string) {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const a = out.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed),
  };
}

/** Receives until exactly `n` messages are in hand (they stay in flight for the visibility timeout). */
async function receiveN(n: number): Promise<Message[]> {
  let messages: Message[] = [];
  for (let i = 0; i < 20 && messages.length < n; i++) messages = [...messages, ...(await receive(WORK, 1, n - messages.length))];
  assert.equal(messages.length, n, `expected ${n} messages in the work queue`);
  return messages;
}

/** Invokes the handler with these received messages as one batch, then settles it (deletes what was acknowledged). */
async function invokeWith(handler: SqsBatchHandler, messages: Message[], timeoutMs = 30_000, settle = true) {
  const event = buildSqsEvent(messages, { eventSourceARN: queueArnFromUrl(WORK, broker.region), awsRegion: broker.region });
  const response = (await handler(
    event,
    createLambdaContext({
      functionName: 'widgets',
      region: broker.region,
      requestId: `req-${Date.now()}`,
      deadline: Date.now() + timeoutMs,
      memoryLimitMB: 512,
    }),
  )) as SQSBatchResponse;
  const settlement = settleBatch(
    event.Records.map((r) => r.messageId),
    response,
  );
  const toDelete = messages.filter((m) => settlement.deleteIds.includes(m.MessageId ?? ''));
  if (settle && toDelete.length) {
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: WORK, Entries: toDelete.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }));
  }
  return { messages, response, deleted: settlement.deleteIds };
}

/** One Lambda invocation: receive a batch from the work queue (waiting up to `waitSeconds`), invoke, settle. */
async function invoke(handler: SqsBatchHandler, opts: { waitSeconds?: number } = {}) {
  const messages = await receive(WORK, opts.waitSeconds ?? 5);
  if (messages.length === 0) return { messages, response: undefined, deleted: [] as string[] };
  return invokeWith(handler, messages);
}

/** Invokes until the work queue has nothing (visible or delayed) left, at most `limit` times. */
async function drain(handler: SqsBatchHandler, limit = 10) {
  const responses: (SQSBatchResponse | undefined)[] = [];
  for (let i = 0; i < limit; i++) {
    const c = await counts(WORK);
    if (c.visible + c.delayed + c.inFlight === 0) return responses;
    responses.push((await invoke(handler, { waitSeconds: 5 })).response);
  }
  assert.fail(`the work queue did not drain in ${limit} invocations: ${JSON.stringify(await counts(WORK))}`);
}

async function createWidget(name: string, spec: Widget['spec'] = { behaviour: 'ok' }): Promise<Widget> {
  return admin.create<Widget>(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name, namespace: NS }, spec });
}

function messageFor(w: KubeObject, extra: Partial<ReconcileMessage> = {}): ReconcileMessage {
  return {
    ...newMessage(
      {
        cluster: CLUSTER,
        apiVersion: w.apiVersion,
        kind: w.kind,
        namespace: NS,
        name: w.metadata.name,
        uid: w.metadata.uid,
        resourceVersion: w.metadata.resourceVersion,
      },
      'Added',
    ),
    ...extra,
  };
}

async function sendWork(body: string | ReconcileMessage) {
  await sqs.send(new SendMessageCommand({ QueueUrl: WORK, MessageBody: typeof body === 'string' ? body : encodeMessage(body) }));
}

async function eventsFor(w: KubeObject) {
  const list = await admin.list(EVENTS, { namespace: NS });
  return list.items.filter((e) => (e.regarding as { uid?: string }).uid === w.metadata.uid);
}

before(async () => {
  [cp, broker] = await Promise.all([
    startControlPlane({ crds: [WIDGET_CRD] }),
    startBroker({ queues: [{ name: 'work', visibilityTimeoutSeconds: 5, dlq: { name: 'work-dlq', maxReceiveCount: 10 } }] }),
  ]);
  sqs = broker.sqs();
  WORK = broker.queueUrl('work');
  DLQ = broker.queueUrl('work-dlq');
  admin = await createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath } })('admin');
});

after(async () => {
  await Promise.allSettled([cp?.stop(), broker?.stop()]);
});

beforeEach(async () => {
  resetEventMemory();
  await sqs.send(new PurgeQueueCommand({ QueueUrl: WORK }));
  await sqs.send(new PurgeQueueCommand({ QueueUrl: DLQ }));
});

test('done: status written with observedGeneration, finalizer added, owned child applied, queue empty, log fields', async () => {
  const lines: string[] = [];
  const w = await createWidget('w-done');
  await sendWork(messageFor(w));
  await sendWork(messageFor(w, { reason: 'Modified' }));
  const { response } = await invokeWith(handlerWith({ log: createLogger({ level: 'info', write: (l) => lines.push(l) }) }), await receiveN(2));
  assert.deepEqual(response.batchItemFailures, []);
  assert.equal(seen.get('w-done')?.length, 1, 'two records of one key: one reconcile');
  const live = await admin.get<Widget>(WIDGET, 'w-done', NS);
  assert.equal(live?.status?.phase, 'Ready');
  assert.equal(live?.status?.observedGeneration, 1);
  assert.deepEqual(live?.metadata.finalizers, [FINALIZER]);
  const child = await admin.get(CONFIGMAP, 'w-done-child', NS);
  assert.deepEqual(child?.metadata.ownerReferences, [
    { apiVersion: WIDGET.apiVersion, kind: 'Widget', name: 'w-done', uid: w.metadata.uid, controller: true, blockOwnerDeletion: true },
  ]);
  const managers = (child?.metadata.managedFields as { manager?: string }[] | undefined)?.map((f) => f.manager);
  assert.ok(managers?.includes('operless-widget'), `applied with the controller field manager (managers: ${managers})`);
  await drain(handlerWith());
  assert.deepEqual(await counts(WORK), { visible: 0, inFlight: 0, delayed: 0 });
  const reconciled = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'reconciled');
  assert.ok(reconciled, lines.join('\n'));
  for (const field of ['key', 'reconcileId', 'attempt', 'reason', 'lagMs', 'result', 'durationMs']) assert.ok(field in reconciled, `log line has ${field}`);
  assert.equal(reconciled.key, 'Widget/default/w-done');
  assert.equal(reconciled.result, 'success');
});

test('requeue after: a delayed Requeue message comes back and the next run completes', async () => {
  const w = await createWidget('w-poll', { behaviour: 'poll' });
  await sendWork(messageFor(w));
  const handler = handlerWith();
  const first = await invoke(handler);
  assert.deepEqual(first.response?.batchItemFailures, []);
  const c = await counts(WORK);
  assert.equal(c.visible + c.delayed, 1, 'the requeue is in the queue');
  const [requeued] = await receive(WORK, 10, 1);
  assert.ok(requeued, 'the requeue arrives');
  const body = decodeMessage(requeued.Body ?? '');
  assert.ok(body.ok);
  assert.equal(body.message.reason, 'Requeue');
  assert.equal(body.message.attempt, 0);
  assert.ok(
    Number(requeued.Attributes?.ApproximateFirstReceiveTimestamp) - Number(requeued.Attributes?.SentTimestamp) >= 900,
    'it was delayed by about a second',
  );
  // put it back for the handler (visibility 0)
  await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: WORK, Entries: [{ Id: '0', ReceiptHandle: requeued.ReceiptHandle }] }));
  await sendWork(body.message);
  await drain(handler);
  assert.deepEqual(
    seen.get('w-poll')?.map((m) => m.reason),
    ['Added', 'Requeue'],
  );
  assert.equal((await admin.get<Widget>(WIDGET, 'w-poll', NS))?.status?.phase, 'Ready');
});

test('retry then success: attempts climb with backoff, then the status is written', async () => {
  const w = await createWidget('w-flaky', { behaviour: 'flaky', failTimes: 2 });
  await sendWork(messageFor(w));
  await drain(handlerWith());
  assert.deepEqual(
    seen.get('w-flaky')?.map((m) => [m.reason, m.attempt]),
    [
      ['Added', 0],
      ['Retry', 1],
      ['Retry', 2],
    ],
  );
  assert.equal((await admin.get<Widget>(WIDGET, 'w-flaky', NS))?.status?.phase, 'Ready');
  assert.deepEqual(await counts(DLQ), { visible: 0, inFlight: 0, delayed: 0 });
});

test('retries exhausted: DLQ with reason and error, Warning Event on the object', async () => {
  const w = await createWidget('w-broken', { behaviour: 'broken' });
  await sendWork(messageFor(w));
  await drain(handlerWith({}, { maxAttempts: 3 }));
  assert.equal(seen.get('w-broken')?.length, 3);
  const [dead] = await receive(DLQ, 2);
  assert.ok(dead, 'a dead letter');
  assert.equal(dead.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue, 'RetriesExhausted');
  assert.match(dead.MessageAttributes?.[DLQ_ATTRIBUTE_ERROR]?.StringValue ?? '', /gave up after 3 attempts: the widget backend is down/);
  const d = decodeMessage(dead.Body ?? '');
  assert.ok(d.ok && d.message.name === 'w-broken');
  const events = await eventsFor(w);
  assert.equal(events.length, 1);
  assert.equal(events[0]?.type, 'Warning');
  assert.equal(events[0]?.reason, 'ReconcileFailed');
  assert.match(String(events[0]?.note), /the widget backend is down/);
});

test('terminal error: no retry, DLQ TerminalError and a Warning Event with its reason', async () => {
  const w = await createWidget('w-terminal', { behaviour: 'terminal' });
  await sendWork(messageFor(w));
  await drain(handlerWith());
  assert.equal(seen.get('w-terminal')?.length, 1);
  const [dead] = await receive(DLQ, 2);
  assert.equal(dead?.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue, 'TerminalError');
  const events = await eventsFor(w);
  assert.equal(events[0]?.reason, 'InvalidSpec');
  assert.equal(events[0]?.note, 'spec.size must be even');
  // the same failure again is folded into the Event's series, not a new Event
  resetEventMemory();
  await sendWork(messageFor(w, { reason: 'Resync' }));
  await drain(handlerWith());
  const again = await eventsFor(w);
  assert.equal(again.length, 1);
  assert.equal((again[0]?.series as { count?: number } | undefined)?.count, 2);
});

test('conflict: the real 409 leads to a prompt retry with fresh state', async () => {
  const w = await createWidget('w-conflict', { behaviour: 'conflict' });
  await sendWork(messageFor(w));
  const handler = handlerWith();
  await invoke(handler);
  const [retry] = await receive(WORK, 10, 1);
  assert.ok(retry);
  const m = decodeMessage(retry.Body ?? '');
  assert.ok(m.ok);
  assert.equal(m.message.reason, 'Retry');
  assert.equal(m.message.attempt, 1);
  await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: WORK, Entries: [{ Id: '0', ReceiptHandle: retry.ReceiptHandle }] }));
  await sendWork(m.message);
  await drain(handler);
  assert.equal((await admin.get<Widget>(WIDGET, 'w-conflict', NS))?.status?.phase, 'Ready');
});

test('a stale status write is refused: a reconcile overtaken by a newer change gets a 409 and retries with fresh state, never regressing observedGeneration', async () => {
  const w = await createWidget('w-overtaken', { behaviour: 'overtaken' });
  await sendWork(messageFor(w));
  const handler = handlerWith();
  await invoke(handler);
  const afterFirst = await admin.get<Widget>(WIDGET, 'w-overtaken', NS);
  assert.equal(afterFirst?.status?.phase, 'Newer', 'the newer status was not overwritten');
  assert.equal(afterFirst?.status?.observedGeneration, 2);
  const [retry] = await receive(WORK, 10, 1);
  const m = decodeMessage(retry?.Body ?? '');
  assert.ok(m.ok && m.message.reason === 'Retry', 'the 409 is retried');
  await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: WORK, Entries: [{ Id: '0', ReceiptHandle: retry!.ReceiptHandle }] }));
  await sendWork(m.message);
  await drain(handler);
  const final = await admin.get<Widget>(WIDGET, 'w-overtaken', NS);
  assert.equal(final?.status?.phase, 'Ready');
  assert.equal(final?.status?.observedGeneration, 2);
});

for (const race of ['before-read', 'after-read', 'created-meanwhile'] as const) {
  test(`an overtaken reconcile never applies an older desired child (newer reconcile ${race}): a 409, retried with fresh state`, async () => {
    const name = `w-child-${race}`;
    const w = await createWidget(name, { behaviour: 'ok', note: 'older', childRace: race });
    if (race !== 'created-meanwhile') {
      await admin.apply(CONFIGMAP, { ...desiredChild({ ...w, spec: { note: 'initial' } }), metadata: { name: `${name}-desired`, namespace: NS } });
    }
    await sendWork(messageFor(w));
    const handler = handlerWith();
    await invoke(handler);
    const child = await admin.get<KubeObject & { data?: { note?: string } }>(CONFIGMAP, `${name}-desired`, NS);
    assert.equal(child?.data?.note, 'newer', 'the child computed from the older owner generation was not applied');
    assert.equal(child?.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '2');
    const [retry] = await receive(WORK, 10, 1);
    const m = decodeMessage(retry?.Body ?? '');
    assert.ok(m.ok && m.message.reason === 'Retry', 'the 409 is retried');
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: WORK, Entries: [{ Id: '0', ReceiptHandle: retry!.ReceiptHandle }] }));
    await sendWork(m.message);
    await drain(handler);
    const final = await admin.get<Widget>(WIDGET, name, NS);
    assert.equal(final?.status?.phase, 'Ready');
    assert.equal(final?.status?.observedGeneration, 2);
    assert.equal((await admin.get<KubeObject & { data?: { note?: string } }>(CONFIGMAP, `${name}-desired`, NS))?.data?.note, 'newer');
  });
}

test('a duplicate reconcile that finds its child created meanwhile by the same generation: decided again on the spot, no 409 retry', async () => {
  const name = 'w-child-duplicate';
  await createWidget(name, { behaviour: 'ok', note: 'same', childRace: 'duplicate' });
  const w = (await admin.get<Widget>(WIDGET, name, NS))!;
  await sendWork(messageFor(w));
  const { response } = await invoke(handlerWith());
  assert.deepEqual(response?.batchItemFailures, []);
  assert.deepEqual(await counts(WORK), { visible: 0, inFlight: 0, delayed: 0 }, 'no Retry message: the reconcile went on');
  const child = await admin.get<KubeObject & { data?: { note?: string } }>(CONFIGMAP, `${name}-desired`, NS);
  assert.equal(child?.data?.note, 'same');
  const final = await admin.get<Widget>(WIDGET, name, NS);
  assert.equal(final?.status?.phase, 'Ready');
  assert.equal(final?.status?.observedGeneration, 1);
});

test('not found: acknowledged, nothing sent, nothing written', async () => {
  await sendWork(newMessage({ cluster: CLUSTER, ...WIDGET, namespace: NS, name: 'w-ghost' }, 'Added'));
  const { response } = await invoke(handlerWith());
  assert.deepEqual(response?.batchItemFailures, []);
  assert.equal(seen.has('w-ghost'), false);
  assert.deepEqual(await counts(WORK), { visible: 0, inFlight: 0, delayed: 0 });
  assert.deepEqual(await counts(DLQ), { visible: 0, inFlight: 0, delayed: 0 });
});

test('recreated object: a message about the old uid does not reconcile the new object', async () => {
  const old = await createWidget('w-recreated');
  await admin.delete(WIDGET, 'w-recreated', NS);
  const recreated = await createWidget('w-recreated');
  assert.notEqual(recreated.metadata.uid, old.metadata.uid);
  await sendWork(messageFor(old));
  const { response } = await invoke(handlerWith());
  assert.deepEqual(response?.batchItemFailures, []);
  assert.equal(seen.has('w-recreated'), false);
  assert.equal((await admin.get<Widget>(WIDGET, 'w-recreated', NS))?.metadata.finalizers, undefined, 'the new object was not touched');
});

test('deletion with finalizer: finalize runs, the finalizer is removed and the object goes', async () => {
  const w = await createWidget('w-delete');
  await sendWork(messageFor(w));
  await drain(handlerWith());
  assert.deepEqual((await admin.get(WIDGET, 'w-delete', NS))?.metadata.finalizers, [FINALIZER]);
  await admin.delete(WIDGET, 'w-delete', NS);
  const deleting = await admin.get(WIDGET, 'w-delete', NS);
  assert.ok(deleting?.metadata.deletionTimestamp, 'held by the finalizer');
  await sendWork(messageFor(w, { reason: 'Modified' }));
  await drain(handlerWith());
  assert.deepEqual(
    finalized.filter((n) => n === 'w-delete'),
    ['w-delete'],
  );
  assert.equal(await admin.get(WIDGET, 'w-delete', NS), undefined);
});

test('pause: a paused object is reconciled by no trigger, shows Paused, still finalizes; removing the annotation reconciles it', async () => {
  const lines: string[] = [];
  const handler = handlerWith({ log: createLogger({ level: 'info', write: (l) => lines.push(l) }) });
  const w = await createWidget('w-paused');
  await sendWork(messageFor(w));
  await drain(handler);
  assert.equal(seen.get('w-paused')?.length, 1);
  const paused = await admin.mergePatch<Widget>(WIDGET, 'w-paused', NS, {
    metadata: { annotations: { [PAUSED_ANNOTATION]: 'true' } },
    spec: { note: 'while paused' },
  });
  for (const reason of ['Modified', 'Owned', 'Related', 'Resync', 'Requeue', 'Retry'] as const) {
    await sendWork(messageFor(paused, { reason, ...(reason === 'Retry' ? { attempt: 1 } : {}) }));
    await drain(handler); // one trigger at a time: one batch would coalesce them into one reconcile decision
  }
  assert.equal(seen.get('w-paused')?.length, 1, 'no message reason reconciles a paused object');
  assert.deepEqual(await counts(WORK), { visible: 0, inFlight: 0, delayed: 0 }, 'nothing sent after a paused object');
  let live = await admin.get<Widget>(WIDGET, 'w-paused', NS);
  const pausedCondition = (live?.status?.conditions as { type: string; status: string; reason: string }[] | undefined)?.find((c) => c.type === 'Paused');
  assert.equal(pausedCondition?.status, 'True');
  assert.equal(pausedCondition?.reason, 'PausedByAnnotation');
  assert.ok(
    ((live?.status?.conditions ?? []) as { type: string }[]).some((c) => c.type === 'Ready'),
    "the author's Ready condition is kept",
  );
  assert.equal(live?.status?.observedGeneration, 1, "the author's status is untouched: the new generation is not observed");
  const pausedEvents = (await eventsFor(w)).filter((e) => e.reason === 'Paused');
  assert.equal(pausedEvents.length, 1, 'one Paused Event for the transition, not one per trigger');
  const skipped = lines.map((l) => JSON.parse(l)).filter((l) => l.result === 'paused');
  assert.equal(skipped.length, 6, lines.join('\n'));
  for (const line of skipped) assert.equal(line.key, 'Widget/default/w-paused');

  const resumed = await admin.mergePatch<Widget>(WIDGET, 'w-paused', NS, { metadata: { annotations: { [PAUSED_ANNOTATION]: null } } });
  await sendWork(messageFor(resumed, { reason: 'Modified' }));
  await drain(handler);
  assert.equal(seen.get('w-paused')?.length, 2, 'reconciled once the annotation is gone');
  live = await admin.get<Widget>(WIDGET, 'w-paused', NS);
  assert.equal(((live?.status?.conditions ?? []) as { type: string; status: string }[]).find((c) => c.type === 'Paused')?.status, 'False');
  assert.equal(live?.status?.observedGeneration, live?.metadata.generation);
  assert.equal((await eventsFor(w)).filter((e) => e.reason === 'Resumed').length, 1);

  await admin.mergePatch(WIDGET, 'w-paused', NS, { metadata: { annotations: { [PAUSED_ANNOTATION]: 'true' } } });
  await admin.delete(WIDGET, 'w-paused', NS);
  await sendWork(messageFor(w, { reason: 'Modified' }));
  await drain(handler);
  assert.deepEqual(
    finalized.filter((n) => n === 'w-paused'),
    ['w-paused'],
    'deletion is honoured while paused',
  );
  assert.equal(await admin.get(WIDGET, 'w-paused', NS), undefined);
});

test('poison message: moved to the DLQ with the reason, acknowledged, the batch goes on', async () => {
  const w = await createWidget('w-neighbour');
  await sendWork('{"v":1,"kind":"Widget"}');
  await sendWork(messageFor(w));
  await drain(handlerWith());
  const [dead] = await receive(DLQ, 2);
  assert.equal(dead?.Body, '{"v":1,"kind":"Widget"}');
  assert.equal(dead?.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue, 'InvalidMessage');
  assert.match(dead?.MessageAttributes?.[DLQ_ATTRIBUTE_ERROR]?.StringValue ?? '', /missing field "cluster"/);
  assert.equal(seen.get('w-neighbour')?.length, 1);
});

test('budget exhaustion: keys not started are handed back unchanged, not failed', async () => {
  const ws = await Promise.all(['w-slow-a', 'w-slow-b', 'w-slow-c'].map((n) => createWidget(n, { behaviour: 'slow' })));
  for (const w of ws) await sendWork(messageFor(w, { attempt: 1, reason: 'Retry' }));
  // A 6 s invocation keeping 5 s in reserve: the first slow (1.5 s) reconcile uses up the rest.
  const { response, deleted } = await invokeWith(handlerWith({ concurrency: 1, budgetReserveMs: 5000 }), await receiveN(3), 6000);
  assert.deepEqual(response.batchItemFailures, [], 'deferred keys are not failures');
  assert.equal(deleted.length, 3);
  const started = ws.filter((w) => seen.has(w.metadata.name));
  assert.equal(started.length, 1, 'only one key had time to start');
  const handedBack = await receive(WORK, 2);
  const decoded = handedBack.map((m) => decodeMessage(m.Body ?? '')).flatMap((d) => (d.ok ? [d.message] : []));
  assert.deepEqual(
    decoded.map((m) => m.name).sort(),
    ws
      .filter((w) => !seen.has(w.metadata.name))
      .map((w) => w.metadata.name)
      .sort(),
  );
  for (const m of decoded) {
    assert.equal(m.reason, 'Retry');
    assert.equal(m.attempt, 1, 'attempt unchanged: a deferral is not a failure');
  }
});

test('broker unreachable during the follow-up: the record is in batchItemFailures', async () => {
  const w = await createWidget('w-outage', { behaviour: 'poll' });
  await sendWork(messageFor(w));
  const [message] = await receive(WORK, 5, 1);
  assert.ok(message);
  // The function's queue endpoint: a real broker that then goes away.
  const gone = await startBroker({ queues: [{ name: 'work' }] });
  const unreachable = new SQSClient({
    endpoint: gone.endpoint,
    region: gone.region,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 2,
  });
  const goneUrl = gone.queueUrl('work');
  await gone.stop();
  try {
    const { response } = await invokeWith(handlerWith({ queueUrl: goneUrl, sender: createSqsSender(unreachable) }), [message]);
    assert.deepEqual(response.batchItemFailures, [{ itemIdentifier: message.MessageId }]);
    assert.equal(seen.get('w-outage')?.length, 1, 'the reconcile ran; only its requeue could not be sent');
  } finally {
    unreachable.destroy();
  }
  // Not deleted: SQS delivers the record again after its visibility timeout.
  const [again] = await receive(WORK, 10, 1);
  assert.equal(again?.MessageId, message.MessageId);
  assert.equal(again?.Attributes?.ApproximateReceiveCount, '2');
});

test('configuration from the environment: queue URLs, cluster, kubeconfig and AWS_ENDPOINT_URL_SQS', async () => {
  const w = await createWidget('w-env', { behaviour: 'poll' });
  const names = [
    'OPERLESS_QUEUE_URL',
    'OPERLESS_DLQ_URL',
    'OPERLESS_CLUSTER',
    'OPERLESS_KUBECONFIG',
    'AWS_ENDPOINT_URL_SQS',
    'AWS_REGION',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
  ] as const;
  const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
  Object.assign(process.env, {
    OPERLESS_QUEUE_URL: WORK,
    OPERLESS_DLQ_URL: DLQ,
    OPERLESS_CLUSTER: CLUSTER,
    OPERLESS_KUBECONFIG: cp.kubeconfigPath,
    AWS_ENDPOINT_URL_SQS: broker.endpoint,
    AWS_REGION: broker.region,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });
  try {
    // No options: everything from the environment, the SDK's default client included.
    const handler = toSqsHandler(controller(), { log: silentLogger, metrics: noMetrics });
    await sendWork(messageFor(w));
    await sendWork('not a message');
    const { response } = await invokeWith(handler, await receiveN(2));
    assert.deepEqual(response.batchItemFailures, []);
    assert.equal(seen.get('w-env')?.length, 1);
    const [requeued] = await receive(WORK, 10, 1);
    assert.equal(requeued && decodeMessage(requeued.Body ?? '').ok, true, 'the requeue went to OPERLESS_QUEUE_URL through AWS_ENDPOINT_URL_SQS');
    const [dead] = await receive(DLQ, 2);
    assert.equal(dead?.Body, 'not a message', 'the poison message went to OPERLESS_DLQ_URL');
    // a message for another cluster is refused
    await sendWork(messageFor(w, { cluster: 'elsewhere' }));
    await invokeWith(handler, await receiveN(1));
    const [refused] = await receive(DLQ, 2);
    assert.equal(refused?.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue, 'UnknownCluster');
  } finally {
    for (const n of names) {
      if (saved[n] === undefined) delete process.env[n];
      else process.env[n] = saved[n];
    }
  }
});
