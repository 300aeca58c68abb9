/**
 * Same-name delete and recreate, against a REAL kube-apiserver + etcd (with the garbage
 * collector) and a REAL SQS-compatible broker (ElasticMQ): the forwarder runs as its own
 * process (`node src/forwarder/main.ts`, so it can be frozen), the function in-process under
 * the local Lambda runner. A key is a name, and messages of the old object (its `Deleted`, a
 * garbage-collected child's `Owned` naming the old owner uid, a pending `Retry`) can be merged
 * or batched with the new object's `Added`. Each case deletes a Gadget and creates it again
 * under the same name, then waits until the NEW object's status names its own uid — the
 * condition itself, with the wait's timeout as the only bound:
 *
 * - inside one coalescing window: the old object's Deleted leads, the new Added is held, and a
 *   child of the old object (held by a finalizer until the new object exists) is deleted by
 *   the garbage collector inside the window;
 * - across a forced relist: the forwarder is frozen while the object is recreated, etcd is
 *   compacted and the API server restarted, so the thawed forwarder's watch gets 410 Gone and
 *   its store diff sees the old uid gone and the new one present, inside the window a change
 *   of the old object opened;
 * - with a Retry of the old uid (a high attempt) pending in the work queue beside the new
 *   object's messages, received in one batch.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GetQueueAttributesCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { stringify } from 'yaml';
import { startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { encodeMessage, followUp, newMessage, type ReconcileMessage } from '../../src/contract/message.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { done } from '../../src/core/controller/result.ts';
import type { ReconcileContext } from '../../src/core/controller/types.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { createKubeClient, type BoundKubeClient } from '../../src/kube/client.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { startLambdaRunner, type LambdaRunner } from '../../src/local/lambda-runner.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';
import { API_VERSION, GADGET_CRD, gadgetConfig } from './forwarder-env.ts';

const CLUSTER = 'it';
const GADGET: KindRef = { apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true };
const CONFIGMAP: KindRef = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const NAMESPACE: KindRef = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
const HOLD = 'test.operless.dev/hold';
const MAIN = join(import.meta.dirname, '..', '..', 'src', 'forwarder', 'main.ts');

interface Gadget extends KubeObject {
  spec: { child?: 'plain' | 'held'; size?: number };
  status?: { reconciledUid?: string };
}

let cp: ControlPlane;
let broker: Broker;
let sqs: SQSClient;
let admin: BoundKubeClient;
let work: string;
let counter = 0;
const children = new Set<ChildProcess>();

/** Every message a reconcile ran for, by `namespace/name`, with the live uid it saw. */
const seen = new Map<string, { uid: string | undefined; message: ReconcileMessage }[]>();

