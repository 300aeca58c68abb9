/**
 * Fault cases of the queue's contents, with the real pieces (harness.ts): duplicated,
 * reordered and stale messages (old resourceVersion, old uid of a since-recreated object)
 * injected straight into the work queue; poison messages of every kind, each landing in the
 * DLQ unchanged with its `operless.reason` while a normal workload goes on undisturbed; and
 * the same key reconciled by two function invocations at once (two runner processes on one
 * queue, duplicated messages, the hot objects resized while their duplicates run) — and what
 * happened on the way there: no Deployment was ever applied from an older generation of its
 * Memcached than before, and no Deployment's replicas ever went back (the child-apply guard,
 * src/kube/owned.ts).
 *
 * Every case runs in both orderings (`CASE_ORDERINGS`); per-key with fewer objects by default
 * (the FIFO layout changes how messages are consumed, not how the pipeline copes with load).
 * Per-key, the two-runners case turns around: the same duplicates, two runner processes, and
 * no two reconciles of one key ever overlap in time (the FIFO group of the object key), while
 * both processes did reconcile the hot keys.
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { encodeMessage, newMessage, type Reason } from '../../src/contract/message.ts';
import { MEMCACHED } from '../../src/memcached/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { appliedOwnerGeneration } from '../../src/kube/owned.ts';
import { ORDERINGS, type Ordering } from '../../src/contract/ordering.ts';
import {
  CASE_ORDERINGS,
  CLUSTER,
  FaultEnv,
  MemcachedWorkload,
  assertNothingLost,
  caseLine,
  named,
  objectsPerCase,
  overlappingReconciles,
  range,
  startMemcachedCase,
  titled,
  until,
  untilConverged,
} from './harness.ts';

let env: FaultEnv;

before(async () => {
  env = await FaultEnv.start({ orderings: ORDERINGS });
  env.startSimulator();
});
afterEach(async () => {
  await env?.stopProcesses();
});
after(async () => {
  await env?.stop();
});

async function live(workload: MemcachedWorkload, i: number): Promise<KubeObject> {
  const obj = await env.admin.get(MEMCACHED, MemcachedWorkload.objectName(i), workload.namespace);
  assert.ok(obj, `${MemcachedWorkload.objectName(i)} exists`);
  return obj;
}

function messageFor(namespace: string, name: string, uid: string | undefined, reason: Reason, resourceVersion: string, attempt = 0): string {
  const message = newMessage(
    { cluster: CLUSTER, apiVersion: MEMCACHED.apiVersion, kind: MEMCACHED.kind, namespace, name, ...(uid ? { uid } : {}), resourceVersion },
    reason,
    Date.now() - 60_000,
  );
  return encodeMessage({ ...message, attempt });
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

for (const ordering of CASE_ORDERINGS) {
  test(
    titled('duplicated, reordered and stale messages (old resourceVersion, old uid of a recreated object): converge, no DLQ, no loop', ordering),
    async (t) => {
      const n = objectsPerCase(ordering === 'per-key' ? 40 : 200);
      const started = Date.now();
      const sent = env.proxy.total();
      const { workload } = await startMemcachedCase(env, 'dup', ordering);
      await workload.create(0, n);
      await untilConverged(workload);

      // Recreate five objects under the same names: messages naming the old uid are stale.
      const recreated = range(0, 5);
      const oldUids = new Map<number, string>();
      for (const i of recreated) oldUids.set(i, String((await live(workload, i)).metadata.uid));
      for (const i of recreated) await env.admin.delete(MEMCACHED, MemcachedWorkload.objectName(i), workload.namespace);
      await until(
        'the deleted objects are gone (finalizer run)',
        async () => {
          const left = await Promise.all(recreated.map((i) => env.admin.get(MEMCACHED, MemcachedWorkload.objectName(i), workload.namespace)));
          return left.every((o) => o === undefined);
        },
        60_000,
      );
      for (const i of recreated) workload.expected.delete(MemcachedWorkload.objectName(i));
      await workload.create(0, 5);
      await workload.resize(recreated, () => 2);

      // Inject: every object 4 times with mixed reasons, a stale resourceVersion and a high
      // attempt on one copy, and the old uid for each recreated object, all shuffled.
      const bodies: string[] = [];
      for (const i of range(0, n)) {
        const obj = await live(workload, i);
        for (const reason of ['Modified', 'Resync', 'Owned', 'Modified'] as const) {
          bodies.push(messageFor(workload.namespace, obj.metadata.name, obj.metadata.uid, reason, '1', reason === 'Owned' ? 3 : 0));
        }
      }
      for (const [i, uid] of oldUids)
        bodies.push(...Array.from({ length: 3 }, () => messageFor(workload.namespace, MemcachedWorkload.objectName(i), uid, 'Modified', '1')));
      shuffle(bodies);
      // Meanwhile, real changes to a third of the objects.
      await Promise.all([
        env.inject(bodies, ordering),
        workload.resize(
          range(5, n).filter((i) => i % 3 === 0),
          () => 2,
        ),
      ]);

      const result = await assertNothingLost(env, workload, { timeoutMs: 180_000, ordering });
      const staleSkipped = env.reconciles.filter(
        (r) => r.gone && recreated.some((i) => r.key === `Memcached/${workload.namespace}/${MemcachedWorkload.objectName(i)}`),
      ).length;
      t.diagnostic(
        caseLine(
          titled('duplicated/reordered/stale messages', ordering),
          started,
          sent,
          env,
          result,
          `${n} objects, ${bodies.length} injected, ${staleSkipped} stale-uid reconciles skipped`,
        ),
      );
      assert.equal(result.converged, n);
    },
  );
}

for (const ordering of CASE_ORDERINGS) {
  test(titled('poison messages of every kind land in the DLQ unchanged with their reason; the workload beside them is undisturbed', ordering), async (t) => {
    // The case is about single messages: a small workload beside them is enough.
    const n = Math.min(objectsPerCase(), 30);
    const started = Date.now();
    const sent = env.proxy.total();
    const { workload } = await startMemcachedCase(env, 'poison', ordering);

    const valid = JSON.parse(messageFor(workload.namespace, 'mc-000', undefined, 'Modified', '1')) as Record<string, unknown>;
    const { name: _dropped, ...missingName } = valid;
    const poison: Record<string, string> = {
      'not JSON': 'reconcile mc-000 please',
      'wrong version': JSON.stringify({ ...valid, v: 2 }),
      'missing fields': JSON.stringify(missingName),
      'wrong field type': JSON.stringify({ ...valid, attempt: 'three' }),
      'body > 4 KiB': JSON.stringify({ ...valid, padding: 'x'.repeat(5000) }),
      'unknown kind': messageFor(workload.namespace, 'x', undefined, 'Modified', '1').replace('"kind":"Memcached"', '"kind":"Memcache"'),
      'unknown cluster': messageFor(workload.namespace, 'mc-000', undefined, 'Modified', '1').replace(`"cluster":"${CLUSTER}"`, '"cluster":"elsewhere"'),
    };
    const expectedReason: Record<string, string> = {
      'not JSON': 'InvalidMessage',
      'wrong version': 'InvalidMessage',
      'missing fields': 'InvalidMessage',
      'wrong field type': 'InvalidMessage',
      'body > 4 KiB': 'InvalidMessage',
      'unknown kind': 'UnknownKind',
      'unknown cluster': 'UnknownCluster',
    };
    const creating = workload.create(0, n);
    await env.inject(Object.values(poison), ordering);
    // Bodies past SQS's old 256 KiB and current 1 MiB limits: the queue refuses them at the
    // door (MessageTooLong), or, where it accepts one, it must go to the DLQ like any other.
    const refused: string[] = [];
    for (const [label, kib] of [
      ['body > 256 KiB', 300],
      ['body > 1 MiB', 1100],
    ] as const) {
      const body = JSON.stringify({ ...valid, padding: 'y'.repeat(kib * 1024) });
      try {
        await env.sqs.send(new SendMessageCommand(env.sendInput(body, ordering)));
        poison[label] = body;
        expectedReason[label] = 'InvalidMessage';
      } catch (err) {
        assert.match(`${(err as Error).name} ${(err as Error).message}`, /too ?long|size|exceed|limit/i, `${label}: the queue refused it with a size error`);
        refused.push(label);
      }
    }
    await creating;
    await workload.resize(
      range(0, n).filter((i) => i % 2 === 0),
      () => 2,
    );
    const counts: Record<string, number> = {};
    for (const reason of Object.values(expectedReason)) counts[reason] = (counts[reason] ?? 0) + 1;
    const result = await assertNothingLost(env, workload, { timeoutMs: 180_000, dlq: counts, ordering });
    for (const [kind, body] of Object.entries(poison)) {
      const letter = result.deadLetters.find((d) => d.body === body);
      assert.ok(letter, `${kind}: the original body is in the DLQ, unchanged`);
      assert.equal(letter.reason, expectedReason[kind], `${kind}: operless.reason`);
    }
    t.diagnostic(
      caseLine(
        titled('poison messages', ordering),
        started,
        sent,
        env,
        result,
        `${n} objects, ${Object.keys(poison).length} poison messages → DLQ${refused.length > 0 ? `; refused by the queue itself: ${refused.join(', ')}` : ''}`,
      ),
    );
    assert.equal(result.converged, n);
  });
}

/** Each Deployment's states as a watch sees them, in order: the owner generation it was applied from, and its replicas. */
interface DeploymentHistory {
  readonly states: Map<string, { ownerGeneration: number | undefined; replicas: number | undefined }[]>;
  stop(): Promise<void>;
}

