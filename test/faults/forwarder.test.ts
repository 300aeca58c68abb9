/**
 * Fault cases of the forwarder, with the real pieces (harness.ts): SIGKILL mid-burst then a
 * restart (and the function runner SIGKILLed mid-batch at the same time — both checked after
 * the fact: the burst was still going on, the runner's invocation had not returned, and every
 * record of that invocation was delivered again); two replicas with
 * the leader SIGKILLed; and watch history compacted so the resumed watch gets 410 Gone.
 * Each case: the objects converge to their latest spec, nothing lands in the DLQ, nothing loops.
 * The forwarders run under the shipped ServiceAccount and RBAC, never as admin.
 *
 * The SIGKILL case runs in both orderings: per-key, the killed invocation's records hold their
 * keys' FIFO groups until their visibility timeout runs out and must still all come back. Its
 * burst is paced after the first quarter, so the kill falls inside it however late the
 * runner's next invocation starts.
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { ORDERINGS } from '../../src/contract/ordering.ts';
import {
  CASE_ORDERINGS,
  FaultEnv,
  MemcachedWorkload,
  assertNothingLost,
  caseLine,
  invocationsInHand,
  invocationsStarted,
  named,
  objectsPerCase,
  range,
  retrying,
  shippedWatchGaps,
  sleep,
  startMemcachedCase,
  titled,
  until,
  untilConverged,
} from './harness.ts';

const LEASES: KindRef = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', plural: 'leases', namespaced: true };

/** The pace of the burst after its first quarter, until the kill: one object per this many ms. */
const PACE_MS = 250;

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

for (const ordering of CASE_ORDERINGS) {
  test(titled('forwarder SIGKILLed mid-burst (and the function runner mid-batch), then restarted: nothing is lost', ordering), async (t) => {
    const n = objectsPerCase(ordering === 'per-key' ? 60 : 200);
    const begun = Date.now();
    const sent = env.proxy.total();
    const { workload, fn, forwarder } = await startMemcachedCase(env, 'burst', ordering);

    // The burst: a quarter of the objects at once, then the rest paced one per PACE_MS until
    // both processes are killed, then at once again. The pacing keeps the burst going until the
    // runner's next invocation starts, however late that is: unpaced, per-key's FIFO batches
    // once began only after all 60 objects were created, and the kill missed the burst.
    const quarter = Math.ceil(n / 4);
    let killed = false;
    const creating = (async (): Promise<void> => {
      await workload.create(0, quarter);
      for (let i = quarter; i < n; i++) {
        if (killed) {
          await workload.create(i, n);
          return;
        }
        await workload.create(i, i + 1, 1);
        await sleep(PACE_MS);
      }
    })();
    await until('a quarter of the burst is created', async () => workload.expected.size >= quarter, 120_000);
    // The runner is SIGKILLed in the tick its next invocation starts (its handler is running:
    // nothing of that batch can have been deleted yet), the forwarder right after.
    const started = await fn.nextLine((l) => l.msg === 'invocation started', 60_000);
    fn.child.kill('SIGKILL');
    forwarder.child.kill('SIGKILL');
    killed = true;
    const createdAtKill = workload.expected.size;
    await Promise.all([forwarder.exited, fn.exited, fn.output]);
    // Certain, not hoped for: read after the runner's last line, the invocation it died in had
    // not returned, and the burst was still going on.
    const inHand = invocationsInHand(fn);
    assert.ok(
      inHand.some((i) => i.requestId === started.requestId),
      `the runner was killed with a batch in hand (invocation ${String(started.requestId)} never returned); in hand: ${JSON.stringify(inHand)}`,
    );
    assert.ok(createdAtKill < n, `the forwarder was killed mid-burst (${createdAtKill} of ${n} objects created)`);
    const killedRecords = new Set(inHand.flatMap((i) => i.messageIds));
    await creating;
    // Changes while no forwarder runs: a new generation for every fourth object.
    await workload.resize(
      range(0, n).filter((i) => i % 4 === 0),
      () => 2,
    );

    const fn2 = await env.startFunction(named('fn-burst-2', ordering), { ordering });
    const restarted = await env.startForwarder(named('fwd-burst-2', ordering), { ordering, namespaces: [workload.namespace] });
    await restarted.probes();
    const result = await assertNothingLost(env, workload, { timeoutMs: 300_000, ordering });
    // Nothing of the killed invocation was acknowledged: every one of its records came back.
    const redelivered = new Set(invocationsStarted(fn2).flatMap((i) => i.messageIds));
    const lost = [...killedRecords].filter((id) => !redelivered.has(id));
    assert.deepEqual(lost, [], `every record of the killed invocation was delivered again (${killedRecords.size} records)`);
    const gaps = shippedWatchGaps(env);
    t.diagnostic(
      caseLine(
        titled('forwarder + runner SIGKILL mid-burst', ordering),
        begun,
        sent,
        env,
        result,
        `${n} objects, killed at ${createdAtKill} created with ${killedRecords.size} records in hand, all delivered again${gaps.length > 0 ? `; the shipped forwarder config does not watch owned ${gaps.join(', ')}` : ''}`,
      ),
    );
    assert.equal(result.converged, n);
    await restarted.stop();
    await env.stopFunctions();
  });
}

