import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createKubeClient } from '../../../src/kube/client.ts';
import type { KubeRequest, KubeTransport } from '../../../src/kube/transport.ts';
import { readFloor } from '../../../src/core/reconciler.ts';
import { REASONS } from '../../../src/contract/message.ts';

const CM = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true } as const;

function recording(): { transport: KubeTransport; requests: KubeRequest[] } {
  const requests: KubeRequest[] = [];
  const transport: KubeTransport = {
    server: 'https://api',
    request: async (req) => {
      requests.push(req);
      return { status: 200, body: req.path.endsWith('configmaps') ? { items: [], metadata: { resourceVersion: '9' } } : { metadata: { name: 'a' } } };
    },
    watch: async () => { throw new Error('no watch here'); },
    close: async () => {},
  };
  return { transport, requests };
}

test('a read is live (no resourceVersion) unless it names a floor or its client is bound to one', async () => {
  const { transport, requests } = recording();
  const client = createKubeClient(transport, { fieldManager: 'm' });
  await client.get(CM, 'a', 'ns');
  await client.list(CM, { namespace: 'ns', labelSelector: 'x=y' });
  assert.equal(requests[0]!.query, undefined);
  assert.deepEqual(requests[1]!.query, { labelSelector: 'x=y', limit: undefined, continue: undefined });

  await client.get(CM, 'a', 'ns', { notOlderThan: '42' });
  await client.list(CM, { namespace: 'ns', notOlderThan: '42' });
  assert.deepEqual(requests[2]!.query, { resourceVersion: '42' }, 'GET with resourceVersion: not older than, from the watch cache');
  assert.equal(requests[3]!.query?.resourceVersion, '42');
  assert.equal(requests[3]!.query?.resourceVersionMatch, 'NotOlderThan');
});

test('a bound client reads every get and first list page not older than its floor; live: true and continued pages read without it', async () => {
  const { transport, requests } = recording();
  const bound = createKubeClient(transport, { fieldManager: 'm' }).with({ readsNotOlderThan: '7' }).with({ fieldManager: 'other' });
  await bound.get(CM, 'a', 'ns');
  await bound.list(CM, { namespace: 'ns' });
  await bound.get(CM, 'a', 'ns', { live: true });
  await bound.list(CM, { namespace: 'ns', live: true });
  await bound.list(CM, { namespace: 'ns', continue: 'tok' });
  await bound.get(CM, 'a', 'ns', { notOlderThan: '8' });
  assert.deepEqual(requests[0]!.query, { resourceVersion: '7' }, 'the floor survives with()');
  assert.equal(requests[1]!.query?.resourceVersionMatch, 'NotOlderThan');
  assert.equal(requests[2]!.query, undefined, 'live: a quorum read');
  assert.equal(requests[3]!.query?.resourceVersion, undefined);
  assert.equal(requests[4]!.query?.resourceVersion, undefined, 'a continued page is read at its first page\'s revision');
  assert.deepEqual(requests[5]!.query, { resourceVersion: '8' }, 'a read\'s own floor wins');
  const writes = createKubeClient(transport, { fieldManager: 'm', readsNotOlderThan: '7' });
  await writes.mergePatch(CM, 'a', 'ns', { metadata: { labels: { a: 'b' } } });
  assert.equal(requests[6]!.query, undefined, 'writes never carry the floor');
});

test('readFloor: the event\'s resourceVersion for a message of one watch event; live for follow-ups, resyncs and merged messages', () => {
  const rv = '123';
  const floors = Object.fromEntries(REASONS.map((reason) => [reason, readFloor({ reason, resourceVersion: rv })]));
  assert.deepEqual(floors, { Added: rv, Modified: rv, Deleted: rv, Owned: rv, Related: rv, Resync: undefined, Requeue: undefined, Retry: undefined });
  assert.equal(readFloor({ reason: 'Modified' }), undefined, 'a merged message names no one event');
  assert.equal(readFloor({ reason: 'Owned', resourceVersion: '' }), undefined);
});