async function watchDeployments(namespace: string): Promise<DeploymentHistory> {
  const states: DeploymentHistory['states'] = new Map();
  const abort = new AbortController();
  const { ended } = await env.admin.transport.watch({ path: `/apis/apps/v1/namespaces/${namespace}/deployments`, signal: abort.signal }, (event) => {
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return;
    const deployment = event.object as unknown as KubeObject & { spec?: { replicas?: number } };
    const list = states.get(deployment.metadata.name) ?? [];
    list.push({ ownerGeneration: appliedOwnerGeneration(deployment), replicas: deployment.spec?.replicas });
    states.set(deployment.metadata.name, list);
  });
  return {
    states,
    stop: async () => {
      abort.abort();
      await ended.catch(() => {});
    },
  };
}

/** Where a Deployment went back: an owner generation or a replica count lower than one seen before (sizes only grow in the case). */
function stepsBack(history: DeploymentHistory['states']): string[] {
  const back: string[] = [];
  for (const [name, states] of history) {
    let generation = -1;
    let replicas = -1;
    states.forEach((s, i) => {
      if (s.ownerGeneration !== undefined && s.ownerGeneration < generation)
        back.push(`${name} #${i}: applied from generation ${s.ownerGeneration} after ${generation}`);
      if (s.replicas !== undefined && s.replicas < replicas) back.push(`${name} #${i}: replicas ${s.replicas} after ${replicas}`);
      generation = Math.max(generation, s.ownerGeneration ?? -1);
      replicas = Math.max(replicas, s.replicas ?? -1);
    });
  }
  return back;
}

