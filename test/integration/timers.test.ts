/**
 * Per-object timers (core/controller/timer.ts, docs/semantics.md "Per-object timers") end to end on a REAL
 * kube-apiserver + etcd and a REAL broker (ElasticMQ), in both orderings — unordered (a
 * standard work queue) and per-key (a FIFO work queue, its delay queue and the mover) — with
 * ConfigMaps as primaries and a timer every 2 s:
 *
 * - one `Added` message, then no event at all: the timer runs again and again;
 * - the function restarts (its runners stopped, a new handler built): the chain goes on from
 *   the queue;
 * - an event in between reconciles the object without doubling the chain: every run's tick is
 *   due at least one period after the previous run's (two chains would interleave), and no tick
 *   runs twice;
 * - pausing the object ends the chain (the queues drain); the event of the resume starts it again;
 * - deleting the object ends the chain: the queues drain and the timer runs no more.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as sdk from '@aws-sdk/client-sqs';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { PAUSED_ANNOTATION } from '../../src/contract/pause.ts';
import { timerMarkOf } from '../../src/contract/timer-mark.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler, type SqsBatchHandler } from '../../src/core/handler/handler.ts';
import { done } from '../../src/core/controller/result.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { messagesIn, useRuntimeServers, waitFor } from '../support/runtime-servers.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import { sqsQueuePort } from '../../src/queue/sqs-port.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';

const CONFIGMAP: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const NS = 'default';
const CLUSTER = 'it';
const EVERY_SECONDS = 2;

const servers = useRuntimeServers();

interface Queues {
  work: string;
  dlq: string;
  delay?: string;
}

async function queuesFor(ordering: 'unordered' | 'per-key'): Promise<Queues> {
  const name = `tm-${randomUUID().slice(0, 8)}`;
  const create = async (queueName: string, attributes: Record<string, string> = {}) =>
    (await servers.sqs.send(new CreateQueueCommand({ QueueName: queueName, Attributes: attributes }))).QueueUrl!;
  if (ordering === 'unordered') return { work: await create(name, { VisibilityTimeout: '20' }), dlq: await create(`${name}-dlq`) };
  return {
    work: await create(`${name}.fifo`, { FifoQueue: 'true', VisibilityTimeout: '20' }),
    dlq: await create(`${name}-dlq.fifo`, { FifoQueue: 'true' }),
    delay: await create(`${name}-delay`, { VisibilityTimeout: '20' }),
  };
}

/** One timer run: the object, its tick's due time, and when it ran (for overlap). */
interface Run {
  name: string;
  due: number;
  start: number;
  end: number;
}

/** A "function": a handler built from scratch (a cold start) and its runners on every queue it reads. */
async function startFunction(queues: Queues, runs: Run[], reconciles: string[]): Promise<{ stop: () => Promise<void> }> {
  const controller = defineController<KubeObject>({
    ...CONFIGMAP,
    async reconcile(cm) {
      reconciles.push(cm.metadata.name);
      return done();
    },
    timers: [
      {
        name: 'health',
        everySeconds: EVERY_SECONDS,
        async run(cm, ctx) {
          const run: Run = { name: cm.metadata.name, due: ctx.message.notBefore ?? Number.NaN, start: performance.now(), end: Number.NaN };
          runs.push(run);
          await sleep(50);
          run.end = performance.now();
        },
      },
    ],
  });
  const handler: SqsBatchHandler = toSqsHandler(controller, {
    queueUrl: queues.work,
    deadLetterQueueUrl: queues.dlq,
    ...(queues.delay ? { delayQueueUrl: queues.delay } : {}),
    clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: servers.cp.kubeconfigPath, OPERLESS_CLUSTER: CLUSTER } }),
    sender: createSqsSender(servers.sqs),
    log: silentLogger,
    metrics: noMetrics,
  });
  const runners: LambdaRunner[] = [];
  for (const queueUrl of [queues.work, ...(queues.delay ? [queues.delay] : [])]) {
    runners.push(await startLambdaRunner({ queueUrl, sqs: servers.sqs, handler, batchSize: 5, maxConcurrency: 2, logger: silentLogger }));
  }
  return { stop: async () => void (await Promise.all(runners.map((r) => r.stop()))) };
}

async function send(queues: Queues, cm: KubeObject, reason: 'Added' | 'Modified'): Promise<void> {
  const body = encodeMessage(
    newMessage({ cluster: CLUSTER, apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: cm.metadata.name, uid: cm.metadata.uid }, reason),
  );
  assert.deepEqual((await sqsQueuePort(sdk, servers.sqs, queues.work).sendBatch([{ id: 'm', body }])).failed, []);
}