async function reconcileGadget(gadget: Gadget, ctx: ReconcileContext<Gadget>) {
  const { name, namespace, uid } = gadget.metadata;
  const key = `${namespace}/${name}`;
  seen.set(key, [...(seen.get(key) ?? []), { uid, message: ctx.message }]);
  if (gadget.spec.child) {
    // A child named after its owner's uid, so the old object's child and the new one's never meet.
    await ctx.applyOwned(CONFIGMAP, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${name}-${uid}`, ...(gadget.spec.child === 'held' ? { finalizers: [HOLD] } : {}) },
      data: { owner: String(uid) },
    });
  }
  await ctx.updateStatus({ reconciledUid: uid });
  return done();
}

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [GADGET_CRD], controllers: true }), startBroker({ queues: [] })]);
  sqs = broker.sqs();
  admin = createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'recreate-test' });
  work = mkdtempSync(join(tmpdir(), 'operless-recreate-'));
});
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.allSettled([cp?.stop(), broker?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

interface Case {
  readonly ns: string;
  readonly queueUrl: string;
  readonly dlqUrl: string;
}

async function newCase(): Promise<Case> {
  counter += 1;
  const ns = `recreate-${counter}`;
  await admin.create(NAMESPACE, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const dlqUrl = await broker.createQueue({ name: `${ns}-dlq` });
  const queueUrl = await broker.createQueue({ name: ns, visibilityTimeoutSeconds: 10, dlq: { name: `${ns}-dlq`, maxReceiveCount: 5 } });
  return { ns, queueUrl, dlqUrl };
}

/** The function: the Lambda runner consuming the case's queue, the runtime's own handler. */
function startFunction(c: Case, batchWindowSeconds = 0): Promise<LambdaRunner> {
  const handler = toSqsHandler(defineController<Gadget>({ ...GADGET, reconcile: reconcileGadget, retry: { baseSeconds: 1, capSeconds: 2, maxAttempts: 5 } }), {
    queueUrl: c.queueUrl,
    deadLetterQueueUrl: c.dlqUrl,
    clients: createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath, OPERLESS_CLUSTER: CLUSTER } }),
    sender: createSqsSender(sqs),
    log: silentLogger,
    metrics: noMetrics,
  });
  return startLambdaRunner({
    queueUrl: c.queueUrl,
    sqs,
    handler,
    batchSize: 10,
    batchWindowSeconds,
    maxConcurrency: 1,
    timeoutSeconds: 30,
    logger: silentLogger,
  });
}

interface ForwarderProcess {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  /** Resolves with the first JSON log line (seen or to come) whose msg matches (and `where`, when given). */
  line(msg: RegExp, timeoutMs?: number, where?: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** The forwarder as the process the container runs, watching the case's namespace. */
async function startForwarderProcess(c: Case, coalesceWindowMs: number): Promise<ForwarderProcess> {
  const base = gadgetConfig(c.queueUrl, broker.region, { clusterId: CLUSTER, coalesceWindowMs, leaderElection: { enabled: false } });
  const config = {
    ...base,
    primaries: base.primaries!.map((p) => ({ ...p, namespaces: [c.ns] })),
    owned: [{ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, namespaces: [c.ns] }],
  };
  const path = join(work, `${c.ns}.yaml`);
  writeFileSync(path, stringify(config));
  const child = spawn(process.execPath, [MAIN], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      OPERLESS_FORWARDER_CONFIG: path,
      KUBECONFIG: cp.kubeconfigPath,
      OPERLESS_LOG_LEVEL: 'info',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_SQS: broker.endpoint,
    },
  });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    try {
      lines.push(JSON.parse(text) as Record<string, unknown>);
    } catch {
      // not a log line
    }
  });
  const proc: ForwarderProcess = {
    child,
    lines,
    async line(msg, timeoutMs = 60_000, where = () => true) {
      let found: Record<string, unknown> | undefined;
      await waitUntil(`the forwarder logs ${msg}`, () => (found = lines.find((l) => msg.test(String(l.msg)) && where(l))) !== undefined, {
        timeoutMs,
        intervalMs: 100,
        context: () =>
          `stderr: ${stderr}\nlast lines:\n${lines
            .slice(-8)
            .map((l) => JSON.stringify(l))
            .join('\n')}`,
      });
      return found!;
    },
    async stop() {
      child.kill('SIGCONT'); // a frozen process cannot handle SIGTERM
      child.kill('SIGTERM');
      await exited;
      children.delete(child);
    },
  };
  await proc.line(/forwarder running/);
  return proc;
}

async function createGadget(ns: string, name: string, spec: Gadget['spec']): Promise<Gadget> {
  return admin.create<Gadget>(GADGET, { apiVersion: API_VERSION, kind: 'Gadget', metadata: { name, namespace: ns }, spec });
}

/** Waits until the live object of that name is `uid` and its status says a reconcile of it ran. */
async function untilReconciled(ns: string, name: string, uid: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await waitUntil(
    `${ns}/${name} (uid ${uid}) is reconciled`,
    async () => {
      const live = await admin.get<Gadget>(GADGET, name, ns);
      return live?.metadata.uid === uid && live.status?.reconciledUid === uid;
    },
    { timeoutMs, context: () => `reconciles of ${ns}/${name}: ${JSON.stringify(seen.get(`${ns}/${name}`) ?? [])}` },
  );
  return Date.now() - started;
}

/**
 * The case's Gadget `g`, created and reconciled before the case's forwarder runs: the message
 * the forwarder would have sent for its creation is injected into the work queue.
 */
async function reconciledGadget(c: Case, spec: Gadget['spec']): Promise<Gadget> {
  const g = await createGadget(c.ns, 'g', spec);
  const message = newMessage(
    { cluster: CLUSTER, ...GADGET, namespace: c.ns, name: 'g', uid: g.metadata.uid, resourceVersion: g.metadata.resourceVersion },
    'Added',
  );
  await sqs.send(new SendMessageCommand({ QueueUrl: c.queueUrl, MessageBody: encodeMessage(message) }));
  await untilReconciled(c.ns, 'g', g.metadata.uid!, 30_000);
  return g;
}

async function depth(queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const a = out.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed),
  };
}

/** Nothing lost: the work queue drains (delayed messages included) and the DLQ stays empty. */
async function assertSettled(c: Case): Promise<void> {
  await waitUntil(
    'the work queue drained',
    async () => {
      const d = await depth(c.queueUrl);
      return d.visible + d.inFlight + d.delayed === 0;
    },
    { timeoutMs: 60_000 },
  );
  assert.deepEqual(await depth(c.dlqUrl), { visible: 0, inFlight: 0, delayed: 0 }, 'nothing in the DLQ');
}

/** The reconciles of the new object (the live uid `uid`) ran for a message standing for both objects (no uid). */
function reconciledForBoth(ns: string, name: string, uid: string): boolean {
  return (seen.get(`${ns}/${name}`) ?? []).some((r) => r.uid === uid && r.message.uid === undefined);
}

test('deleted and recreated inside one coalescing window, with a child of the old object deleted by the GC after the recreate: the new object is reconciled', async (t) => {
  const c = await newCase();
  const fn = await startFunction(c);
  let forwarder: ForwarderProcess | undefined;
  try {
    const old = await reconciledGadget(c, { child: 'held' });
    const heldChild = `g-${old.metadata.uid}`;
    assert.ok(await admin.get(CONFIGMAP, heldChild, c.ns), "the old object's child exists (held by a finalizer)");
    // Started now, the forwarder has no open window for the key: the deletion leads one.
    forwarder = await startForwarderProcess(c, 10_000);

    await admin.delete(GADGET, 'g', c.ns);
    const recreated = await createGadget(c.ns, 'g', { size: 2 });
    // The garbage collector deletes the old object's child; its finalizer keeps it until the
    // new object exists, so its last event (an Owned naming the OLD uid) comes after the new Added.
    await waitUntil(
      "the garbage collector is deleting the old object's child",
      async () => {
        const child = await admin.get(CONFIGMAP, heldChild, c.ns);
        return child?.metadata.deletionTimestamp !== undefined;
      },
      { timeoutMs: 30_000 },
    );
    await admin.mergePatch(CONFIGMAP, heldChild, c.ns, { metadata: { finalizers: null } });

    const waitedMs = await untilReconciled(c.ns, 'g', recreated.metadata.uid!, 45_000);
    assert.ok(
      reconciledForBoth(c.ns, 'g', recreated.metadata.uid!),
      `the new object was reconciled through the merged message (the case happened inside one window): ${JSON.stringify(seen.get(`${c.ns}/g`))}`,
    );
    await assertSettled(c);
    t.diagnostic(`the recreated object was reconciled ${waitedMs} ms after the old child was released (window 10 s)`);
  } finally {
    await forwarder?.stop();
    await fn.stop();
  }
});

test('deleted and recreated while the forwarder was away, seen through a forced relist (410 Gone) inside an open window: the new object is reconciled', async (t) => {
  // Long enough for an API server restart and a compaction on a busy machine.
  const WINDOW_MS = 40_000;
  const c = await newCase();
  const fn = await startFunction(c);
  let forwarder: ForwarderProcess | undefined;
  try {
    const old = await reconciledGadget(c, { child: 'plain' });
    forwarder = await startForwarderProcess(c, WINDOW_MS);
    // A change of the old object leads a window (its change of the object itself is sent)...
    await admin.mergePatch(GADGET, 'g', c.ns, { spec: { child: 'plain', size: 3 } });
    await waitUntil("the old object's change was reconciled", () => (seen.get(`${c.ns}/g`) ?? []).some((r) => r.message.reason === 'Modified'), {
      timeoutMs: 30_000,
    });
    const windowOpenedAt = Date.now();
    // ...and the forwarder is frozen, its watch connections closed by an API server restart
    // (events sent to a frozen process would wait in its socket), before the recreate: it never
    // sees it as watch events. The compaction makes its resume from the old version a 410 Gone.
    forwarder.child.kill('SIGSTOP');
    await cp.restartApiServer();
    await admin.delete(GADGET, 'g', c.ns);
    const recreated = await createGadget(c.ns, 'g', { child: 'plain', size: 1 });
    await cp.compactEtcd();
    forwarder.child.kill('SIGCONT');
    const relisted = await forwarder.line(/^relisted$/, 60_000, (l) => l.watch === 'Gadget');
    assert.equal(relisted.changes, 2, `the relist saw the old uid gone and the new one present: ${JSON.stringify(relisted)}`);
    const relistAfterMs = Date.parse(String(relisted.time)) - windowOpenedAt;
    assert.ok(
      relistAfterMs < WINDOW_MS,
      `the relist came ${relistAfterMs} ms after the window opened, after its ${WINDOW_MS} ms: the machine was too slow for this case`,
    );

    const waitedMs = await untilReconciled(c.ns, 'g', recreated.metadata.uid!, WINDOW_MS + 30_000);
    assert.ok(
      reconciledForBoth(c.ns, 'g', recreated.metadata.uid!),
      `the relist's changes were merged inside the window: ${JSON.stringify(seen.get(`${c.ns}/g`))}`,
    );
    await assertSettled(c);
    t.diagnostic(
      `relist ${relistAfterMs} ms into the window; the recreated object was reconciled ${waitedMs} ms after the relist (window ${WINDOW_MS / 1000} s)`,
    );
  } finally {
    await forwarder?.stop();
    await fn.stop();
  }
});

