/**
 * A configured budget reserve at or above the function's timeout cannot work: no key could
 * ever start, so every record would be handed back to the queue forever and never reach the
 * DLQ. The handler refuses it — the invocation fails naming the setting and the timeout — and
 * a reserve below the timeout still runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSEvent } from 'aws-lambda';
import { encodeMessage, newMessage } from '../../../../src/contract/message.ts';
import { reserveProblem } from '../../../../src/core/invocation/budget.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { toSqsHandler, type HandlerOptions } from '../../../../src/core/handler/handler.ts';
import { done } from '../../../../src/core/controller/result.ts';
import type { KindRef } from '../../../../src/kube/types.ts';
import { silentLogger } from '../../../../src/observability/log.ts';
import { noMetrics } from '../../../../src/core/reconcile/metrics.ts';
import { fakeCluster, lambdaContext, recordingSender, sqsRecord } from '../fakes.ts';

const WIDGET: KindRef = { apiVersion: 'test.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };

function setup(options: Partial<HandlerOptions>) {
  const cluster = fakeCluster();
  const sender = recordingSender();
  let reconciles = 0;
  const handler = toSqsHandler(
    defineController({
      ...WIDGET,
      reconcile: async () => {
        reconciles++;
        return done();
      },
    }),
    {
      queueUrl: 'http://q/work',
      deadLetterQueueUrl: 'http://q/work-dlq',
      clients: async () => cluster.client,
      sender,
      metrics: noMetrics,
      log: silentLogger,
      ...options,
    },
  );
  const obj = cluster.put(WIDGET, { apiVersion: WIDGET.apiVersion, kind: 'Widget', metadata: { name: 'w1', namespace: 'ns' }, spec: {} });
  const event: SQSEvent = {
    Records: [sqsRecord(encodeMessage(newMessage({ cluster: 'c1', ...WIDGET, namespace: 'ns', name: 'w1', uid: obj.metadata.uid }, 'Modified', Date.now())))],
  };
  return { handler, event, sender, reconciles: () => reconciles };
}

test('reserveProblem: only a configured reserve at or above the starting time is a problem', () => {
  assert.equal(reserveProblem(30_000, undefined, 'OPERLESS_BUDGET_RESERVE_MS'), undefined, 'the default reserve always fits');
  assert.equal(reserveProblem(30_000, 29_999, 'OPERLESS_BUDGET_RESERVE_MS'), undefined);
  assert.equal(reserveProblem(Number.POSITIVE_INFINITY, 10_000, 'OPERLESS_BUDGET_RESERVE_MS'), undefined, 'no known timeout: nothing to compare');
  const problem = reserveProblem(30_000, 30_000, 'OPERLESS_BUDGET_RESERVE_MS');
  assert.match(problem ?? '', /OPERLESS_BUDGET_RESERVE_MS is 30000 ms, at or above the 30000 ms/);
  assert.match(problem ?? '', /timeout/);
});

test('a reserve above the function timeout (env OPERLESS_BUDGET_RESERVE_MS) is refused: the invocation fails naming it, nothing is handed back', async () => {
  const saved = process.env.OPERLESS_BUDGET_RESERVE_MS;
  process.env.OPERLESS_BUDGET_RESERVE_MS = '60000';
  try {
    const { handler, event, sender, reconciles } = setup({});
    await assert.rejects(
      handler(
        event,
        lambdaContext(() => 30_000),
      ),
      (err: Error) => {
        assert.match(err.message, /OPERLESS_BUDGET_RESERVE_MS is 60000 ms, at or above the 30000 ms this invocation started with/);
        return true;
      },
    );
    assert.equal(reconciles(), 0);
    assert.deepEqual(sender.sent, [], 'no hand-back message: the batch returns through SQS and ends in the DLQ after maxReceiveCount');
  } finally {
    if (saved === undefined) delete process.env.OPERLESS_BUDGET_RESERVE_MS;
    else process.env.OPERLESS_BUDGET_RESERVE_MS = saved;
  }
});

test('a reserve equal to the timeout given as the budgetReserveMs option is refused naming the option', async () => {
  const { handler, event } = setup({ budgetReserveMs: 5_000 });
  await assert.rejects(
    handler(
      event,
      lambdaContext(() => 5_000),
    ),
    /budgetReserveMs option of toSqsHandler is 5000 ms/,
  );
});

test('a reserve below the timeout runs the reconcile', async () => {
  const { handler, event, reconciles } = setup({ budgetReserveMs: 4_000 });
  const response = await handler(
    event,
    lambdaContext(() => 5_000),
  );
  assert.deepEqual(response.batchItemFailures, []);
  assert.equal(reconciles(), 1);
});
