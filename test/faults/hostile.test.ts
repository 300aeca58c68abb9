/**
 * Hostile objects beside a real workload, end to end: the shipped forwarder bundle (shipped
 * watches, shipped ServiceAccount), the shipped Memcached function under the local Lambda
 * runner, a real kube-apiserver + etcd + kube-controller-manager (its garbage collector deletes
 * children whose owner does not exist) and ElasticMQ. While valid Memcacheds are created and
 * resized, a tenant writes Deployments and Services whose controller reference names owners no
 * reconcile message can name (`Bad_Name`, 254-character names, 129-character uids), owned-only
 * kinds, unknown versions, the workload's own Memcacheds with uids that are not theirs, and
 * objects with labels and annotations up to the API server's limits; fast-check adds more
 * (seed printed; `OPERLESS_FC_SEED` replays).
 *
 * What must hold: every valid object converges, the queue drains, the DLQ stays empty (nothing
 * hostile reaches a function), the forwarder never exits and stays ready, and every drop is
 * counted with a reason and logged once (WARN).
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEPLOYMENTS, SERVICES } from '../../src/kube/kinds.ts';
import { MEMCACHED } from '../../src/memcached/types.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { replayFromEnv, replayLine } from '../support/fast-check.ts';
import { ORDERINGS } from '../../src/contract/ordering.ts';
import {
  CASE_ORDERINGS,
  FaultEnv,
  MemcachedWorkload,
  assertNothingLost,
  caseLine,
  objectsPerCase,
  range,
  startMemcachedCase,
  titled,
  until,
} from './harness.ts';

const MC_API = MEMCACHED.apiVersion;

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

interface Hostile {
  readonly kind: KindRef;
  readonly metadata: Record<string, unknown>;
}

const controller = (ref: Record<string, unknown>) => ({
  ownerReferences: [{ apiVersion: MC_API, kind: 'Memcached', uid: '33333333-3333-3333-3333-333333333333', controller: true, ...ref }],
});

/** The cases issue 20 names, one object each. */
function edgeCases(workloadNames: readonly string[]): Hostile[] {
  return [
    { kind: DEPLOYMENTS, metadata: { name: 'edge-bad-name', ...controller({ name: 'Bad_Name' }) } },
    { kind: SERVICES, metadata: { name: 'edge-long-name', ...controller({ name: 'a'.repeat(254) }) } },
    { kind: DEPLOYMENTS, metadata: { name: 'edge-long-uid', ...controller({ name: 'edge-owner', uid: 'u'.repeat(129) }) } },
    { kind: SERVICES, metadata: { name: 'edge-huge-owner', ...controller({ name: 'n'.repeat(1_000_000) }) } },
    { kind: SERVICES, metadata: { name: 'edge-owned-owner', ...controller({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'edge-bad-name' }) } },
    { kind: DEPLOYMENTS, metadata: { name: 'edge-other-version', ...controller({ apiVersion: 'cache.example.com/v9', name: workloadNames[0] }) } },
    { kind: DEPLOYMENTS, metadata: { name: 'edge-not-its-uid', ...controller({ name: workloadNames[1] }) } },
    {
      kind: SERVICES,
      metadata: {
        name: 'edge-big-metadata',
        labels: { ['l'.repeat(63)]: 'v'.repeat(63) },
        annotations: { 'hostile.example.com/big': 'b'.repeat(250_000) },
        ...controller({ name: workloadNames[2] }),
      },
    },
    { kind: MEMCACHED, metadata: { name: 'edge-big-primary', annotations: { 'hostile.example.com/big': 'b'.repeat(250_000) } } },
  ];
}

/** Random children: owner references from names a tenant might write, some of them the workload's. */
function randomChildren(workloadNames: readonly string[], seed: number, count: number): Hostile[] {
  const ownerName = fc.oneof(
    { arbitrary: fc.constantFrom(...workloadNames), weight: 3 },
    { arbitrary: fc.constantFrom('Bad_Name', '-a', 'a-', 'a..b', 'UPPER', 'x:y', 'a/b', '日本語', 'a'.repeat(254)), weight: 2 },
    { arbitrary: fc.string({ maxLength: 30 }), weight: 1 },
  );
  const ref = fc.record({
    apiVersion: fc.constantFrom(MC_API, MC_API, 'cache.example.com/v1', 'apps/v1', 'v1'),
    kind: fc.constantFrom('Memcached', 'Memcached', 'Deployment', 'Service', 'memcached'),
    name: ownerName,
    uid: fc.oneof(fc.uuid(), fc.constant('u'.repeat(129)), fc.string({ minLength: 1, maxLength: 20 })),
    controller: fc.option(fc.boolean(), { nil: undefined }),
  });
  const child = fc.record({ service: fc.boolean(), refs: fc.array(ref, { minLength: 1, maxLength: 2 }) });
  return fc.sample(child, { seed, numRuns: count }).map((c, i) => ({
    kind: c.service ? SERVICES : DEPLOYMENTS,
    // the API server refuses two controller references: keep at most the first
    metadata: { name: `fuzz-${i}`, ownerReferences: c.refs.map((r, j) => ({ ...r, controller: j === 0 ? r.controller : false })) },
  }));
}

