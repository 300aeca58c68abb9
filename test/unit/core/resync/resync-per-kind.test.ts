/**
 * createPerKindResyncHandler: each kind's objects go to its own queue; a kind that cannot be
 * resynced does not stop the others, and the invocation rejects naming it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { KindRef, KubeObject } from '../../../../src/kube/types.ts';
import { createPerKindResyncHandler } from '../../../../src/core/resync/resync.ts';

const A: KindRef = { apiVersion: 'a.example.com/v1', kind: 'Alpha', plural: 'alphas', namespaced: true };
const B: KindRef = { apiVersion: 'b.example.com/v1', kind: 'Beta', plural: 'betas', namespaced: false };

function fakes(objects: Record<string, string[]>) {
  const sent: { queueUrl: string; names: string[] }[] = [];
  const sqs = {
    send: async (command: { input: { QueueUrl: string; Entries: { Id: string; MessageBody: string }[] } }) => {
      sent.push({ queueUrl: command.input.QueueUrl, names: command.input.Entries.map((e) => (JSON.parse(e.MessageBody) as { name: string }).name) });
      return { Successful: command.input.Entries.map((e) => ({ Id: e.Id })), Failed: [] };
    },
  } as unknown as SQSClient;
  const clientFor = async () => ({
    list: async (kind: KindRef) => ({
      items: (objects[kind.kind] ?? []).map(
        (name): KubeObject => ({ apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name, namespace: kind.namespaced ? 'ns' : undefined, uid: name } }),
      ),
      metadata: {},
    }),
  });
  return { sent, sqs, clientFor };
}

test('each kind goes to the queue named by its variable, with a report per kind', async () => {
  const { sent, sqs, clientFor } = fakes({ Alpha: ['a1', 'a2'], Beta: ['b1'] });
  const handler = createPerKindResyncHandler({
    targets: [
      { kind: A, queueUrlVariable: 'ALPHA_QUEUE_URL' },
      { kind: B, queueUrlVariable: 'BETA_QUEUE_URL' },
    ],
    env: { OPERLESS_CLUSTER: 'c1', ALPHA_QUEUE_URL: 'https://sqs/1/alpha', BETA_QUEUE_URL: 'https://sqs/1/beta' },
    clientFor: clientFor as never,
    sqs,
  });
  const reports = await handler({});
  assert.deepEqual(Object.keys(reports).sort(), ['Alpha', 'Beta']);
  assert.equal(reports.Alpha?.sent, 2);
  assert.equal(reports.Beta?.sent, 1);
  assert.deepEqual(sent.find((s) => s.queueUrl.endsWith('/alpha'))?.names.sort(), ['a1', 'a2']);
  assert.deepEqual(sent.find((s) => s.queueUrl.endsWith('/beta'))?.names, ['b1']);
});

test('a kind without its queue variable fails the invocation by name; the other kinds are still resynced', async () => {
  const { sent, sqs, clientFor } = fakes({ Alpha: ['a1'], Beta: ['b1'] });
  const handler = createPerKindResyncHandler({
    targets: [
      { kind: A, queueUrlVariable: 'ALPHA_QUEUE_URL' },
      { kind: B, queueUrlVariable: 'BETA_QUEUE_URL' },
    ],
    env: { OPERLESS_CLUSTER: 'c1', ALPHA_QUEUE_URL: 'https://sqs/1/alpha' },
    clientFor: clientFor as never,
    sqs,
  });
  await assert.rejects(handler({}), (err: Error) => {
    assert.match(err.message, /resync did not finish for Beta \(queue URL from BETA_QUEUE_URL\)/);
    assert.match(err.message, /OPERLESS_QUEUE_URL/);
    assert.doesNotMatch(err.message, /Alpha/);
    return true;
  });
  assert.deepEqual(
    sent.map((s) => s.names),
    [['a1']],
    'Alpha was resynced anyway',
  );
});

test('namespace-scoped: OPERLESS_NAMESPACES lists a namespaced kind in each namespace (never cluster-wide), a cluster-scoped kind once', async () => {
  const lists: string[] = [];
  const sqs = {
    send: async (command: { input: { Entries: { Id: string }[] } }) => ({ Successful: command.input.Entries.map((e) => ({ Id: e.Id })), Failed: [] }),
  } as unknown as SQSClient;
  const clientFor = async () => ({
    list: async (kind: KindRef, opts: { namespace?: string }) => {
      lists.push(`${kind.kind} ${opts.namespace ?? '(all)'}`);
      return { items: [{ apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: 'x', namespace: opts.namespace, uid: 'u' } }], metadata: {} };
    },
  });
  const handler = createPerKindResyncHandler({
    targets: [
      { kind: A, queueUrlVariable: 'ALPHA_QUEUE_URL' },
      { kind: B, queueUrlVariable: 'BETA_QUEUE_URL' },
    ],
    env: { OPERLESS_CLUSTER: 'c1', OPERLESS_NAMESPACES: 'team-b,team-a', ALPHA_QUEUE_URL: 'https://sqs/1/alpha', BETA_QUEUE_URL: 'https://sqs/1/beta' },
    clientFor: clientFor as never,
    sqs,
  });
  const reports = await handler({});
  assert.deepEqual(lists.sort(), ['Alpha team-a', 'Alpha team-b', 'Beta (all)']);
  assert.equal(reports.Alpha?.sent, 2);
});

test('namespace-scoped: an invalid OPERLESS_NAMESPACES fails the invocation naming the variable', async () => {
  const { sqs, clientFor } = fakes({ Alpha: ['a1'] });
  const handler = createPerKindResyncHandler({
    targets: [{ kind: A, queueUrlVariable: 'ALPHA_QUEUE_URL' }],
    env: { OPERLESS_CLUSTER: 'c1', OPERLESS_NAMESPACES: 'Team_A', ALPHA_QUEUE_URL: 'https://sqs/1/alpha' },
    clientFor: clientFor as never,
    sqs,
  });
  await assert.rejects(handler({}), /OPERLESS_NAMESPACES: every entry must be a namespace name.*"Team_A"/);
});

test('an event naming kinds (one schedule per resync period) resyncs those kinds only', async () => {
  const { sent, sqs, clientFor } = fakes({ Alpha: ['a1'], Beta: ['b1'] });
  const handler = createPerKindResyncHandler({
    targets: [
      { kind: A, queueUrlVariable: 'ALPHA_QUEUE_URL' },
      { kind: B, queueUrlVariable: 'BETA_QUEUE_URL' },
    ],
    env: { OPERLESS_CLUSTER: 'c1', ALPHA_QUEUE_URL: 'https://sqs/1/alpha', BETA_QUEUE_URL: 'https://sqs/1/beta' },
    clientFor: clientFor as never,
    sqs,
  });
  assert.deepEqual(Object.keys(await handler({ kinds: ['Beta'] })), ['Beta']);
  assert.deepEqual(
    sent.map((s) => s.names),
    [['b1']],
  );
  await assert.rejects(handler({ kinds: ['Gamma'] }), /kinds name Gamma, which this resync function does not serve \(it serves Alpha, Beta\)/);
  assert.equal(sent.length, 1, 'nothing sent for a refused event');
});
