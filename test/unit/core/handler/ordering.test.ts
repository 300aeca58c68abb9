/**
 * The handler's ordering, resolved once from its configuration (core/handler/ordering.ts) and
 * passed down: named or inferred from the work queue's kind, every mismatch with the queues
 * refused naming the field; and `toSqsHandler` refusing such a configuration at cold start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isFromQueueNamed, ORDERING_VARIABLE, queueName, resolveOrdering, type OrderingConfig } from '../../../../src/core/handler/ordering.ts';
import { toSqsHandler } from '../../../../src/core/handler/handler.ts';
import { defineController } from '../../../../src/core/controller/controller.ts';
import { done } from '../../../../src/core/controller/result.ts';
import type { ClientFactory } from '../../../../src/kube/factory.ts';
import { sendFollowUp, type DeliveryTarget } from '../../../../src/core/reconcile/delivery.ts';
import { noMetrics } from '../../../../src/core/reconcile/metrics.ts';
import { newMessage } from '../../../../src/contract/message.ts';
import type { Ordering } from '../../../../src/contract/ordering.ts';
import type { MessageSender } from '../../../../src/queue/sender.ts';

const STANDARD = 'https://sqs.eu-west-1.amazonaws.com/123456789012/app-work';
const FIFO = 'https://sqs.eu-west-1.amazonaws.com/123456789012/app-work.fifo';
const DELAY = 'https://sqs.eu-west-1.amazonaws.com/123456789012/app-work-delay';

function config(ordering: unknown, queueUrl: string | undefined, delayQueueUrl?: string): OrderingConfig {
  return {
    ordering: { value: ordering, field: ORDERING_VARIABLE },
    queueUrl: { value: queueUrl, field: 'OPERLESS_QUEUE_URL' },
    delayQueueUrl: { value: delayQueueUrl, field: 'OPERLESS_DELAY_QUEUE_URL' },
  };
}

test("unnamed, the ordering is the work queue's kind: .fifo is per-key, any other unordered", () => {
  assert.deepEqual(resolveOrdering(config(undefined, STANDARD)), { ordering: 'unordered' });
  assert.deepEqual(resolveOrdering(config('', STANDARD)), { ordering: 'unordered' }, 'an empty variable is unset');
  assert.deepEqual(resolveOrdering(config(undefined, FIFO)), { ordering: 'per-key' });
  assert.deepEqual(resolveOrdering(config(undefined, FIFO, DELAY)), { ordering: 'per-key', delayQueueName: 'app-work-delay' });
  assert.deepEqual(
    resolveOrdering(config(undefined, undefined)),
    { ordering: 'unordered' },
    'no work queue: nothing to order (a follow-up is refused when sent)',
  );
});

test('named, the ordering must agree with the queues', () => {
  assert.deepEqual(resolveOrdering(config('per-key', FIFO, DELAY)), { ordering: 'per-key', delayQueueName: 'app-work-delay' });
  assert.deepEqual(resolveOrdering(config('unordered', STANDARD)), { ordering: 'unordered' });
  assert.deepEqual(resolveOrdering(config('per-key', FIFO)), { ordering: 'per-key' }, 'per-key without a delay queue: immediate follow-ups still work');
});

test('every mismatch is refused, naming the field to fix', () => {
  const refused: readonly (readonly [OrderingConfig, RegExp])[] = [
    [config('ordered', FIFO), /^TypeError: OPERLESS_ORDERING must be one of unordered, per-key, got "ordered"/],
    [config(7, FIFO), /^TypeError: OPERLESS_ORDERING must be one of unordered, per-key, got 7/],
    [
      config('per-key', STANDARD),
      /^TypeError: OPERLESS_QUEUE_URL must be a FIFO queue \(its name ends in \.fifo\) with per-key ordering \(OPERLESS_ORDERING\)/,
    ],
    [config('unordered', FIFO), /^TypeError: OPERLESS_QUEUE_URL is a FIFO queue .* but OPERLESS_ORDERING is unordered/],
    [config(undefined, STANDARD, DELAY), /^TypeError: OPERLESS_DELAY_QUEUE_URL must be empty with unordered ordering/],
    [config('unordered', STANDARD, DELAY), /^TypeError: OPERLESS_DELAY_QUEUE_URL must be empty with unordered ordering/],
    [config('per-key', FIFO, `${DELAY}.fifo`), /^TypeError: OPERLESS_DELAY_QUEUE_URL must be a standard queue/],
    [config('per-key', FIFO, FIFO), /^TypeError: OPERLESS_DELAY_QUEUE_URL must be a standard queue/],
  ];
  for (const [input, message] of refused) assert.throws(() => resolveOrdering(input), message, JSON.stringify(input));
});

test('per-key with a delay queue and no work queue set: the delay queue is known, a follow-up is refused when sent', () => {
  const input: OrderingConfig = config('per-key', undefined, DELAY);
  assert.deepEqual(resolveOrdering(input), { ordering: 'per-key', delayQueueName: 'app-work-delay' });
});

test('a batch is from the delay queue when its event source ARN names it', () => {
  assert.equal(queueName(`${DELAY}/`), 'app-work-delay');
  assert.equal(isFromQueueNamed('arn:aws:sqs:eu-west-1:123456789012:app-work-delay', 'app-work-delay'), true);
  assert.equal(isFromQueueNamed('arn:aws:sqs:eu-west-1:123456789012:app-work.fifo', 'app-work-delay'), false);
  assert.equal(isFromQueueNamed('arn:aws:sqs:eu-west-1:123456789012:app-work-delay', undefined), false, 'no delay queue: never the mover');
  assert.equal(isFromQueueNamed(undefined, 'app-work-delay'), false);
});

test('toSqsHandler resolves the ordering once, at cold start: a misconfigured function is refused naming the field', () => {
  const controller = defineController({ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, reconcile: async () => done() });
  const clients = {} as ClientFactory;
  assert.throws(
    () => toSqsHandler(controller, { clients, queueUrl: STANDARD, ordering: 'per-key' }),
    /^TypeError: the queueUrl option of toSqsHandler must be a FIFO queue .* \(the ordering option of toSqsHandler\)/,
  );
  assert.throws(
    () => toSqsHandler(controller, { clients, queueUrl: STANDARD, delayQueueUrl: DELAY }),
    /^TypeError: the delayQueueUrl option of toSqsHandler must be empty with unordered ordering/,
  );
  const saved = { ordering: process.env[ORDERING_VARIABLE], queue: process.env.OPERLESS_QUEUE_URL, delay: process.env.OPERLESS_DELAY_QUEUE_URL };
  try {
    Object.assign(process.env, { [ORDERING_VARIABLE]: 'unordered', OPERLESS_QUEUE_URL: FIFO, OPERLESS_DELAY_QUEUE_URL: '' });
    assert.throws(() => toSqsHandler(controller, { clients }), /^TypeError: OPERLESS_QUEUE_URL is a FIFO queue .* but OPERLESS_ORDERING is unordered/);
    process.env[ORDERING_VARIABLE] = 'per-key';
    assert.equal(typeof toSqsHandler(controller, { clients }), 'function', 'named per-key with a FIFO queue');
  } finally {
    for (const [name, value] of [
      [ORDERING_VARIABLE, saved.ordering],
      ['OPERLESS_QUEUE_URL', saved.queue],
      ['OPERLESS_DELAY_QUEUE_URL', saved.delay],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

test('delivery follows the ordering it is given, not the queue URL: per-key sends a delayed follow-up through the delay queue', async () => {
  const sent: { queueUrl: string; delaySeconds: number | undefined }[] = [];
  const sender: MessageSender = {
    send: async (queueUrl, message) => {
      sent.push({ queueUrl, delaySeconds: message.delaySeconds });
    },
  };
  const target = (ordering: Ordering): DeliveryTarget => ({
    queueUrl: 'work',
    deadLetterQueueUrl: 'dlq',
    delayQueueUrl: 'delay',
    ordering,
    sender: async () => sender,
    metrics: noMetrics,
    now: () => 0,
  });
  const message = newMessage({ cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'a' }, 'Requeue');
  await sendFollowUp(target('per-key'), message, 30);
  await sendFollowUp(target('per-key'), message, 0);
  await sendFollowUp(target('unordered'), message, 30);
  assert.deepEqual(sent, [
    { queueUrl: 'delay', delaySeconds: 30 },
    { queueUrl: 'work', delaySeconds: 0 },
    { queueUrl: 'work', delaySeconds: 30 },
  ]);
});