test("deleted and recreated while a Retry of the old uid is pending in the queue (one batch with the new object's messages): the new object is reconciled, with its own attempt", async (t) => {
  const c = await newCase();
  let fn = await startFunction(c);
  let forwarder: ForwarderProcess | undefined;
  try {
    const old = await reconciledGadget(c, { child: 'plain' });
    forwarder = await startForwarderProcess(c, 200);
    await fn.stop();
    // The old object failed three times: its retry waits in the queue.
    const retryOfOld = followUp(
      newMessage({ cluster: CLUSTER, ...GADGET, namespace: c.ns, name: 'g', uid: old.metadata.uid }, 'Modified', Date.now() - 30_000),
      { reason: 'Retry', attempt: 3 },
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: c.queueUrl, MessageBody: encodeMessage(retryOfOld) }));
    await admin.delete(GADGET, 'g', c.ns);
    const recreated = await createGadget(c.ns, 'g', { child: 'plain', size: 2 });
    // The retry, the old object's Deleted and the new one's Added wait together.
    await waitUntil("the forwarder's messages joined the retry in the queue", async () => (await depth(c.queueUrl)).visible >= 3, { timeoutMs: 30_000 });
    const started = Date.now();
    fn = await startFunction(c, 2);
    const waitedMs = await untilReconciled(c.ns, 'g', recreated.metadata.uid!, 30_000);
    const runs = (seen.get(`${c.ns}/g`) ?? []).filter((r) => r.uid === recreated.metadata.uid);
    assert.equal(runs[0]?.message.attempt, 0, `the new object's reconcile does not carry the old object's attempts: ${JSON.stringify(runs)}`);
    await assertSettled(c);
    t.diagnostic(`the recreated object was reconciled ${waitedMs} ms after the function started (${Date.now() - started} ms incl. drain)`);
  } finally {
    await forwarder?.stop();
    await fn.stop();
  }
});