function body(kind: KindRef, metadata: Record<string, unknown>, namespace: string): KubeObject {
  const meta = { ...metadata, namespace } as KubeObject['metadata'];
  if (kind === MEMCACHED) return { apiVersion: MC_API, kind: 'Memcached', metadata: meta, spec: { size: 1 } } as KubeObject;
  if (kind === SERVICES) return { apiVersion: 'v1', kind: 'Service', metadata: meta, spec: { clusterIP: 'None', ports: [{ port: 11211 }] } } as KubeObject;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta,
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'hostile' } },
      template: { metadata: { labels: { app: 'hostile' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    },
  } as KubeObject;
}

for (const ordering of CASE_ORDERINGS) {
  test(
    titled(
      'hostile children and primaries beside a workload: every valid object converges, nothing reaches the DLQ, the forwarder stays up and counts every drop',
      ordering,
    ),
    async (t) => {
      const n = Math.min(ordering === 'per-key' ? 30 : 60, objectsPerCase());
      const seed = replayFromEnv().seed ?? Math.floor(Math.random() * 0x7fffffff);
      const replay = replayLine(seed, undefined);
      const started = Date.now();
      const sent = env.proxy.total();
      const { workload, forwarder } = await startMemcachedCase(env, 'hostile', ordering);
      const namespace = workload.namespace;
      const names = range(0, n).map((i) => MemcachedWorkload.objectName(i));

      let accepted = 0;
      let refused = 0;
      const write = async (h: Hostile) => {
        try {
          await env.admin.create(h.kind, body(h.kind, h.metadata, namespace));
          accepted++;
        } catch (err) {
          const status = (err as { status?: number }).status ?? 0;
          if (status < 400 || status >= 500) throw err;
          refused++; // the API server refused it: nothing for the forwarder to see
        }
      };
      // Interleaved: a third of the workload, the edge cases, more of it, the random children, the rest with resizes.
      const third = Math.ceil(n / 3);
      await workload.create(0, third);
      for (const h of edgeCases(names)) await write(h);
      await workload.create(third, 2 * third);
      for (const h of randomChildren(names, seed, 30)) await write(h);
      await workload.create(2 * third, n);
      await workload.resize(
        range(0, n).filter((i) => i % 4 === 0),
        () => 2,
      );

      const result = await assertNothingLost(env, workload, { timeoutMs: 240_000, ordering });
      assert.equal(result.converged, n, replay);
      assert.equal(forwarder.child.exitCode, null, `the forwarder never exited (${replay})`);
      assert.equal((await fetch(`${await forwarder.probes()}/readyz`)).status, 200, `the forwarder is ready (${replay})`);
      const dropped = await forwarder.metric('operless_forwarder_events_dropped_total');
      // At least the edge cases' four unnameable owners (Bad_Name, 254 characters, 129-character uid, 1 MB name); their
      // deletion by the garbage collector is dropped again.
      assert.ok(dropped >= 4, `the unnameable owners were dropped and counted (${dropped}; ${replay})`);
      await until(
        'every drop has its WARN line',
        async () =>
          forwarder.lines.filter((l) => l.level === 'warn' && /change dropped/.test(String(l.msg))).length ===
          (await forwarder.metric('operless_forwarder_events_dropped_total')),
        30_000,
      );
      const errors = forwarder.lines.filter((l) => l.level === 'error');
      assert.deepEqual(errors, [], `no ERROR line from the forwarder (${replay})`);
      t.diagnostic(
        caseLine(
          titled('hostile objects beside a workload', ordering),
          started,
          sent,
          env,
          result,
          `${n} objects; ${accepted} hostile objects accepted, ${refused} refused by the API server; ${dropped} changes dropped with a reason; seed ${seed}`,
        ),
      );
      await forwarder.stop();
      await env.stopFunctions();
    },
  );
}