for (const ordering of CASE_ORDERINGS) {
  test(titled('two forwarder replicas, the leader SIGKILLed: the follower takes over and nothing is missed', ordering), async (t) => {
    const n = objectsPerCase(ordering === 'per-key' ? 60 : 200);
    const namespace = named('ha', ordering);
    const started = Date.now();
    const sent = env.proxy.total();
    await env.startFunction(named('fn-ha', ordering), { ordering });
    const a = await env.startForwarder(named('fwd-a', ordering), { ordering, leaderElection: true, namespaces: [namespace] });
    await a.line(/became the leader/, 30_000);
    const b = await env.startForwarder(named('fwd-b', ordering), { ordering, leaderElection: true, namespaces: [namespace] });
    await b.probes();
    const workload = new MemcachedWorkload(env, namespace);
    await workload.createNamespace();
    await workload.create(0, Math.floor(n / 2));
    a.child.kill('SIGKILL');
    await a.exited;
    // Changes while nobody leads (the lease has not expired yet).
    await workload.create(Math.floor(n / 2), n);
    await workload.resize(
      range(0, Math.floor(n / 2)).filter((i) => i % 3 === 0),
      () => 2,
    );
    await b.line(/became the leader/, 30_000);
    // The shipped Lease, in the forwarder's namespace, taken over under the shipped RBAC.
    const { namespace: leaseNamespace, leaseName } = env.forwarderIdentity;
    const lease = await env.admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(LEASES, leaseName, leaseNamespace);
    assert.equal(lease?.spec?.holderIdentity, named('fwd-b', ordering), `the follower holds the Lease ${leaseNamespace}/${leaseName}`);
    const result = await assertNothingLost(env, workload, { timeoutMs: 180_000, ordering });
    t.diagnostic(
      caseLine(titled('leader SIGKILL, follower takes over', ordering), started, sent, env, result, `${n} objects; Lease ${leaseNamespace}/${leaseName}`),
    );
    assert.equal(result.converged, n);
    await b.stop();
    await env.stopFunctions();
  });
}

for (const ordering of CASE_ORDERINGS) {
  test(titled('watch history compacted while the forwarder is frozen: its watch gets 410 Gone, it relists, nothing is missed', ordering), async (t) => {
    const n = objectsPerCase(ordering === 'per-key' ? 60 : 200);
    const started = Date.now();
    const sent = env.proxy.total();
    const { workload, forwarder } = await startMemcachedCase(env, 'gone', ordering);
    await workload.create(0, n);
    await untilConverged(workload);

    // Freeze the forwarder; change objects it will never see as watch events; compact etcd
    // and restart the API server (its watch cache starts at the compacted revision).
    forwarder.child.kill('SIGSTOP');
    const changed = range(0, n).filter((i) => i % 2 === 0);
    await workload.resize(changed, () => 2);
    await env.cp.compactEtcd();
    await env.cp.restartApiServer();
    forwarder.child.kill('SIGCONT');
    await retrying(async () => {
      const relists = await forwarder.metric('operless_forwarder_relists_total');
      assert.ok(relists > 0, 'the forwarder relisted after 410 Gone');
    });
    const result = await assertNothingLost(env, workload, { timeoutMs: 180_000, ordering });
    t.diagnostic(
      caseLine(titled('etcd compacted → 410 Gone → relist', ordering), started, sent, env, result, `${n} objects, ${changed.length} changed unseen`),
    );
    assert.equal(result.converged, n);
    await forwarder.stop();
    await env.stopFunctions();
  });
}
