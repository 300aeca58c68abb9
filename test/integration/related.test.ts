/**
 * Related watches end to end, against a REAL kube-apiserver + etcd and a REAL SQS-compatible
 * broker (ElasticMQ): the forwarder runs in-process as the SHIPPED ServiceAccount with the RBAC
 * rendered from the chart (get/list/watch on the related kind, nothing broader), with the
 * shipped watches (infra/forwarder/manifests: Memcached, its children, ConfigMaps related by
 * `spec.configMapRef.name`); a pump receives the work queue and runs the Memcached reconcile
 * handler under the function's least-privilege RBAC.
 *
 * - editing a ConfigMap referenced by three of five Memcacheds reconciles exactly those three
 *   (reason Related) and rolls their pods (the settings' hash on the pod template); the other
 *   two get no message;
 * - deleting it sets Degraded=True (ConfigMapNotFound) with a Warning Event; recreating it recovers;
 * - a ConfigMap edited while the forwarder is down is applied after its restart (the Resync on start);
 * - bounded memory: a tenant's 300 ConfigMaps of 900 KB in one namespace (270 MB of related
 *   objects) do not grow the forwarder process (the shipped bundle with the image's flags, as a
 *   child process) past 200 MiB peak RSS while it lists and watches them, and a change of the
 *   one a Memcached refers to is still routed to it (reason Related).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { crdPaths } from '../../src/crd/generate.ts';
import { CRD_DIR, resources } from '../../src/resources.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler, type SqsBatchHandler } from '../../src/core/handler/handler.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { createSqsQueue, createSqsSender } from '../../src/queue/sqs.ts';
import { buildSqsEvent, createLambdaContext, queueArnFromUrl } from '../../src/local/lambda-runner.ts';
import { decodeMessage, type ReconcileMessage } from '../../src/contract/message.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { memcachedController } from '../../src/memcached/controller.ts';
import { CONFIG_HASH_ANNOTATION } from '../../src/memcached/desired.ts';
import { applyForwarderIdentity, applyMemcachedFunctionIdentity, type ForwarderIdentity } from '../support/identities.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { FORWARDER_NODE_FLAGS } from '../../src/build/forwarder-node-flags.ts';
import { createKubeApi } from '../../src/kube/api.ts';
import { spawnLogged, type LoggedChild } from './forwarder-env.ts';

type Json = Record<string, any>;
const NS = 'related';
const CLUSTER = 'it';
const REFERRING = ['r1', 'r2', 'r3'];
const OTHERS = ['o1', 'o2'];

let cp: ControlPlane;
let broker: Broker;
let sqs: SQSClient;
let fwdIdentity: ForwarderIdentity;
let fn: Identity;
let handler: SqsBatchHandler;
let workQueue: string;
let forwarder: Forwarder | undefined;
/** Every message the pump received, in order. */
const received: ReconcileMessage[] = [];
let pumping = true;
let pump: Promise<void> = Promise.resolve();
let pumpError: unknown;
/** What the pump saw, for a timeout's message. */
const context = () =>
  `received: ${received.map((m) => `${m.reason} ${m.name}`).join(', ')}; pump error: ${String(pumpError)}; forwarder pending: ${forwarder?.pending()}`;

async function kubectl(args: string[], input?: string) {
  const r = await cp.kubectl(args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, r.stderr);
  return r;
}
async function getJson(args: string[]): Promise<Json> {
  return JSON.parse((await kubectl([...args, '-o', 'json'])).stdout) as Json;
}

const configMap = (maxConnections: string) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: NS }, data: { maxConnections } });
const memcached = (name: string, ref?: string) =>
  JSON.stringify({
    apiVersion: 'cache.example.com/v1alpha1',
    kind: 'Memcached',
    metadata: { name, namespace: NS },
    spec: { size: 1, ...(ref ? { configMapRef: { name: ref } } : {}) },
  });

function start(): Forwarder {
  const shipped = fwdIdentity.config as { primaries: object[]; owned: object[]; related: object[] };
  const f = startForwarder(
    {
      clusterId: CLUSTER,
      queue: { url: workQueue, region: broker.region },
      primaries: shipped.primaries as never,
      owned: shipped.owned as never,
      related: shipped.related as never,
      leaderElection: { enabled: false },
      coalesceWindowMs: 0,
      resyncOnStart: true,
    },
    {
      kubeConfig: fwdIdentity.identity.kubeConfig,
      queue: createSqsQueue({ queueUrl: workQueue, region: broker.region, client: broker.sqs() }),
      serve: false,
      logger: silentLogger,
    },
  );
  return f;
}

