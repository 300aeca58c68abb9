import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunk, resyncAll, resyncMessages, ResyncError, type BatchEntry } from '../../../../src/core/resync/resync.ts';
import { decodeMessage } from '../../../../src/contract/message.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { MEMCACHED } from '../../../../src/memcached/types.ts';

const objects = (n: number): KubeObject[] =>
  Array.from({ length: n }, (_, i) => ({ apiVersion: MEMCACHED.apiVersion, kind: 'Memcached', metadata: { name: `mc-${i}`, namespace: 'ns', uid: `u${i}` } }));

/** A list that serves `items` in pages of `limit`, with continue tokens. */
function pagedList(items: KubeObject[]) {
  const calls: (string | undefined)[] = [];
  return {
    calls,
    client: {
      async list(_kind: unknown, options?: { limit?: number; continue?: string }) {
        calls.push(options?.continue);
        const start = Number(options?.continue ?? 0);
        const end = start + (options?.limit ?? items.length);
        return { items: items.slice(start, end), resourceVersion: '1', ...(end < items.length ? { continue: String(end) } : {}) };
      },
    } as never,
  };
}

test('resyncMessages: one valid Resync message per object', () => {
  const [m] = resyncMessages(MEMCACHED, objects(1), 'prod', 1000);
  assert.ok(m);
  assert.deepEqual(decodeMessage(JSON.stringify(m)), { ok: true, message: m });
  assert.equal(m.reason, 'Resync');
  assert.equal(m.namespace, 'ns');
  assert.equal(m.uid, 'u0');
});

test('chunk: batches of at most 10', () => {
  assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  assert.deepEqual(
    chunk(Array.from({ length: 23 }, (_, i) => i)).map((b) => b.length),
    [10, 10, 3],
  );
});

test('pages through continue tokens and sends every object in batches of 10', async () => {
  const { client, calls } = pagedList(objects(23));
  const batches: BatchEntry[][] = [];
  const report = await resyncAll({ kinds: [MEMCACHED], client, cluster: 'c', pageSize: 10, send: async (e) => (batches.push([...e]), []) });
  assert.deepEqual(report, { listed: 23, sent: 23, failed: 0, pages: 3, skipped: 0, forbidden: 0 });
  assert.deepEqual(calls, [undefined, '10', '20']);
  assert.ok(batches.every((b) => b.length <= 10));
  const names = batches.flat().map((e) => JSON.parse(e.body).name);
  assert.equal(new Set(names).size, 23);
});

test('entries the queue rejects are retried once; what still fails makes it reject with the counts', async () => {
  const { client } = pagedList(objects(3));
  let attempts = 0;
  const ok = await resyncAll({ kinds: [MEMCACHED], client, cluster: 'c', send: async (e) => (attempts++ === 0 ? [e[0]!.id] : []) });
  assert.equal(ok.sent, 3);
  await assert.rejects(
    resyncAll({ kinds: [MEMCACHED], client: pagedList(objects(3)).client, cluster: 'c', send: async (e) => [e[0]!.id] }),
    (err) => err instanceof ResyncError && err.report.failed === 1 && err.report.sent === 2 && /2 of 3/.test(err.message),
  );
  await assert.rejects(
    resyncAll({
      kinds: [MEMCACHED],
      client: pagedList(objects(3)).client,
      cluster: 'c',
      send: async () => {
        throw new Error('down');
      },
    }),
    (err) => err instanceof ResyncError && err.report.failed === 3,
  );
});

test('an expired continue token restarts the listing once', async () => {
  const items = objects(4);
  let failedOnce = false;
  const client = {
    async list(_kind: unknown, options?: { limit?: number; continue?: string }) {
      if (options?.continue && !failedOnce) {
        failedOnce = true;
        throw Object.assign(new Error('Expired'), { status: 410 });
      }
      const start = Number(options?.continue ?? 0);
      return { items: items.slice(start, start + 2), resourceVersion: '1', ...(start + 2 < 4 ? { continue: String(start + 2) } : {}) };
    },
  } as never;
  const report = await resyncAll({ kinds: [MEMCACHED], client, cluster: 'c', pageSize: 2, send: async () => [] });
  assert.equal(report.listed, 2 + 4, 'the first page is listed again after the restart');
});

test('out of time: rejects saying how far it got', async () => {
  const signal = AbortSignal.abort();
  await assert.rejects(resyncAll({ kinds: [MEMCACHED], client: pagedList(objects(1)).client, cluster: 'c', send: async () => [], signal }), /ran out of time/);
});

test('an object no reconcile message can name is skipped with a warning and counted, the others are sent', async () => {
  const items = [...objects(2), { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'system:node', uid: 'u9' } }];
  const kind = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false };
  const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
  const log = {
    debug() {},
    info() {},
    error() {},
    warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push({ msg, fields }),
    child() {
      return log;
    },
  };
  const sent: string[] = [];
  const report = await resyncAll({
    kinds: [kind],
    client: pagedList(items).client,
    cluster: 'c',
    log: log as never,
    send: async (e) => (sent.push(...e.map((x) => JSON.parse(x.body).name)), []),
  });
  assert.deepEqual(report, { listed: 3, sent: 2, failed: 0, pages: 1, skipped: 1, forbidden: 0 });
  assert.deepEqual(sent, ['mc-0', 'mc-1']);
  assert.equal(warnings.length, 1);
  assert.match(String(warnings[0]!.fields?.key), /system:node/);
});

test('a namespace the API server refuses (403) is logged with its namespace and counted; the namespaces after it are still resynced, then it rejects naming it', async () => {
  const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
  const log = {
    debug() {},
    info() {},
    error() {},
    warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push({ msg, fields }),
    child() {
      return log;
    },
  };
  const listedIn: (string | undefined)[] = [];
  const client = {
    async list(_kind: unknown, options?: { namespace?: string }) {
      listedIn.push(options?.namespace);
      if (options?.namespace === 'team-b') throw Object.assign(new Error('memcacheds is forbidden'), { status: 403 });
      return {
        items: [
          { apiVersion: MEMCACHED.apiVersion, kind: 'Memcached', metadata: { name: 'mc', namespace: options?.namespace, uid: `u-${options?.namespace}` } },
        ],
        resourceVersion: '1',
      };
    },
  } as never;
  const sent: string[] = [];
  await assert.rejects(
    resyncAll({
      kinds: [MEMCACHED],
      client,
      cluster: 'c',
      namespaces: ['team-a', 'team-b', 'team-c'],
      log: log as never,
      send: async (e) => (sent.push(...e.map((x) => JSON.parse(x.body).namespace)), []),
    }),
    (err) => err instanceof ResyncError && err.report.forbidden === 1 && err.report.sent === 2 && /Memcached in namespace team-b \(403/.test(err.message),
  );
  assert.deepEqual(listedIn, ['team-a', 'team-b', 'team-c']);
  assert.deepEqual(sent, ['team-a', 'team-c'], 'the namespace after the forbidden one is resynced');
  assert.deepEqual(
    warnings.map((w) => [w.fields?.kind, w.fields?.namespace]),
    [['Memcached', 'team-b']],
  );
});