/** The two-runners case's title: per-key, the same load with the opposite expectation. */
const TWICE = {
  unordered:
    'the same key reconciled by two function invocations at once (two runners, duplicated messages, resized meanwhile): converge, no DLQ, no Deployment ever goes back',
  'per-key':
    "the same key's duplicated messages consumed by two runners, resized meanwhile: its reconciles never overlap in time (FIFO group = key); converge, no DLQ, no Deployment ever goes back",
} as const satisfies Record<Ordering, string>;

for (const ordering of CASE_ORDERINGS) {
  test(titled(TWICE[ordering], ordering), async (t) => {
    // The case is about one key run twice at once (10 hot keys, 8 copies each), not load.
    const n = Math.min(objectsPerCase(), 30);
    const started = Date.now();
    const sent = env.proxy.total();
    const workload = new MemcachedWorkload(env, named('twice', ordering));
    const forwarder = await env.startForwarder(named('fwd-twice', ordering), { ordering, namespaces: [workload.namespace] });
    await forwarder.probes();
    await workload.createNamespace();
    const deployments = await watchDeployments(workload.namespace);
    await workload.create(0, n);
    // Batches of one record, so duplicates are not merged within a batch but run side by side.
    const runners = [named('fn-twice-a', ordering), named('fn-twice-b', ordering)];
    for (const name of runners) await env.startFunction(name, { ordering, batchSize: 1, batchWindowSeconds: 0, maxConcurrency: 3 });
    const hot = range(0, 10);
    await workload.resize(hot, () => 3);
    const bodies: string[] = [];
    for (const i of hot) {
      const obj = await live(workload, i);
      for (let c = 0; c < 8; c++)
        bodies.push(messageFor(workload.namespace, obj.metadata.name, obj.metadata.uid, 'Modified', String(obj.metadata.resourceVersion)));
    }
    await env.inject(bodies, ordering);
    // A newer generation while the duplicates of the older one still run: a slower reconcile of
    // the older one must not apply its Deployment over the newer one's.
    await workload.resize(hot, () => 4);
    await env.inject(bodies, ordering);
    const result = await assertNothingLost(env, workload, { timeoutMs: 180_000, ordering });
    await deployments.stop();
    const ofCase = env.reconciles.filter((r) => r.key.includes(`/${workload.namespace}/`));
    const applies = [...deployments.states.values()].reduce((sum, states) => sum + states.length, 0);
    // Unordered: duplicates of a key run side by side in the two processes. Per-key: never two
    // reconciles of a key at once, in one process or two — though both processes took the hot
    // keys' messages (so the check is not vacuous).
    const overlapping = overlappingReconciles(ofCase, { acrossProcesses: ordering === 'unordered' });
    const hotKeys = hot.map((i) => `Memcached/${workload.namespace}/${MemcachedWorkload.objectName(i)}`);
    const byBoth = hotKeys.filter((key) => runners.every((name) => ofCase.some((r) => r.key === key && r.process === name)));
    t.diagnostic(
      caseLine(
        ordering === 'unordered' ? 'same key in two invocations at once' : 'same key in two runners [per-key]',
        started,
        sent,
        env,
        result,
        `${n} objects, ${overlapping.length} overlapping reconciles of one key${ordering === 'unordered' ? ' in two processes' : ''}, ${byBoth.length} of 10 hot keys reconciled by both processes, ${applies} Deployment states watched`,
      ),
    );
    if (ordering === 'unordered') {
      assert.ok(overlapping.length > 0, 'some key was reconciled by both runner processes at the same time');
    } else {
      assert.ok(byBoth.length > 0, 'some hot key was reconciled by both runner processes');
      assert.deepEqual(overlapping, [], 'no two reconciles of one key overlapped in time');
    }
    assert.equal(result.converged, n);
    assert.deepEqual(stepsBack(deployments.states), [], 'no Deployment was applied from an older generation, or with fewer replicas, than before');
  });
}