/** Receives the work queue and runs the Memcached handler on every batch, until stopped. */
async function runPump(): Promise<void> {
  while (pumping) {
    const r = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: workQueue,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = r.Messages ?? [];
    if (messages.length === 0) continue;
    for (const m of messages) {
      const decoded = decodeMessage(m.Body ?? '');
      if (decoded.ok) received.push(decoded.message);
    }
    const event = buildSqsEvent(messages, { eventSourceARN: queueArnFromUrl(workQueue, broker.region), awsRegion: broker.region });
    const context = createLambdaContext({
      functionName: 'memcached',
      region: broker.region,
      requestId: randomUUID(),
      deadline: Date.now() + 60_000,
      memoryLimitMB: 256,
    });
    const result = await handler(event, context);
    const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
    if (done.length > 0)
      await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: workQueue, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
  }
}

const hashOf = async (name: string): Promise<string | undefined> =>
  (await getJson(['get', 'deployment', name, '-n', NS])).spec.template.metadata.annotations?.[CONFIG_HASH_ANNOTATION];
const argsOf = async (name: string): Promise<string[]> => (await getJson(['get', 'deployment', name, '-n', NS])).spec.template.spec.containers[0].args;
const degraded = async (name: string): Promise<Json | undefined> =>
  (await getJson(['get', 'memcached', name, '-n', NS])).status?.conditions?.find((c: Json) => c.type === 'Degraded');
const namesSince = (mark: number, reason?: string) =>
  received
    .slice(mark)
    .filter((m) => !reason || m.reason === reason)
    .map((m) => m.name);

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: crdPaths(CRD_DIR, resources) }), startBroker()]);
  sqs = broker.sqs();
  workQueue = broker.queueUrl('work');
  fwdIdentity = await applyForwarderIdentity(cp);
  fn = await applyMemcachedFunctionIdentity(cp);
  handler = toSqsHandler(defineController(memcachedController), {
    queueUrl: workQueue,
    deadLetterQueueUrl: broker.queueUrl('work-dlq'),
    cluster: CLUSTER,
    clients: createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: fn.kubeconfigPath } }, env: {} }),
    sender: createSqsSender(sqs),
    log: silentLogger,
    metrics: noMetrics,
  });
  await kubectl(['create', 'namespace', NS]);
  await kubectl(['apply', '-f', '-'], configMap('1024'));
  for (const name of REFERRING) await kubectl(['apply', '-f', '-'], memcached(name, 'settings'));
  for (const name of OTHERS) await kubectl(['apply', '-f', '-'], memcached(name));
  forwarder = start();
  await forwarder.ready;
  pump = runPump().catch((err: unknown) => {
    pumpError = err;
  });
  await waitUntil(
    'every Memcached has its Deployment, the referring ones with -c 1024',
    async () => {
      for (const name of [...REFERRING, ...OTHERS]) {
        const d = await cp.kubectl(['get', 'deployment', name, '-n', NS, '-o', 'json']);
        if (d.code !== 0) return false;
      }
      for (const name of REFERRING) if (!(await argsOf(name)).join(' ').includes('-c 1024')) return false;
      return true;
    },
    { timeoutMs: 60_000, context },
  );
});
let bulkChild: LoggedChild | undefined;
const work = mkdtempSync(join(tmpdir(), 'related-'));
after(async () => {
  bulkChild?.child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
  pumping = false;
  await pump.catch(() => {});
  await forwarder?.stop({ graceMs: 1000 });
  await Promise.all([cp?.stop(), broker?.stop()]);
});

test('a cross-namespace configMapRef is refused by the CRD', async () => {
  const r = await cp.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'cache.example.com/v1alpha1',
      kind: 'Memcached',
      metadata: { name: 'x', namespace: NS },
      spec: { size: 1, configMapRef: { name: 'settings', namespace: 'other' } },
    }),
  });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /own namespace/);
});

