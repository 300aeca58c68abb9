/**
 * The broker blackholed: for ~25 s every SQS request — the forwarder's sends and probes, the
 * function's follow-ups, the runner's receives and deletes — is accepted and never answered,
 * and the connections it arrived on stay dead after the blackhole ends (sqs-proxy.ts
 * `setStalled`), unlike a reset a client notices at once. The pipeline must notice by its
 * own timeouts: the forwarder's lane goes not-ready and buffers, the function's records come
 * back, and once the broker answers again everything converges with nothing in the DLQ.
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ORDERINGS } from '../../src/contract/ordering.ts';
import {
  CASE_ORDERINGS,
  FaultEnv,
  KNOBS,
  MemcachedWorkload,
  assertNothingLost,
  caseLine,
  named,
  objectsPerCase,
  range,
  sleep,
  titled,
  until,
} from './harness.ts';

const BLACKHOLE_MS = KNOBS.blackholeMs;

let env: FaultEnv;

before(async () => {
  env = await FaultEnv.start({ orderings: ORDERINGS });
  env.startSimulator();
});
afterEach(async () => {
  env?.proxy.setStalled(false);
  await env?.stopProcesses();
});
after(async () => {
  await env?.stop();
});

for (const ordering of CASE_ORDERINGS) {
  test(
    titled('broker blackholed for 25 s (requests accepted, never answered) then answering again: everything converges, nothing in the DLQ', ordering),
    async (t) => {
      const n = Math.max(1, objectsPerCase(ordering === 'per-key' ? 60 : 200) - 10);
      const namespace = named('blackhole', ordering);
      const started = Date.now();
      const sent = env.proxy.total();
      await env.startFunction(named('fn-blackhole', ordering), { ordering });
      const forwarder = await env.startForwarder(named('fwd-blackhole', ordering), {
        ordering,
        namespaces: [namespace],
        config: { send: { backoffInitialMs: 200, backoffMaxMs: 3000, connectTimeoutMs: 1000, requestTimeoutMs: 3000 } },
      });
      await forwarder.probes();
      const workload = new MemcachedWorkload(env, namespace);
      await workload.createNamespace();
      await workload.create(0, n);
      await until('reconciles are under way', async () => env.reconcileCounts(`/${namespace}/`).size > 0, 60_000);

      const blackholeStarted = Date.now();
      env.proxy.setStalled(true);
      // Changes during the blackhole: the forwarder must buffer them.
      await workload.resize(
        range(0, n).filter((i) => i % 3 === 0),
        () => 2,
      );
      await workload.create(n, n + 10);
      await until(
        'the forwarder reports the queue unreachable (its stalled requests timed out)',
        async () => (await forwarder.metric('operless_forwarder_queue_reachable')) === 0,
        60_000,
      );
      // The fault's length, not a synchronisation: the broker stays blackholed for BLACKHOLE_MS.
      await sleep(Math.max(0, BLACKHOLE_MS - (Date.now() - blackholeStarted)));
      env.proxy.setStalled(false);
      assert.ok(env.proxy.stalledRequests > 0, 'requests were blackholed');

      const result = await assertNothingLost(env, workload, { timeoutMs: 240_000, ordering });
      await until('the forwarder reports the queue reachable again', async () => (await forwarder.metric('operless_forwarder_queue_reachable')) === 1, 60_000);
      t.diagnostic(
        caseLine(
          titled(`broker blackholed ${BLACKHOLE_MS / 1000} s`, ordering),
          started,
          sent,
          env,
          result,
          `${n + 10} objects, ${env.proxy.stalledRequests} requests blackholed`,
        ),
      );
      assert.equal(result.converged, n + 10);
      await forwarder.stop();
      await env.stopFunctions();
    },
  );
}
