/**
 * The Memcached operator against a real kube-apiserver (and ElasticMQ for the follow-ups):
 * the generated CRD installs, validates and defaults; `kubectl get mc` shows the printer
 * columns; and the reconcile handler, invoked with real SQS events under the least-privilege
 * RBAC from infra/rbac/, creates the Deployment and Service, fills in status as pods become
 * ready, and runs the finalizer on delete.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { crdPaths } from '../../src/crd/generate.ts';
import { CRD_DIR, resources } from '../../src/resources.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler, type SqsBatchHandler } from '../../src/core/handler/handler.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import { buildSqsEvent, createLambdaContext, queueArnFromUrl } from '../../src/local/lambda-runner.ts';
import { encodeMessage, newMessage, type Reason } from '../../src/contract/message.ts';
import { requestDelta, scrapeRequestTotals } from '../../bench/lib/apiserver-metrics.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';
import { createResyncHandler } from '../../src/core/resync/resync.ts';
import { memcachedController, MEMCACHED_FINALIZER } from '../../src/memcached/controller.ts';
import { MEMCACHED, DEFAULT_IMAGE, type Memcached } from '../../src/memcached/types.ts';

type Json = Record<string, any>;
const NS = 'default';

let cp: ControlPlane;

async function kubectl(args: string[], input?: string) {
  return cp.kubectl(args, input === undefined ? {} : { input });
}

async function getJson(args: string[]): Promise<Json> {
  const r = await kubectl([...args, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Json;
}

function manifest(name: string, spec: string): string {
  return `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: ${name}\n  namespace: ${NS}\n${spec}`;
}

before(async () => {
  cp = await startControlPlane({ crds: crdPaths(CRD_DIR, resources) });
});
after(async () => {
  await cp?.stop();
});

describe('the generated CRD on a real API server', () => {
  test('rejects a negative size with a message naming the field and the bound', async () => {
    const r = await kubectl(['apply', '-f', '-'], manifest('neg', 'spec:\n  size: -1\n'));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /spec\.size: Invalid value: -1: spec\.size in body should be greater than or equal to 0/);
  });

  test('rejects a size that is not an integer', async () => {
    const r = await kubectl(['apply', '-f', '-'], manifest('str', 'spec:\n  size: three\n'));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /spec\.size: Invalid value: "string": spec\.size in body must be of type integer: "string"/);
  });

  test('rejects a size above 100, a missing size and an unpinned image (CEL rule message)', async () => {
    const big = await kubectl(['apply', '-f', '-'], manifest('big', 'spec:\n  size: 101\n'));
    assert.match(big.stderr, /spec\.size in body should be less than or equal to 100/);
    const missing = await kubectl(['apply', '-f', '-'], manifest('nospec', ''));
    assert.match(missing.stderr, /spec: Required value/);
    const latest = await kubectl(['apply', '-f', '-'], manifest('latest', 'spec:\n  size: 1\n  image: memcached:latest\n'));
    assert.match(latest.stderr, /spec\.image must be pinned to a version or digest, not ":latest"/);
    const quantity = await kubectl(['apply', '-f', '-'], manifest('q', 'spec:\n  size: 1\n  resources:\n    limits:\n      memory: 12MB\n'));
    assert.match(quantity.stderr, /spec\.resources\.limits\.memory/);
  });

  test('applies the defaults: image, port, memoryLimitMB', async () => {
    const r = await kubectl(['apply', '-f', '-'], manifest('defaults', 'spec:\n  size: 2\n'));
    assert.equal(r.code, 0, r.stderr);
    const mc = await getJson(['get', 'memcached', 'defaults', '-n', NS]);
    assert.deepEqual(mc.spec, { size: 2, image: DEFAULT_IMAGE, port: 11211, memoryLimitMB: 64 });
  });

  test('kubectl get mc shows Size, Ready, Available and Age; kubectl scale writes spec.size', async () => {
    const r = await kubectl(['get', 'mc', '-n', NS]);
    assert.equal(r.code, 0, r.stderr);
    const [header, ...rows] = r.stdout.trim().split('\n');
    assert.deepEqual(header?.split(/\s+/), ['NAME', 'SIZE', 'READY', 'AVAILABLE', 'AGE']);
    assert.ok(
      rows.some((row) => /^defaults\s+2\s/.test(row)),
      r.stdout,
    );
    const wide = await kubectl(['get', 'mc', '-n', NS, '-o', 'wide']);
    assert.match(wide.stdout.split('\n')[0] ?? '', /IMAGE/);
    const scaled = await kubectl(['scale', 'mc/defaults', '-n', NS, '--replicas=4']);
    assert.equal(scaled.code, 0, scaled.stderr);
    assert.equal((await getJson(['get', 'mc', 'defaults', '-n', NS])).spec.size, 4);
    const tooBig = await kubectl(['scale', 'mc/defaults', '-n', NS, '--replicas=500']);
    assert.notEqual(tooBig.code, 0, 'the scale subresource is validated by the same schema');
  });
});

describe('the reconcile handler, least-privilege RBAC, real SQS events', () => {
  let broker: Broker;
  let sqs: SQSClient;
  let fn: Identity;
  let handler: SqsBatchHandler;
  let workQueue: string;
  const CLUSTER = 'it';

  before(async () => {
    broker = await startBroker();
    sqs = broker.sqs();
    workQueue = broker.queueUrl('work');
    const rbac = readFileSync(new URL('../../infra/rbac/memcached-function.yaml', import.meta.url), 'utf8');
    const applied = await kubectl(['apply', '-f', '-'], rbac);
    assert.equal(applied.code, 0, applied.stderr);
    fn = await cp.identity('memcached-function', ['operless:memcached']);
    handler = toSqsHandler(defineController(memcachedController), {
      queueUrl: workQueue,
      deadLetterQueueUrl: broker.queueUrl('work-dlq'),
      cluster: CLUSTER,
      clients: createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: fn.kubeconfigPath } }, env: {} }),
      sender: createSqsSender(sqs),
      log: silentLogger,
      metrics: noMetrics,
    });
  });
  after(async () => {
    await broker?.stop();
  });

  /**
   * Sends a message for the object through the real queue and receives it; returns the
   * handler invocation for it, not yet run (so a test can measure around exactly that).
   */
  async function deliver(name: string, reason: Reason = 'Modified', resourceVersion?: string) {
    const body = encodeMessage(
      newMessage(
        { cluster: CLUSTER, apiVersion: MEMCACHED.apiVersion, kind: MEMCACHED.kind, namespace: NS, name, ...(resourceVersion ? { resourceVersion } : {}) },
        reason,
      ),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: workQueue, MessageBody: body }));
    const received = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: workQueue,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 5,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const ours = (received.Messages ?? []).filter((m) => m.Body === body);
    assert.equal(ours.length, 1, 'the message came back from the queue');
    const event = buildSqsEvent(ours, { eventSourceARN: queueArnFromUrl(workQueue, broker.region), awsRegion: broker.region });
    const context = createLambdaContext({
      functionName: 'memcached',
      region: broker.region,
      requestId: randomUUID(),
      deadline: Date.now() + 60_000,
      memoryLimitMB: 256,
    });
    return () => handler(event, context);
  }

  /** Sends a message for the object through the real queue, receives it, and invokes the handler. */
  async function reconcile(name: string, reason: Reason = 'Modified', resourceVersion?: string) {
    return (await deliver(name, reason, resourceVersion))();
  }

  /** The reconcile's requests by verb and resource, from the API server's own counter (nothing else runs here). */
  const RECONCILE_RESOURCES = new Set(['memcacheds', 'memcacheds/status', 'deployments', 'services', 'pods', 'events']);
  async function requestsOf(invoke: () => Promise<unknown>): Promise<Record<string, number>> {
    const scrape = () => scrapeRequestTotals(cp.server, cp.admin.token!, cp.caPem);
    const before = await scrape();
    await invoke();
    const delta = requestDelta(before, await scrape());
    return Object.fromEntries(Object.entries(delta).filter(([key]) => RECONCILE_RESOURCES.has(key.slice(key.indexOf(' ') + 1))));
  }

  /**
   * Writes the Deployment's status as the Deployment controller would (no controllers run
   * here): `ready` of 3 replicas ready. Returns the Deployment's new resourceVersion, which the
   * forwarder would put in the `Owned` message.
   */
  async function deploymentControllerReports(name: string, ready: number): Promise<string> {
    const d = await getJson(['get', 'deployment', name, '-n', NS]);
    const status = { status: { observedGeneration: d.metadata.generation, replicas: 3, updatedReplicas: 3, readyReplicas: ready, availableReplicas: ready } };
    const patched = await kubectl(['patch', 'deployment', name, '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
    assert.equal(patched.code, 0, patched.stderr);
    return (await getJson(['get', 'deployment', name, '-n', NS])).metadata.resourceVersion as string;
  }

  async function createReadyPod(mc: Json, name: string) {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS, labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': mc.metadata.name } },
      spec: { containers: [{ name: 'memcached', image: DEFAULT_IMAGE }] },
    };
    const created = await kubectl(['apply', '-f', '-'], JSON.stringify(pod));
    assert.equal(created.code, 0, created.stderr);
    // No kubelet runs here: report the pod Ready through its status subresource, as a kubelet would.
    const now = `${new Date().toISOString().slice(0, 19)}Z`;
    const status = { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] } };
    const patched = await kubectl(['patch', 'pod', name, '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
    assert.equal(patched.code, 0, patched.stderr);
  }

  const condition = (mc: Json, type: string) => (mc.status?.conditions ?? []).find((c: Json) => c.type === type);

  test('first reconcile: finalizer, Deployment and headless Service with owner references, status, Event, no poll', async () => {
    const applied = await kubectl(['apply', '-f', '-'], manifest('sample', 'spec:\n  size: 3\n  memoryLimitMB: 96\n'));
    assert.equal(applied.code, 0, applied.stderr);
    const response = await reconcile('sample', 'Added');
    assert.deepEqual(response.batchItemFailures, []);

    const mc = await getJson(['get', 'mc', 'sample', '-n', NS]);
    assert.ok(mc.metadata.finalizers?.includes(MEMCACHED_FINALIZER));
    const deployment = await getJson(['get', 'deployment', 'sample', '-n', NS]);
    assert.equal(deployment.spec.replicas, 3);
    const container = deployment.spec.template.spec.containers[0];
    assert.deepEqual(container.args, ['-m', '96', '-p', '11211']);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    const [owner] = deployment.metadata.ownerReferences;
    assert.deepEqual({ kind: owner.kind, uid: owner.uid, controller: owner.controller }, { kind: 'Memcached', uid: mc.metadata.uid, controller: true });
    const service = await getJson(['get', 'service', 'sample', '-n', NS]);
    assert.equal(service.spec.clusterIP, 'None');
    assert.equal(service.metadata.ownerReferences[0].uid, mc.metadata.uid);

    assert.equal(mc.status.observedGeneration, mc.metadata.generation);
    assert.equal(condition(mc, 'Available')?.status, 'False');
    assert.equal(condition(mc, 'Progressing')?.status, 'True');
    assert.equal(condition(mc, 'Degraded')?.status, 'False');
    assert.equal(condition(mc, 'Available')?.observedGeneration, mc.metadata.generation);

    const events = await getJson(['get', 'events.events.k8s.io', '-n', NS, '--field-selector', `regarding.name=sample`]);
    assert.ok(
      events.items.some((e: Json) => e.reason === 'Created'),
      JSON.stringify(events.items.map((e: Json) => e.reason)),
    );

    // While progressing, the function did not requeue itself: the Deployment's status changes
    // (Owned events, next test) bring the next reconcile. Nothing waits on the queue.
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: workQueue, AttributeNames: ['ApproximateNumberOfMessagesDelayed', 'ApproximateNumberOfMessages'] }),
    );
    assert.equal(attributes.Attributes?.ApproximateNumberOfMessagesDelayed, '0', 'no delayed Requeue: Memcached does not poll');
    assert.equal(attributes.Attributes?.ApproximateNumberOfMessages, '0');
  });

  test('pods become ready: status.nodes and readyReplicas fill in, Available=True, kubectl wait succeeds', async () => {
    const mc = await getJson(['get', 'mc', 'sample', '-n', NS]);
    for (const name of ['sample-a', 'sample-b', 'sample-c']) await createReadyPod(mc, name);
    // The Deployment's status change is what tells the operator (an Owned event).
    await reconcile('sample', 'Owned', await deploymentControllerReports('sample', 3));
    const after = await getJson(['get', 'mc', 'sample', '-n', NS]);
    assert.deepEqual(after.status.nodes, ['sample-a', 'sample-b', 'sample-c']);
    assert.equal(after.status.readyReplicas, 3);
    assert.equal(condition(after, 'Available')?.status, 'True');
    const wait = await kubectl(['wait', '--for=condition=Available', 'memcached/sample', '-n', NS, '--timeout=10s']);
    assert.equal(wait.code, 0, wait.stderr);
    const row = (await kubectl(['get', 'mc', 'sample', '-n', NS, '--no-headers'])).stdout.trim().split(/\s+/);
    assert.deepEqual(row.slice(0, 4), ['sample', '3', '3', 'True']);
  });

  test('status is written only when it changes', async () => {
    const before = await getJson(['get', 'mc', 'sample', '-n', NS]);
    await reconcile('sample');
    const again = await getJson(['get', 'mc', 'sample', '-n', NS]);
    assert.equal(again.metadata.resourceVersion, before.metadata.resourceVersion, 'no write when nothing changed');
  });

  test("a no-op reconcile costs two requests, GET Memcached and GET Deployment (Requeue, the Deployment's own Owned event); the periodic Resync also applies the Service", async () => {
    const deploymentVersion = (await getJson(['get', 'deployment', 'sample', '-n', NS])).metadata.resourceVersion as string;
    const before = await getJson(['get', 'mc', 'sample', '-n', NS]);
    const serviceVersion = (await getJson(['get', 'service', 'sample', '-n', NS])).metadata.resourceVersion as string;
    assert.equal(before.status.deploymentResourceVersion, deploymentVersion, 'the status records the Deployment version it was computed from');
    for (const [reason, version] of [
      ['Requeue', undefined],
      ['Owned', deploymentVersion],
    ] as const) {
      const invoke = await deliver('sample', reason, version);
      const requests = await requestsOf(invoke);
      assert.deepEqual(requests, { 'GET memcacheds': 1, 'GET deployments': 1 }, reason);
    }
    const resync = await requestsOf(await deliver('sample', 'Resync', undefined));
    assert.deepEqual(resync, { 'GET memcacheds': 1, 'GET deployments': 1, 'APPLY services': 1 }, 'Resync, the safety net, checks every child');
    assert.equal((await getJson(['get', 'service', 'sample', '-n', NS])).metadata.resourceVersion, serviceVersion, 'an unchanged apply writes nothing');
    const after = await getJson(['get', 'mc', 'sample', '-n', NS]);
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.equal((await getJson(['get', 'deployment', 'sample', '-n', NS])).metadata.resourceVersion, deploymentVersion, 'the Deployment was not written');
  });

  test('kubectl scale of the Deployment: the Owned event it causes applies spec.size back', async () => {
    const scaled = await kubectl(['scale', 'deployment', 'sample', '-n', NS, '--replicas=5']);
    assert.equal(scaled.code, 0, scaled.stderr);
    const version = (await getJson(['get', 'deployment', 'sample', '-n', NS])).metadata.resourceVersion as string;
    const requests = await requestsOf(await deliver('sample', 'Owned', version));
    assert.equal(requests['APPLY deployments'], 1, JSON.stringify(requests));
    assert.equal((await getJson(['get', 'deployment', 'sample', '-n', NS])).spec.replicas, 3);
  });

  test('a deleted Service: the Owned event of its deletion recreates it', async () => {
    const service = await getJson(['get', 'service', 'sample', '-n', NS]);
    const deleted = await kubectl(['delete', 'service', 'sample', '-n', NS]);
    assert.equal(deleted.code, 0, deleted.stderr);
    // The forwarder's message names the deleted Service's version, not the Deployment's.
    const requests = await requestsOf(await deliver('sample', 'Owned', service.metadata.resourceVersion));
    assert.deepEqual(requests, { 'GET memcacheds': 1, 'GET deployments': 1, 'APPLY services': 1 });
    const recreated = await getJson(['get', 'service', 'sample', '-n', NS]);
    assert.notEqual(recreated.metadata.uid, service.metadata.uid);
    assert.equal(recreated.spec.clusterIP, 'None');
    assert.equal(recreated.metadata.ownerReferences[0].controller, true);
  });

  test('a Service deleted while nobody watched (its event lost): the next periodic Resync recreates it', async () => {
    const service = await getJson(['get', 'service', 'sample', '-n', NS]);
    assert.equal((await kubectl(['delete', 'service', 'sample', '-n', NS])).code, 0);
    const requests = await requestsOf(await deliver('sample', 'Resync', undefined));
    assert.equal(requests['APPLY services'], 1, JSON.stringify(requests));
    const recreated = await getJson(['get', 'service', 'sample', '-n', NS]);
    assert.notEqual(recreated.metadata.uid, service.metadata.uid);
  });

  test("a replaced pod: the Deployment's status moves, the pods are listed again, status.nodes follows", async () => {
    const mc = await getJson(['get', 'mc', 'sample', '-n', NS]);
    assert.deepEqual(mc.status.nodes, ['sample-a', 'sample-b', 'sample-c']);
    assert.equal((await kubectl(['delete', 'pod', 'sample-c', '-n', NS, '--grace-period=0', '--force'])).code, 0);
    await deploymentControllerReports('sample', 2);
    await createReadyPod(mc, 'sample-d');
    const version = await deploymentControllerReports('sample', 3);
    const requests = await requestsOf(await deliver('sample', 'Owned', version));
    assert.equal(requests['LIST pods'], 1, JSON.stringify(requests));
    const after = await getJson(['get', 'mc', 'sample', '-n', NS]);
    assert.deepEqual(after.status.nodes, ['sample-a', 'sample-b', 'sample-d']);
    assert.equal(after.status.readyReplicas, 3);
    assert.equal(after.status.deploymentResourceVersion, version);
  });

  test('scaling: the Deployment follows spec.size and a Scaled Event is recorded', async () => {
    const patched = await kubectl(['patch', 'mc', 'sample', '-n', NS, '--type=merge', '-p', '{"spec":{"size":1}}']);
    assert.equal(patched.code, 0, patched.stderr);
    await reconcile('sample');
    assert.equal((await getJson(['get', 'deployment', 'sample', '-n', NS])).spec.replicas, 1);
    const mc = await getJson(['get', 'mc', 'sample', '-n', NS]);
    assert.equal(condition(mc, 'Progressing')?.reason, 'ScalingDown');
    const events = await getJson(['get', 'events.events.k8s.io', '-n', NS, '--field-selector', 'regarding.name=sample']);
    assert.ok(events.items.some((e: Json) => e.reason === 'Scaled' && /from 3 to 1/.test(e.note)));
  });

  test('an invalid combination: Degraded=True saying why, and the message goes to the DLQ (no retries)', async () => {
    const spec = 'spec:\n  size: 1\n  memoryLimitMB: 512\n  resources:\n    limits:\n      memory: 256Mi\n';
    assert.equal((await kubectl(['apply', '-f', '-'], manifest('toobig', spec))).code, 0);
    const response = await reconcile('toobig');
    assert.deepEqual(response.batchItemFailures, []);
    const mc = await getJson(['get', 'mc', 'toobig', '-n', NS]);
    const degraded = condition(mc, 'Degraded');
    assert.equal(degraded?.status, 'True');
    assert.equal(degraded?.reason, 'MemoryLimitTooSmall');
    assert.match(degraded?.message, /Lower spec\.memoryLimitMB or raise spec\.resources\.limits\.memory/);
    const missing = await kubectl(['get', 'deployment', 'toobig', '-n', NS]);
    assert.notEqual(missing.code, 0, 'nothing is created for an invalid spec');
    const dlq = await sqs.send(new ReceiveMessageCommand({ QueueUrl: broker.queueUrl('work-dlq'), MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }));
    assert.ok((dlq.Messages ?? []).some((m) => (JSON.parse(m.Body ?? '{}') as Json).name === 'toobig'));
  });

  test('delete: the finalizer runs (Finalizing Event) and the object goes away', async () => {
    const mc = (await getJson(['get', 'mc', 'sample', '-n', NS])) as Memcached;
    const deleted = await kubectl(['delete', 'mc', 'sample', '-n', NS, '--wait=false']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.ok((await getJson(['get', 'mc', 'sample', '-n', NS])).metadata.deletionTimestamp, 'held by the finalizer');
    await reconcile('sample', 'Deleted');
    const gone = await kubectl(['get', 'mc', 'sample', '-n', NS]);
    assert.match(gone.stderr, /NotFound/);
    const events = await getJson(['get', 'events.events.k8s.io', '-n', NS, '--field-selector', `regarding.uid=${mc.metadata.uid}`]);
    assert.ok(
      events.items.some((e: Json) => e.reason === 'Finalizing'),
      JSON.stringify(events.items.map((e: Json) => e.reason)),
    );
  });

  test('resync: every Memcached in every namespace, over several list pages, gets one Resync message', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `resync-${String(i).padStart(2, '0')}`);
    assert.equal((await kubectl(['create', 'namespace', 'other'])).code, 0);
    const docs = names.map((name, i) => manifest(name, 'spec:\n  size: 0\n').replace(`namespace: ${NS}`, `namespace: ${i % 2 ? 'other' : NS}`));
    const created = await kubectl(['apply', '-f', '-'], docs.join('\n---\n'));
    assert.equal(created.code, 0, created.stderr);
    const queueUrl = await broker.createQueue({ name: 'resync-it' });
    const expected = (await getJson(['get', 'mc', '-A'])).items.map((o: Json) => `${o.metadata.namespace}/${o.metadata.name}`).sort();
    const resync = createResyncHandler({
      kinds: [MEMCACHED],
      env: { OPERLESS_QUEUE_URL: queueUrl, OPERLESS_CLUSTER: CLUSTER },
      clientFor: async () => {
        const client = await createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: fn.kubeconfigPath } }, env: {} })(CLUSTER);
        // Small pages, to go through continue tokens.
        return { list: (kind, options) => client.list(kind, { ...options, limit: 5 }) };
      },
      sqs,
    });
    const report = await resync({}, { getRemainingTimeInMillis: () => 60_000 });
    assert.equal(report.listed, expected.length);
    assert.equal(report.sent, expected.length);
    assert.ok(report.pages >= 3, `pages: ${report.pages}`);
    const seen: string[] = [];
    for (let i = 0; i < 20 && seen.length < expected.length; i++) {
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      for (const m of got.Messages ?? []) {
        const body = JSON.parse(m.Body ?? '{}') as Json;
        assert.equal(body.reason, 'Resync');
        assert.equal(body.cluster, CLUSTER);
        seen.push(`${body.namespace}/${body.name}`);
      }
    }
    assert.deepEqual(seen.sort(), expected);
  });
});
