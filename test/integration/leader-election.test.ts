/**
 * LeaderElector, directly, on a REAL Lease of a real kube-apiserver; faults on one
 * candidate's requests come from a loopback proxy (test/support/kube-fault-proxy.ts): the
 * release on a clean stop, stepping down when renewals fail, 409/422 answers, a request
 * that hangs (cut inside the renew deadline: the leader has stepped down before anyone else
 * can lead), and stop() while a request hangs.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, waitUntil, type ControlPlane } from '../../src/testing/index.ts';
import { createKubeApi, type KubeApi } from '../../src/kube/api.ts';
import type { Lease } from '../../src/kube/lease.ts';
import { LeaderElector, type LeaderElectorOptions } from '../../src/forwarder/control/leader.ts';
import { createLogger } from '../../src/observability/log.ts';
import { startKubeFaultProxy, type KubeFaultProxy } from '../support/kube-fault-proxy.ts';

let cp: ControlPlane;
let proxy: KubeFaultProxy;
let admin: KubeApi;
let counter = 0;

before(async () => {
  cp = await startControlPlane();
  proxy = await startKubeFaultProxy(cp);
  admin = createKubeApi(cp.kubeConfig);
});
after(async () => {
  await proxy?.close();
  await cp?.stop();
});

/** What happened, in order, across every candidate of a test. */
type Happening = `${string} leads` | `${string} stepped down`;

interface Candidate {
  readonly elector: LeaderElector;
  readonly warnings: () => Record<string, unknown>[];
}

function candidates(timings: Pick<LeaderElectorOptions, 'leaseDurationSeconds' | 'renewDeadlineSeconds' | 'retryPeriodSeconds'>) {
  counter += 1;
  const name = `lease-${counter}`;
  const happenings: Happening[] = [];
  const electors: LeaderElector[] = [];
  const make = (identity: string, api: KubeApi): Candidate => {
    const lines: Record<string, unknown>[] = [];
    const elector = new LeaderElector({
      api,
      namespace: 'default',
      name,
      identity,
      ...timings,
      log: createLogger({ level: 'debug', write: (l) => lines.push(JSON.parse(l)) }),
      onStartedLeading: () => happenings.push(`${identity} leads`),
      onStoppedLeading: () => happenings.push(`${identity} stepped down`),
    });
    electors.push(elector);
    return { elector, warnings: () => lines.filter((l) => l.level === 'warn') };
  };
  return {
    name,
    happenings,
    /** A candidate whose requests go through the fault proxy. */
    viaProxy: (identity: string) => make(identity, createKubeApi(proxy.kubeConfig())),
    direct: (identity: string) => make(identity, createKubeApi(cp.kubeConfig)),
    lease: () => admin.requestJson<Lease>('GET', `/apis/coordination.k8s.io/v1/namespaces/default/leases/${name}`),
    leasePath: new RegExp(`^/apis/coordination\\.k8s\\.io/v1/namespaces/default/leases(/${name})?$`),
    async [Symbol.asyncDispose]() {
      await Promise.all(electors.map((e) => e.stop({ release: false })));
    },
  };
}

/** `a` (through the proxy) leads; `b` (direct) stands by. */
async function leaderAndStandby(c: ReturnType<typeof candidates>): Promise<{ a: Candidate; b: Candidate }> {
  const a = c.viaProxy('a');
  a.elector.start();
  await waitUntil('a leads', () => a.elector.leading);
  const b = c.direct('b');
  b.elector.start();
  await b.elector.decided;
  assert.equal(b.elector.leading, false);
  return { a, b };
}

const fast = { leaseDurationSeconds: 3, renewDeadlineSeconds: 2, retryPeriodSeconds: 0.5 };

test('a clean stop releases the Lease (no holder, duration 1 s) and a successor takes over at once', async () => {
  await using c = candidates({ leaseDurationSeconds: 60, renewDeadlineSeconds: 40, retryPeriodSeconds: 0.5 });
  const { a, b } = await leaderAndStandby(c);
  await a.elector.stop();
  const released = await c.lease();
  assert.equal(released.spec?.holderIdentity ?? '', '', 'holder cleared');
  assert.equal(released.spec?.leaseDurationSeconds, 1);
  // A 60 s lease: only the release lets b lead before the test's wait gives up.
  await waitUntil('b leads after the release', () => b.elector.leading, { timeoutMs: 20_000 });
  assert.deepEqual(c.happenings, ['a leads', 'a stepped down', 'b leads']);
});

