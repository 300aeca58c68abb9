import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineController } from '../../../src/core/controller/controller.ts';
import { done } from '../../../src/core/controller/result.ts';
import { memcachedController } from '../../../src/memcached/controller.ts';
import { devQueueNames, queueEnvironment } from '../../../src/devloop/dev-queues.ts';
import { functionWatches } from '../../../src/devloop/project.ts';
import { parseConfig } from '../../../src/forwarder/config/config.ts';

const tenant = defineController({
  apiVersion: 'tenancy.example.com/v1alpha1',
  kind: 'Tenant',
  plural: 'tenants',
  namespaced: false,
  owns: [
    { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
    { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true },
  ],
  reconcile: async () => done(),
});

test("each function's primaries go to that function's queue; owned kinds are watched once", () => {
  const watches = functionWatches([
    { controllers: [defineController(memcachedController)], queueUrl: 'http://127.0.0.1:1/000000000000/operless-dev-memcached' },
    { controllers: [tenant], queueUrl: 'http://127.0.0.1:1/000000000000/operless-dev-tenant' },
  ]);
  assert.deepEqual(
    watches.primaries?.map((p) => [p.kind, p.queueUrl]),
    [
      ['Memcached', 'http://127.0.0.1:1/000000000000/operless-dev-memcached'],
      ['Tenant', 'http://127.0.0.1:1/000000000000/operless-dev-tenant'],
    ],
  );
  assert.deepEqual(watches.owned?.map((w) => w.kind).sort(), ['Deployment', 'Namespace', 'Service'], 'Deployment once, though both own it');
  const config = parseConfig({ clusterId: 'dev', queue: { region: 'us-east-1' }, ...watches });
  assert.equal(config.queues.length, 2, 'the forwarder gets one sender per function queue');
});

test('local queue names: one pair per function and its bulk queue, safe for SQS', () => {
  assert.deepEqual(devQueueNames('memcached'), { queue: 'operless-dev-memcached', dlq: 'operless-dev-memcached-dlq', bulk: 'operless-dev-memcached-bulk' });
  assert.deepEqual(devQueueNames('my.fn'), { queue: 'operless-dev-my-fn', dlq: 'operless-dev-my-fn-dlq', bulk: 'operless-dev-my-fn-bulk' });
  assert.match(devQueueNames('f'.repeat(200)).bulk!, /^[A-Za-z0-9_-]{1,80}$/);
  assert.equal(queueEnvironment({ queueUrl: 'q', dlqUrl: 'd', bulkQueueUrl: 'b' }).OPERLESS_BULK_QUEUE_URL, 'b');
  assert.notEqual(devQueueNames('a').queue, devQueueNames('b').queue);
});

test('local queue names with per-key ordering: FIFO work queue and DLQ, a standard delay queue with its DLQ, all valid SQS names', () => {
  assert.deepEqual(devQueueNames('memcached', 'per-key'), {
    queue: 'operless-dev-memcached.fifo',
    dlq: 'operless-dev-memcached-dlq.fifo',
    delay: { queue: 'operless-dev-memcached-delay', dlq: 'operless-dev-memcached-delay-dlq' },
  });
  const long = devQueueNames('f'.repeat(200), 'per-key');
  for (const name of [long.queue, long.dlq, long.delay!.queue, long.delay!.dlq])
    assert.match(name, /^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$/, name);
  assert.deepEqual(
    queueEnvironment({ queueUrl: 'q', dlqUrl: 'd' }),
    { OPERLESS_QUEUE_URL: 'q', OPERLESS_DLQ_URL: 'd', OPERLESS_DELAY_QUEUE_URL: '', OPERLESS_BULK_QUEUE_URL: '', OPERLESS_ORDERING: '' },
    "cleared: no other function's delay or bulk queue, nor the shell's ordering, leaks",
  );
  assert.equal(
    queueEnvironment({ queueUrl: 'q.fifo', dlqUrl: 'd.fifo', ordering: 'per-key' }).OPERLESS_ORDERING,
    'per-key',
    'the loop names the ordering it made the queues for',
  );
  assert.equal(queueEnvironment({ queueUrl: 'q.fifo', dlqUrl: 'd.fifo', delayQueueUrl: 'x' }).OPERLESS_DELAY_QUEUE_URL, 'x');
});
