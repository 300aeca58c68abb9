import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_OWNED_TRIGGERS, DEFAULT_PRIMARY_TRIGGERS } from '../../../src/forwarder/config/config.ts';
import { queueLabels, queueName, queueRoutes } from '../../../src/forwarder/sink/queues.ts';
import { route } from '../../../src/forwarder/route/router.ts';
import type { ResolvedWatch } from '../../../src/forwarder/source/watches.ts';
import { snapshotOf } from '../../../src/forwarder/source/snapshot.ts';
import { Sender } from '../../../src/forwarder/sink/sender.ts';
import { createForwarderMetrics } from '../../../src/forwarder/metrics.ts';
import type { QueuePort } from '../../../src/queue/port.ts';
import { decodeMessage, newMessage } from '../../../src/contract/message.ts';
import { silentLogger } from '../../../src/observability/log.ts';

const A = 'https://sqs.eu-west-1.amazonaws.com/123456789012/memcached';
const B = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenant';
const memcached = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
const tenant = { apiVersion: 'tenancy.example.com/v1alpha1', kind: 'Tenant', plural: 'tenants', namespaced: false };

const resolved = (w: typeof memcached, role: 'primary' | 'owned', queueUrl?: string): ResolvedWatch => ({
  ...w,
  role,
  group: w.apiVersion.includes('/') ? w.apiVersion.split('/')[0]! : '',
  namespaces: [],
  triggers: role === 'primary' ? DEFAULT_PRIMARY_TRIGGERS : DEFAULT_OWNED_TRIGGERS,
  objectFields: [],
  ...(queueUrl ? { queueUrl } : {}),
});

test("routing: each primary's messages go to its queue; an owned object's go to its owner's queue", () => {
  const primaries = [resolved(memcached, 'primary', A), resolved(tenant, 'primary', B)];
  const namespaces = resolved({ apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false }, 'owned');
  const deployments = resolved({ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }, 'owned');
  const routes = queueRoutes(A, primaries);
  assert.deepEqual(routes.urls, [A, B]);

  const ns = snapshotOf({
    metadata: {
      uid: 'n1',
      name: 'team-a',
      resourceVersion: '3',
      ownerReferences: [{ apiVersion: 'tenancy.example.com/v1alpha1', kind: 'Tenant', name: 'team-a', uid: 't1', controller: true }],
    },
  })!;
  const [nsOwner] = route('c', namespaces, { type: 'ADDED', current: ns }, primaries);
  assert.equal(nsOwner?.ref.kind, 'Tenant');
  assert.equal(routes.queueFor(nsOwner!.ref), B, 'a Namespace owned by a Tenant goes to the Tenant queue');

  const dep = snapshotOf({
    metadata: {
      uid: 'd1',
      name: 'mc',
      namespace: 'ns',
      resourceVersion: '4',
      ownerReferences: [{ apiVersion: 'cache.example.com/v1beta1', kind: 'Memcached', name: 'mc', uid: 'm1', controller: true }],
    },
  })!;
  const [depOwner] = route('c', deployments, { type: 'MODIFIED', current: dep }, primaries);
  assert.equal(routes.queueFor(depOwner!.ref), A, 'a Deployment owned by a Memcached goes to the Memcached queue');

  const [self] = route(
    'c',
    primaries[1]!,
    { type: 'ADDED', current: snapshotOf({ metadata: { uid: 't1', name: 'team-a', resourceVersion: '2' } })! },
    primaries,
  );
  assert.equal(routes.queueFor(self!.ref), B);
  assert.equal(routes.queueFor({ apiVersion: 'cache.example.com/v1', kind: 'Memcached' }), A, 'any version of the group');
  assert.equal(routes.queueFor({ apiVersion: 'x.example.com/v1', kind: 'Unknown' }), A, 'an unknown kind falls back to the default queue');
});

test('routing: the default queue is listed only when some primary uses it', () => {
  assert.deepEqual(queueRoutes('https://q/1/default', [resolved(memcached, 'primary', A), resolved(tenant, 'primary', B)]).urls, [A, B]);
  assert.deepEqual(queueRoutes(A, [resolved(memcached, 'primary'), resolved(tenant, 'primary', B)]).urls, [A, B]);
  assert.deepEqual(queueRoutes(A, []).urls, [A]);
});

test('queue labels: the queue name; two queues sharing a name get <name>#<digest of the URL>, distinct and without the URL', () => {
  assert.equal(queueName('http://127.0.0.1:9324/000000000000/work/'), 'work');
  const other = 'https://sqs.us-east-1.amazonaws.com/999999999999/tenant';
  const labels = queueLabels([A, B, other]);
  assert.equal(labels.get(A), 'memcached');
  assert.match(labels.get(B)!, /^tenant#[0-9a-f]{8}$/);
  assert.match(labels.get(other)!, /^tenant#[0-9a-f]{8}$/);
  assert.notEqual(labels.get(B), labels.get(other));
  for (const label of labels.values()) assert.doesNotMatch(label, /\d{12}|amazonaws|https?:/, 'no account id, endpoint or URL in a label');
  assert.equal(queueLabels([other, B]).get(other), labels.get(other), 'the same URL always gets the same label');
});

test("per-queue senders: one queue's outage leaves the other's messages flowing; metrics say which queue", async () => {
  const metrics = createForwarderMetrics();
  const delivered: string[] = [];
  let calls = 0;
  const down: QueuePort = {
    async sendBatch() {
      calls += 1;
      throw new Error('connect ECONNREFUSED');
    },
    async probe() {
      throw new Error('connect ECONNREFUSED');
    },
  };
  const up: QueuePort = {
    async sendBatch(entries) {
      for (const e of entries) delivered.push((decodeMessage(e.body) as { ok: true; message: { name: string } }).message.name);
      return { failed: [] };
    },
    async probe() {},
  };
  const make = (queue: QueuePort, queueLabel: string) =>
    new Sender({
      queue,
      queueLabel,
      maxMessages: 100,
      maxBatchBytes: 1 << 20,
      maxSenderFaultRetries: 2,
      backoffInitialMs: 5,
      backoffMaxMs: 20,
      metrics,
      log: silentLogger,
    });
  const a = make(down, 'memcached');
  const b = make(up, 'tenant');
  a.setActive(true);
  b.setActive(true);
  const msg = (kind: string, name: string) => newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind, name }, 'Added', 1);
  a.enqueue([msg('Memcached', 'm1'), msg('Memcached', 'm2')]);
  b.enqueue([msg('Tenant', 't1'), msg('Tenant', 't2')]);
  assert.equal(await b.flush(Date.now() + 5000), 0);
  assert.deepEqual(delivered, ['t1', 't2']);
  for (let i = 0; i < 200 && calls < 2; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(a.depth, 2, 'the unreachable queue keeps its messages buffered');
  assert.equal(a.reachable, false);
  assert.equal(b.reachable, true);
  const text = await metrics.registry.metrics();
  assert.match(text, /operless_forwarder_messages_sent_total\{reason="Added",queue="tenant"\} 2/);
  assert.match(text, /operless_forwarder_queue_reachable\{queue="memcached"\} 0/);
  assert.match(text, /operless_forwarder_queue_reachable\{queue="tenant"\} 1/);
  assert.match(text, /operless_forwarder_send_errors_total\{kind="request",queue="memcached"\} [1-9]/);
  assert.equal((await a.stop()).length, 2, 'stop hands back what was never sent');
  await b.stop();
});
