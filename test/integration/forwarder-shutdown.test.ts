/**
 * Shutdown never hangs, against a REAL kube-apiserver + etcd and a REAL broker (ElasticMQ):
 * with a watch that waits for its kind — its CRD missing (404) or deleted while running — or
 * one that never syncs (RBAC forbids it: 403), or after leadership was lost before the first
 * sync (with a forbidden watch, so `ready` had not resolved),
 * SIGTERM / stop() still flushes what is pending, releases the Lease (holder cleared, as
 * client-go's ReleaseOnCancel) when it holds it, and ends.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { startBroker, startControlPlane, testCrd, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import type { ForwarderConfigInput } from '../../src/forwarder/config/config.ts';
import type { Lease } from '../../src/kube/lease.ts';
import { createLogger } from '../../src/observability/log.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_VERSION, GADGET_CRD, GROUP, Objects, collect, gadgetConfig, summary } from './forwarder-env.ts';
import { startKubeFaultProxy } from '../support/kube-fault-proxy.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const MISSING = { apiVersion: 'missing.test.operless.dev/v1', kind: 'Missing', plural: 'missings', namespaced: true };
const DOOMED_CRD = testCrd({ group: GROUP, kind: 'Doomed' });

let cp: ControlPlane;
let broker: Broker;
let objects: Objects;
let counter = 0;
const work = mkdtempSync(join(tmpdir(), 'fwd-shutdown-'));

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD, DOOMED_CRD] }), startBroker({ queues: [] })]);
  objects = new Objects(cp.kubeConfig);
});
after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

/** A namespace, a queue and a lease name of its own; Gadgets in it plus `extra` primaries, leader election on. */
async function setup(extra: ForwarderConfigInput['primaries'] = [], overrides: ForwarderConfigInput = {}) {
  counter += 1;
  const ns = `shutdown-${counter}`;
  const lease = `shutdown-${counter}`;
  await objects.createNamespace(ns);
  const queueUrl = await broker.createQueue({ name: `shutdown-${counter}` });
  const base = gadgetConfig(queueUrl, broker.region, { coalesceWindowMs: 60_000, ...overrides });
  const config: ForwarderConfigInput = {
    ...base,
    primaries: [...base.primaries!, ...extra].map((p) => ({ ...p, namespaces: [ns] })),
    owned: [],
    leaderElection: {
      enabled: true,
      namespace: ns,
      leaseName: lease,
      identity: `fwd-${counter}`,
      leaseDurationSeconds: 3,
      renewDeadlineSeconds: 2,
      retryPeriodSeconds: 0.5,
    },
  };
  const readLease = () => objects.api.requestJson<Lease>('GET', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${lease}`);
  return { ns, lease, queueUrl, config, readLease };
}

function inProcess(config: ForwarderConfigInput, queueUrl: string, kubeConfig: KubeConfig = cp.kubeConfig) {
  const lines: Record<string, unknown>[] = [];
  const forwarder: Forwarder = startForwarder(config, {
    kubeConfig,
    queue: createSqsQueue({ queueUrl, region: broker.region, client: broker.sqs() }),
    logger: createLogger({ write: (l) => lines.push(JSON.parse(l)) }),
    serve: false,
  });
  return { forwarder, lines, warned: (re: RegExp) => lines.some((l) => l.level === 'warn' && re.test(String(l.msg))) };
}

/** A change held by the 60 s coalescing window (a trailing message), which only the shutdown flush sends. */
async function holdOneMessage(ns: string, queueUrl: string, sent: () => Promise<number> | number): Promise<void> {
  await objects.createGadget(ns, 'held');
  await waitUntil('the leading edge was sent', async () => (await sent()) >= 1);
  assert.deepEqual(summary(await collect(broker.sqs(), queueUrl, { until: (m) => m.length >= 1 })), [`Added Gadget/${ns}/held`]);
  await objects.patchGadget(ns, 'held', { spec: { size: 2 } });
}

async function sentTotal(forwarder: Forwarder): Promise<number> {
  const m = (await forwarder.metrics.registry.getMetricsAsJSON()).find((x) => x.name === 'operless_forwarder_messages_enqueued_total');
  return (m?.values ?? []).reduce((n, v) => n + v.value, 0);
}

test('SIGTERM with a watch whose CRD is missing (404): the process flushes, releases the Lease and exits 0', async () => {
  const s = await setup([MISSING]);
  const path = join(work, `missing-${counter}.yaml`);
  writeFileSync(path, stringify({ ...s.config, server: { port: 0, host: '127.0.0.1' } }));
  const child = spawn(process.execPath, [join(ROOT, 'src/forwarder/main.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      OPERLESS_LOG_LEVEL: 'debug',
      OPERLESS_FORWARDER_CONFIG: path,
      KUBECONFIG: cp.kubeconfigPath,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_SQS: broker.endpoint,
    },
  });
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    try {
      lines.push(JSON.parse(text));
    } catch {
      /* not a log line */
    }
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const context = () =>
      `stderr:\n${stderr}\nlast lines:\n${lines
        .slice(-8)
        .map((l) => JSON.stringify(l))
        .join('\n')}`;
    await waitUntil(
      'the Missing watch waits for its kind (404)',
      () => lines.some((l) => l.level === 'warn' && /^Missing .* is not served \(404/.test(String(l.msg))),
      { context },
    );
    await waitUntil('the Gadget watch synced', () => lines.some((l) => l.msg === 'watch synced' && l.watch === 'Gadget'), { context });
    const forwarded = () => lines.filter((l) => l.msg === 'change forwarded').length;
    await holdOneMessage(s.ns, s.queueUrl, forwarded);
    await waitUntil('the change is held', () => forwarded() >= 2, { context });
    child.kill('SIGTERM');
    assert.equal(await exited, 0, context());
  } finally {
    child.kill('SIGKILL');
  }
  assert.deepEqual(
    summary(await collect(broker.sqs(), s.queueUrl, { until: (m) => m.length >= 1 })),
    [`Modified Gadget/${s.ns}/held`],
    'the held change was flushed',
  );
  const lease = await s.readLease();
  assert.equal(lease.spec?.holderIdentity ?? '', '', 'the Lease was released');
});

/** An identity that may use its Lease in `ns`, but not list or watch Gadgets: its Gadget watch never syncs. */
async function leaseOnlyIdentity(ns: string): Promise<KubeConfig> {
  const sa = await cp.serviceAccount(ns, 'no-gadgets');
  await objects.api.requestJson('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'lease-only' },
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
    },
  });
  await objects.api.requestJson('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'lease-only' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lease-only' },
      subjects: [{ kind: 'ServiceAccount', name: 'no-gadgets', namespace: ns }],
    },
  });
  return sa.kubeConfig;
}

test('stop() with a watch forbidden by RBAC (403): flushes, releases the Lease and returns', async () => {
  const s = await setup();
  const f = inProcess(s.config, s.queueUrl, await leaseOnlyIdentity(s.ns));
  await waitUntil('the watch is forbidden', () => f.warned(/forbidden \(403\)/));
  assert.equal(f.forwarder.isLeader(), true);
  const { unsent } = await f.forwarder.stop();
  assert.equal(unsent, 0);
  assert.equal((await s.readLease()).spec?.holderIdentity ?? '', '', 'the Lease was released');
});

test('stop() after the watched CRD was deleted while running: flushes, releases the Lease and returns', async () => {
  const s = await setup([{ apiVersion: API_VERSION, kind: 'Doomed', plural: 'doomeds', namespaced: true }]);
  const f = inProcess(s.config, s.queueUrl);
  await f.forwarder.ready;
  await holdOneMessage(s.ns, s.queueUrl, () => sentTotal(f.forwarder));
  await objects.api.requestJson('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${DOOMED_CRD.metadata.name}`);
  await waitUntil('the Doomed watch waits for its kind again', () => f.warned(/^Doomed .* is not served \(404/), { timeoutMs: 60_000 });
  const { unsent } = await f.forwarder.stop();
  assert.equal(unsent, 0);
  assert.deepEqual(
    summary(await collect(broker.sqs(), s.queueUrl, { until: (m) => m.length >= 1 })),
    [`Modified Gadget/${s.ns}/held`],
    'the held change was flushed',
  );
  assert.equal(
    (await s.readLease()).spec?.holderIdentity ?? '',
    '',
    `the Lease was released; the lease's log lines:\n${f.lines
      .filter((l) => /lease|lead/.test(String(l.msg)))
      .map((l) => JSON.stringify(l))
      .join('\n')}`,
  );
});

