/**
 * The bulk lane (docs/forwarder.md, "Live changes before the backlog"): the routes and the lanes — a resync's `Resync`s and a relist's
 * changes go to the kind's bulk queue, watch events to its queue, and a live change covers the
 * key's pending resync in the bulk lane.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_PRIMARY_TRIGGERS, parseConfig } from '../../../src/forwarder/config/config.ts';
import { queueRoutes } from '../../../src/forwarder/sink/queues.ts';
import { Lanes } from '../../../src/forwarder/sink/lanes.ts';
import { Intake } from '../../../src/forwarder/intake.ts';
import { createForwarderMetrics } from '../../../src/forwarder/metrics.ts';
import type { ResolvedWatch } from '../../../src/forwarder/source/watches.ts';
import { snapshotOf } from '../../../src/forwarder/source/snapshot.ts';
import { decodeMessage } from '../../../src/contract/message.ts';
import type { QueuePort } from '../../../src/queue/port.ts';
import { silentLogger } from '../../../src/observability/log.ts';

const WORK = 'https://sqs.eu-west-1.amazonaws.com/123456789012/work';
const BULK = 'https://sqs.eu-west-1.amazonaws.com/123456789012/work-bulk';
const OTHER = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenant';
const memcached = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
const tenant = { apiVersion: 'tenancy.example.com/v1alpha1', kind: 'Tenant', plural: 'tenants', namespaced: false };

const resolved = (w: typeof memcached, queueUrl: string, bulkQueueUrl?: string): ResolvedWatch => ({
  ...w,
  role: 'primary',
  group: w.apiVersion.split('/')[0]!,
  namespaces: [],
  triggers: DEFAULT_PRIMARY_TRIGGERS,
  objectFields: [],
  queueUrl,
  ...(bulkQueueUrl ? { bulkQueueUrl } : {}),
});

test('routes: a lane per bulk queue too; backlog traffic of a kind without one goes to its queue', () => {
  const routes = queueRoutes(WORK, [resolved(memcached, WORK, BULK), resolved(tenant, OTHER)]);
  assert.deepEqual(routes.urls, [WORK, OTHER, BULK]);
  assert.equal(routes.queueFor(memcached), WORK);
  assert.equal(routes.bulkQueueFor({ ...memcached, apiVersion: 'cache.example.com/v1beta1' }), BULK, 'any version');
  assert.equal(routes.bulkQueueFor(tenant), OTHER);
  assert.equal(routes.bulkQueueFor({ apiVersion: 'x/v1', kind: 'Unknown' }), WORK);
});

/** A queue port that records every body it accepted. */
function recordingPort(into: string[]): QueuePort {
  return {
    async sendBatch(entries) {
      for (const e of entries) into.push(e.body);
      return { failed: [] };
    },
    async probe() {},
  };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}

test("lanes: a resync's Resyncs and a relist's changes go to the bulk queue, watch events to the live queue, and a live change covers the key's pending Resync", async () => {
  const sent = new Map<string, string[]>([
    [WORK, []],
    [BULK, []],
  ]);
  const watch = resolved(memcached, WORK, BULK);
  const routes = queueRoutes(WORK, [watch]);
  const config = parseConfig({ clusterId: 'k', queue: { url: WORK, bulkUrl: BULK }, primaries: [memcached], coalesceWindowMs: 0 });
  const metrics = createForwarderMetrics();
  const lanes = new Lanes({
    routes,
    labels: new Map([
      [WORK, 'work'],
      [BULK, 'work-bulk'],
    ]),
    portFor: (url) => recordingPort(sent.get(url)!),
    config,
    metrics,
    log: silentLogger,
    now: Date.now,
    onOverflowDrained: () => {},
  });
  const intake = new Intake({ clusterId: 'k', lanes, watches: () => [watch], isLeading: () => true, metrics, log: silentLogger, now: Date.now });
  const object = (i: number, rv = '1') =>
    snapshotOf({ metadata: { uid: `u${i}`, name: `m${i}`, namespace: 'ns', resourceVersion: rv, generation: Number(rv) } }, [])!;
  const listed = Array.from({ length: 300 }, (_, i) => object(i));
  // The live change arrives before the senders run: it covers m7's Resync.
  intake.list(watch, { listed, changes: [], resync: true, first: false } as never, 's');
  intake.change(watch, { type: 'MODIFIED', current: object(7, '2'), previous: object(7) } as never, 's');
  lanes.setActive(true);
  await until(() => lanes.pending() === 0);
  const names = (url: string) =>
    sent.get(url)!.map((b) => {
      const d = decodeMessage(b);
      assert.ok(d.ok);
      return `${d.message.reason} ${d.message.name}`;
    });
  assert.deepEqual(names(WORK), ['Modified m7'], 'only the live change goes to the live queue');
  const bulk = names(BULK);
  assert.equal(bulk.length, 299, 'every other object once, as Resync, on the bulk queue');
  assert.ok(bulk.every((n) => n.startsWith('Resync ')) && !bulk.includes('Resync m7'));

  // A relist that is not a resync (after 410 Gone): what it found changed is backlog traffic.
  sent.get(WORK)!.length = 0;
  sent.get(BULK)!.length = 0;
  intake.list(
    watch,
    {
      listed: [object(1, '3'), ...listed.slice(2)],
      changes: [{ type: 'MODIFIED', current: object(1, '3'), previous: object(1) }],
      resync: false,
      first: false,
    } as never,
    's',
  );
  await until(() => lanes.pending() === 0);
  assert.deepEqual(names(BULK), ['Modified m1']);
  assert.deepEqual(names(WORK), []);
  await lanes.stop();
  lanes.stopTimers();
});