test('editing the ConfigMap reconciles exactly the three Memcacheds that refer to it, and rolls their pods', async () => {
  const before = new Map<string, string | undefined>();
  for (const name of REFERRING) before.set(name, await hashOf(name));
  const othersRv = new Map<string, string>();
  for (const name of OTHERS) othersRv.set(name, (await getJson(['get', 'deployment', name, '-n', NS])).metadata.resourceVersion);
  await waitUntil('the forwarder sent everything of the start', () => forwarder!.pending() === 0, { timeoutMs: 30_000, context });
  const mark = received.length;
  await kubectl(['apply', '-f', '-'], configMap('2048'));
  await waitUntil(
    'the three referring Deployments roll to -c 2048',
    async () => {
      for (const name of REFERRING) if (!(await argsOf(name)).join(' ').includes('-c 2048')) return false;
      return true;
    },
    { timeoutMs: 60_000, context },
  );
  await waitUntil('the forwarder has nothing pending', () => forwarder!.pending() === 0, { timeoutMs: 30_000, context });
  assert.deepEqual([...new Set(namesSince(mark, 'Related'))].sort(), REFERRING, 'a Related message for each referring Memcached');
  for (const name of OTHERS) assert.equal(namesSince(mark).includes(name), false, `${name} does not refer to the ConfigMap: no message`);
  for (const name of REFERRING) {
    const hash = await hashOf(name);
    assert.ok(hash && hash !== before.get(name), `${name}: the pod template's settings hash changed (the pods roll)`);
  }
  for (const name of OTHERS)
    assert.equal((await getJson(['get', 'deployment', name, '-n', NS])).metadata.resourceVersion, othersRv.get(name), `${name}'s Deployment is untouched`);
});

test('deleting the ConfigMap degrades the three with a reason and a Warning Event; recreating it recovers them', async () => {
  await kubectl(['delete', 'configmap', 'settings', '-n', NS]);
  await waitUntil(
    'the three are Degraded=True, ConfigMapNotFound',
    async () => {
      for (const name of REFERRING) if ((await degraded(name))?.reason !== 'ConfigMapNotFound' || (await degraded(name))?.status !== 'True') return false;
      return true;
    },
    { timeoutMs: 60_000, context },
  );
  const events = await getJson(['get', 'events.events.k8s.io', '-n', NS, '--field-selector', 'reason=ConfigMapNotFound']);
  assert.deepEqual([...new Set(events.items.filter((e: Json) => e.type === 'Warning').map((e: Json) => e.regarding.name))].sort(), REFERRING);
  for (const name of OTHERS) assert.notEqual((await degraded(name))?.status, 'True');
  await kubectl(['apply', '-f', '-'], configMap('4096'));
  await waitUntil(
    'the three recover (Degraded=False) and run -c 4096',
    async () => {
      for (const name of REFERRING) {
        if ((await degraded(name))?.status !== 'False') return false;
        if (!(await argsOf(name)).join(' ').includes('-c 4096')) return false;
      }
      return true;
    },
    { timeoutMs: 60_000, context },
  );
});

test('an invalid ConfigMap degrades them (InvalidConfigMap) and keeps the running Deployment', async () => {
  const args = await argsOf('r1');
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: NS }, data: { maxConnections: 'lots' } }),
  );
  await waitUntil('r1 is Degraded=True, InvalidConfigMap', async () => (await degraded('r1'))?.reason === 'InvalidConfigMap', { timeoutMs: 60_000 });
  assert.match((await degraded('r1'))?.message, /maxConnections must be a whole number/);
  assert.deepEqual(await argsOf('r1'), args);
  await kubectl(['apply', '-f', '-'], configMap('4096'));
  await waitUntil('r1 recovers', async () => (await degraded('r1'))?.status === 'False', { timeoutMs: 60_000 });
});

test('a ConfigMap edited while the forwarder is down is applied after its restart', async () => {
  await forwarder!.stop({ graceMs: 5000 });
  await kubectl(['apply', '-f', '-'], configMap('3000'));
  forwarder = start();
  await forwarder.ready;
  await waitUntil(
    'the three roll to -c 3000',
    async () => {
      for (const name of REFERRING) if (!(await argsOf(name)).join(' ').includes('-c 3000')) return false;
      return true;
    },
    { timeoutMs: 60_000, context },
  );
});

/** The peak resident size of a process so far (VmHWM of /proc/<pid>/status), MiB. */
function peakRssMiB(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  assert.ok(kb, `no VmHWM in /proc/${pid}/status`);
  return Number(kb) / 1024;
}