test("leadership lost before the first sync: ready resolves (standing by) and stop() returns without touching the new holder's Lease", async () => {
  // A watch that never syncs: forbidden (403). (A kind whose CRD is missing waits for it, which lets `ready` resolve.)
  const s = await setup();
  const f = inProcess(s.config, s.queueUrl, await leaseOnlyIdentity(s.ns));
  let ready = false;
  void f.forwarder.ready.then(() => (ready = true));
  await waitUntil('it leads and the watch is forbidden', () => f.forwarder.isLeader() && f.warned(/forbidden \(403\)/));
  assert.equal(ready, false, 'leading with a watch that never synced: not ready yet');
  // Another replica takes the Lease (as after a partition): the next round sees it and steps down.
  const lease = await s.readLease();
  await objects.api.requestJson('PUT', `/apis/coordination.k8s.io/v1/namespaces/${s.ns}/leases/${s.lease}`, {
    body: {
      ...lease,
      spec: { ...lease.spec, holderIdentity: 'usurper', leaseDurationSeconds: 3600, renewTime: new Date().toISOString().replace('Z', '000Z') },
    },
  });
  await waitUntil('it stepped down', () => !f.forwarder.isLeader());
  await f.forwarder.ready;
  const { unsent } = await f.forwarder.stop();
  assert.equal(unsent, 0);
  assert.equal((await s.readLease()).spec?.holderIdentity, 'usurper', 'a former leader releases nothing');
});

test('stop() while start-up discovery hangs (an API server that accepts and never answers): the request is aborted and stop() returns', async () => {
  const s = await setup();
  const proxy = await startKubeFaultProxy(cp);
  try {
    // Without plural/namespaced the forwarder asks discovery; that request never gets an answer.
    proxy.inject({ method: 'GET', path: new RegExp(`^/apis/${GROUP.replace(/\./g, '\\.')}/v1$`), action: { hang: true } });
    const config: ForwarderConfigInput = { ...s.config, primaries: s.config.primaries!.map(({ plural: _p, namespaced: _n, ...rest }) => rest) };
    const f = inProcess(config, s.queueUrl, proxy.kubeConfig());
    await waitUntil('discovery is under way', () => proxy.requests.some((r) => r.handled === 'hang'));
    const stopped = f.forwarder.stop({ graceMs: 1_000 });
    // The discovery request's own deadline is 30 s: stop() must not wait for it.
    const outcome = await Promise.race([
      stopped.then(() => 'stopped'),
      new Promise<string>((r) => setTimeout(() => r('still waiting on discovery'), 15_000).unref()),
    ]);
    assert.equal(outcome, 'stopped');
    await waitUntil('the hung discovery request was aborted by the client', () => proxy.requests.some((r) => r.handled === 'hang' && r.aborted));
    assert.equal(f.forwarder.isLeader(), false);
  } finally {
    await proxy.close();
  }
});