const drained = async (queues: Queues) => (await messagesIn(servers.sqs, queues.work)) + (queues.delay ? await messagesIn(servers.sqs, queues.delay) : 0) === 0;
const runsOf = (runs: readonly Run[], cm: KubeObject) => runs.filter((r) => r.name === cm.metadata.name);

/** One chain: no tick ran twice, each run's tick is due at least a period after the previous one's, and (per-key) no two runs overlapped. */
function assertOneChain(runs: readonly Run[], ordering: string): void {
  const dues = runs.map((r) => r.due);
  assert.ok(dues.every(Number.isFinite), "every run names its tick's due time");
  assert.equal(new Set(dues).size, dues.length, `no tick ran twice: ${dues.join(', ')}`);
  const sorted = [...dues].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) {
    assert.ok(
      sorted[i]! - sorted[i - 1]! >= EVERY_SECONDS * 1000,
      `tick ${i} is due ${sorted[i]! - sorted[i - 1]!} ms after the one before: two chains (${sorted.join(', ')})`,
    );
  }
  if (ordering === 'per-key') {
    const byStart = [...runs].sort((a, b) => a.start - b.start);
    for (let i = 1; i < byStart.length; i++) assert.ok(byStart[i]!.start >= byStart[i - 1]!.end, `run ${i} started before run ${i - 1} ended`);
  }
}

for (const ordering of ['unordered', 'per-key'] as const) {
  test(`${ordering}: a timer runs with no events, survives a function restart, is not doubled by an event, stops on pause and on deletion`, async () => {
    const queues = await queuesFor(ordering);
    const runs: Run[] = [];
    const reconciles: string[] = [];
    const cm = await servers.admin.create(CONFIGMAP, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `timed-${randomUUID().slice(0, 6)}`, namespace: NS },
    });
    let fn = await startFunction(queues, runs, reconciles);
    try {
      await send(queues, cm, 'Added');
      await waitFor('three runs after one event', () => runsOf(runs, cm).length >= 3);
      assert.equal(reconciles.length, 1, 'one reconcile: the runs came from the chain, not from events');
      const marked = await servers.admin.get(CONFIGMAP, cm.metadata.name, NS);
      assert.ok(timerMarkOf(marked, 'health') !== undefined, 'the pending tick is marked on the object');

      await fn.stop();
      const beforeRestart = runsOf(runs, cm).length;
      fn = await startFunction(queues, runs, reconciles);
      await waitFor('two more runs after the function restarted', () => runsOf(runs, cm).length >= beforeRestart + 2);

      await send(queues, cm, 'Modified');
      await waitFor('the event reconciled', () => reconciles.length === 2);
      const afterEvent = runsOf(runs, cm).length;
      await waitFor('three more runs after the event', () => runsOf(runs, cm).length >= afterEvent + 3);
      assertOneChain(runsOf(runs, cm), ordering);

      await servers.admin.mergePatch(CONFIGMAP, cm.metadata.name, NS, { metadata: { annotations: { [PAUSED_ANNOTATION]: 'true' } } });
      await waitFor("the paused object's chain ended (the queues drained)", () => drained(queues));
      const paused = runsOf(runs, cm).length;
      assert.equal(timerMarkOf(await servers.admin.get(CONFIGMAP, cm.metadata.name, NS), 'health'), undefined, 'the mark of a paused object is removed');

      await servers.admin.mergePatch(CONFIGMAP, cm.metadata.name, NS, { metadata: { annotations: { [PAUSED_ANNOTATION]: null } } });
      await send(queues, cm, 'Modified');
      await waitFor("the resumed object's timer runs again", () => runsOf(runs, cm).length >= paused + 2);
      assertOneChain(runsOf(runs, cm), ordering);

      await servers.admin.delete(CONFIGMAP, cm.metadata.name, NS);
      await waitFor("the deleted object's chain ended (the queues drained)", () => drained(queues));
      const atDeletion = runsOf(runs, cm).length;
      assert.equal(await messagesIn(servers.sqs, queues.dlq), 0, 'nothing dead-lettered');
      // The queues are empty: nothing can run the timer again. Checked once more after a period.
      await sleep(EVERY_SECONDS * 1000 + 500);
      assert.equal(runsOf(runs, cm).length, atDeletion, 'no run after the deletion');
      assert.ok(await drained(queues));
    } finally {
      await fn.stop();
    }
  });
}