test('renewals that fail: the leader steps down at its renew deadline, before another candidate can lead', async () => {
  await using c = candidates(fast);
  const { a, b } = await leaderAndStandby(c);
  const remove = proxy.inject({ method: 'PUT', path: c.leasePath, action: { respond: 500 } });
  try {
    await waitUntil('b leads', () => b.elector.leading, { timeoutMs: 30_000 });
  } finally {
    remove();
  }
  assert.deepEqual(c.happenings.slice(0, 3), ['a leads', 'a stepped down', 'b leads'], 'never two leaders');
});

test('409 Conflict on a renewal is a quiet retry; 422 Invalid is a WARN; neither costs leadership within the deadline', async () => {
  await using c = candidates({ leaseDurationSeconds: 60, renewDeadlineSeconds: 40, retryPeriodSeconds: 0.2 });
  const a = c.viaProxy('a');
  a.elector.start();
  await waitUntil('a leads', () => a.elector.leading);
  proxy.inject({
    method: 'PUT',
    path: c.leasePath,
    times: 1,
    action: { respond: 409, reason: 'Conflict', message: 'Operation cannot be fulfilled on leases.coordination.k8s.io: the object has been modified' },
  });
  await waitUntil('the 409 was answered and a later renewal went through', async () => {
    const puts = proxy.requests.filter((r) => r.method === 'PUT' && c.leasePath.test(r.path));
    return puts.some((r) => r.handled === 'respond') && puts.at(-1)!.handled === 'forwarded';
  });
  assert.deepEqual(a.warnings(), [], 'a conflict is normal: no WARN');
  proxy.inject({
    method: 'PUT',
    path: c.leasePath,
    times: 1,
    action: { respond: 422, reason: 'Invalid', message: 'Lease.coordination.k8s.io "x" is invalid: spec.leaseDurationSeconds: Invalid value' },
  });
  await waitUntil('the 422 was reported', () => a.warnings().some((w) => /422/.test(String(w.msg))));
  assert.equal(a.elector.leading, true);
  assert.deepEqual(c.happenings, ['a leads']);
});

test('a request that hangs is cut inside the renew deadline: the leader has stepped down before another can lead', async () => {
  await using c = candidates(fast);
  const { a, b } = await leaderAndStandby(c);
  // a's reads answer only after 90 % of the renew deadline and its renewals never answer:
  // each request alone stays inside the deadline, together they outlast the lease.
  proxy.inject({ method: 'GET', path: c.leasePath, action: { hold: () => new Promise((r) => setTimeout(r, 1_800)) } });
  proxy.inject({ method: 'PUT', path: c.leasePath, action: { hang: true } });
  await waitUntil('b leads', () => b.elector.leading, { timeoutMs: 30_000 });
  assert.deepEqual(c.happenings.slice(0, 3), ['a leads', 'a stepped down', 'b leads'], `never two leaders: ${c.happenings.join(', ')}`);
  const cut = proxy.requests.filter((r) => c.leasePath.test(r.path) && r.handled !== 'forwarded');
  assert.ok(
    cut.some((r) => r.aborted),
    'a gave up on a request the server never answered',
  );
});

test('stop() while a renewal hangs returns promptly: the request is aborted and the Lease released', async () => {
  // A renew deadline of 30 min: a stop() that waited for the hung request would outlast the test.
  await using c = candidates({ leaseDurationSeconds: 3600, renewDeadlineSeconds: 1800, retryPeriodSeconds: 0.2 });
  const a = c.viaProxy('a');
  a.elector.start();
  await waitUntil('a leads', () => a.elector.leading);
  proxy.inject({ method: 'PUT', path: c.leasePath, times: 1, action: { hang: true } });
  await waitUntil('a renewal hangs', () => proxy.requests.some((r) => r.handled === 'hang' && c.leasePath.test(r.path)));
  await a.elector.stop();
  const hung = proxy.requests.find((r) => r.handled === 'hang' && c.leasePath.test(r.path))!;
  await waitUntil('the proxy saw the hung request closed', () => hung.aborted);
  assert.equal((await c.lease()).spec?.holderIdentity ?? '', '', 'released after the hung renewal was abandoned');
  assert.deepEqual(c.happenings, ['a leads', 'a stepped down']);
});