const BULK = 'bulk';
const BULK_COUNT = 300;
const BULK_BYTES = 900_000;
/**
 * The bound on the forwarder's peak RSS: the chart's memory limit is 256 MiB, and the process
 * must keep room below it for its webhooks and a burst of messages. Without related objects the
 * bundle peaks near 80 MiB; reading a LIST item by item adds about one object (1 MiB) and its
 * garbage. Buffering a page whole (the old reader) needs several times the page: far above.
 */
const PEAK_RSS_BOUND_MIB = 200;

test('300 ConfigMaps of 900 KB in one namespace: the forwarder process peaks under 200 MiB RSS and still routes a change of the mapped one', async () => {
  // Only the child forwarder watches from here on (the in-process one shares this test's heap).
  await forwarder!.stop({ graceMs: 5000 });
  forwarder = undefined;
  const admin = createKubeApi(cp.kubeConfig);
  await kubectl(['create', 'namespace', BULK]);
  const blob = 'x'.repeat(BULK_BYTES);
  const names = Array.from({ length: BULK_COUNT }, (_, i) => `blob-${String(i).padStart(3, '0')}`);
  // Created through the API, four at a time: this process holds one blob and a few request bodies.
  for (let i = 0; i < names.length; i += 4) {
    await Promise.all(
      names.slice(i, i + 4).map((name) =>
        admin.requestJson('POST', `/api/v1/namespaces/${BULK}/configmaps`, {
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { maxConnections: '100', blob } },
          timeoutMs: 120_000,
        }),
      ),
    );
  }
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'cache.example.com/v1alpha1',
      kind: 'Memcached',
      metadata: { name: 'big', namespace: BULK },
      spec: { size: 1, configMapRef: { name: names[0] } },
    }),
  );

  const bundle = (await bundleForwarder(join(work, 'forwarder.mjs'))).outFile;
  const shipped = fwdIdentity.config as Record<string, unknown>;
  const configPath = join(work, 'forwarder.yaml');
  writeFileSync(
    configPath,
    stringify({
      ...shipped,
      clusterId: CLUSTER,
      queue: { url: workQueue, region: broker.region },
      leaderElection: { enabled: false },
      coalesceWindowMs: 0,
      resyncOnStart: true,
      server: { port: 0, host: '127.0.0.1' },
    }),
  );
  const run = spawnLogged([...FORWARDER_NODE_FLAGS, bundle], {
    cwd: work,
    env: {
      PATH: process.env.PATH,
      OPERLESS_FORWARDER_CONFIG: configPath,
      KUBECONFIG: fwdIdentity.identity.kubeconfigPath,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_SQS: broker.endpoint,
    },
  });
  bulkChild = run;
  const pid = run.child.pid!;
  // Running = every watch synced: the 300 ConfigMaps were listed.
  await run.line(/forwarder running/, 600_000);
  const synced = run.lines.find((l) => l.msg === 'watch synced' && l.watch === 'ConfigMap');
  assert.ok(Number(synced?.objects) > BULK_COUNT, `the ConfigMap watch listed the ${BULK_COUNT} big ones: ${JSON.stringify(synced)}`);
  const afterList = peakRssMiB(pid);
  const mark = received.length;
  await admin.requestJson('PATCH', `/api/v1/namespaces/${BULK}/configmaps/${names[0]}`, {
    body: { data: { maxConnections: '200' } },
    contentType: 'application/merge-patch+json',
    timeoutMs: 120_000,
  });
  await waitUntil(
    'a Related message for the Memcached that refers to the changed ConfigMap',
    () => received.slice(mark).some((m) => m.name === 'big' && m.namespace === BULK && m.reason === 'Related'),
    { timeoutMs: 120_000, context },
  );
  const peak = peakRssMiB(pid);
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0, run.stderr());
  bulkChild = undefined;
  // One line for the record (docs/forwarder.md quotes it).
  console.log(
    JSON.stringify({ related: { configMaps: BULK_COUNT, bytesEach: BULK_BYTES, peakRssMiBAfterList: Math.round(afterList), peakRssMiB: Math.round(peak) } }),
  );
  assert.ok(
    peak < PEAK_RSS_BOUND_MIB,
    `the forwarder's peak RSS (VmHWM) was ${peak.toFixed(1)} MiB listing and watching ${BULK_COUNT} ConfigMaps of ${BULK_BYTES} bytes; the bound is ${PEAK_RSS_BOUND_MIB} MiB`,
  );
});
