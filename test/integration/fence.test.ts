/**
 * The owner-generation fence (`operless.dev/owner-generation`, src/kube/owned.ts) against a
 * tenant, on a REAL kube-apiserver with the Memcached function under its least-privilege RBAC
 * and real SQS events (ElasticMQ): a generation written on the Deployment by someone who can
 * patch it — under the controller's own field manager name, as an Update or as a server-side
 * apply — must not freeze the Deployment. The owner's next change still reaches the child: no
 * 409 "Overtaken", no retry, nothing dead-lettered. The fence's real guarantee (a reconcile
 * of an older owner generation never applies its older desired state) stays covered by the
 * overtaken races of test/integration/runtime.test.ts and here by one stale reconcile.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { crdPaths } from '../../src/crd/generate.ts';
import { CRD_DIR, resources } from '../../src/resources.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler, type SqsBatchHandler } from '../../src/core/handler/handler.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { createSqsSender } from '../../src/queue/sqs.ts';
import { buildSqsEvent, createLambdaContext, queueArnFromUrl } from '../../src/local/lambda-runner.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { noMetrics } from '../../src/core/reconcile/metrics.ts';
import { applyOwnedIfChanged, OWNER_GENERATION_ANNOTATION } from '../../src/kube/owned.ts';
import { isConflict } from '../../src/kube/errors.ts';
import { memcachedController, FIELD_MANAGER } from '../../src/memcached/controller.ts';
import { DEPLOYMENTS } from '../../src/kube/kinds.ts';
import { desiredDeployment } from '../../src/memcached/desired.ts';
import { MEMCACHED, type Memcached } from '../../src/memcached/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';

type Json = Record<string, any>;
const NS = 'default';
const CLUSTER = 'it';

let cp: ControlPlane;
let broker: Broker;
let sqs: SQSClient;
let fn: Identity;
let handler: SqsBatchHandler;
let workQueue: string;
let dlq: string;

async function kubectl(args: string[], input?: string) {
  return cp.kubectl(args, input === undefined ? {} : { input });
}

async function getJson(args: string[]): Promise<Json> {
  const r = await kubectl([...args, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Json;
}

before(async () => {
  cp = await startControlPlane({ crds: crdPaths(CRD_DIR, resources) });
  broker = await startBroker();
  sqs = broker.sqs();
  workQueue = broker.queueUrl('work');
  dlq = broker.queueUrl('work-dlq');
  const rbac = readFileSync(new URL('../../infra/rbac/memcached-function.yaml', import.meta.url), 'utf8');
  const applied = await kubectl(['apply', '-f', '-'], rbac);
  assert.equal(applied.code, 0, applied.stderr);
  fn = await cp.identity('memcached-function', ['operless:memcached']);
  handler = toSqsHandler(defineController(memcachedController), {
    queueUrl: workQueue,
    deadLetterQueueUrl: dlq,
    cluster: CLUSTER,
    clients: createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: fn.kubeconfigPath } }, env: {} }),
    sender: createSqsSender(sqs),
    log: silentLogger,
    metrics: noMetrics,
  });
});
after(async () => {
  await broker?.stop();
  await cp?.stop();
});

/** Sends a `Modified` for the Memcached through the real work queue, receives it, invokes the function and settles the record. */
async function reconcile(name: string) {
  const body = encodeMessage(newMessage({ cluster: CLUSTER, apiVersion: MEMCACHED.apiVersion, kind: MEMCACHED.kind, namespace: NS, name }, 'Modified'));
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
  const response = await handler(event, context);
  // As Lambda's event source does: a record the function did not report failed is deleted.
  if (response.batchItemFailures.length === 0) await sqs.send(new DeleteMessageCommand({ QueueUrl: workQueue, ReceiptHandle: ours[0]!.ReceiptHandle }));
  return response;
}

/** Every message in a queue, visible, delayed or in flight. */
async function depth(queueUrl: string): Promise<number> {
  const names = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesDelayed', 'ApproximateNumberOfMessagesNotVisible'] as const;
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [...names] }));
  return names.reduce((sum, name) => sum + Number(Attributes?.[name] ?? 0), 0);
}

async function createMemcached(name: string, size: number): Promise<void> {
  const manifest = `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: ${name}\n  namespace: ${NS}\nspec:\n  size: ${size}\n`;
  const applied = await kubectl(['apply', '-f', '-'], manifest);
  assert.equal(applied.code, 0, applied.stderr);
  assert.deepEqual((await reconcile(name)).batchItemFailures, []);
  assert.equal((await getJson(['get', 'deployment', name, '-n', NS])).spec.replicas, size);
}

/** Changes the owner's spec.size and reconciles it: the Deployment must follow, with no retry and nothing dead-lettered. */
async function scaleAndExpectFollow(name: string, size: number): Promise<void> {
  const patched = await kubectl(['patch', 'memcached', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { size } })]);
  assert.equal(patched.code, 0, patched.stderr);
  const response = await reconcile(name);
  assert.deepEqual(response.batchItemFailures, []);
  const deployment = await getJson(['get', 'deployment', name, '-n', NS]);
  assert.equal(deployment.spec.replicas, size, 'the child follows its owner');
  const owner = await getJson(['get', 'memcached', name, '-n', NS]);
  assert.equal(
    deployment.metadata.annotations[OWNER_GENERATION_ANNOTATION],
    String(owner.metadata.generation),
    'the forged value is replaced by the live generation',
  );
  assert.equal(await depth(workQueue), 0, 'no retry was sent (no 409 Overtaken)');
  assert.equal(await depth(dlq), 0, 'nothing dead-lettered');
}

test("a tenant's `kubectl annotate --field-manager=operless-memcached` of a huge owner generation does not freeze the Deployment", async () => {
  await createMemcached('spoofed', 1);
  const forged = await kubectl([
    'annotate',
    'deploy',
    'spoofed',
    '-n',
    NS,
    `${OWNER_GENERATION_ANNOTATION}=999999999999`,
    '--overwrite',
    '--field-manager=operless-memcached',
  ]);
  assert.equal(forged.code, 0, forged.stderr);
  assert.equal((await getJson(['get', 'deployment', 'spoofed', '-n', NS])).metadata.annotations[OWNER_GENERATION_ANNOTATION], '999999999999');
  await scaleAndExpectFollow('spoofed', 3);
});

test("a forged generation server-side applied under the controller's own field manager refuses nothing either (bounded by the live owner's generation)", async () => {
  await createMemcached('applied', 1);
  const live = await getJson(['get', 'deployment', 'applied', '-n', NS]);
  // A tenant copies the live Deployment and applies it as if they were the controller.
  const { managedFields: _m, resourceVersion: _rv, uid: _uid, creationTimestamp: _c, generation: _g, ...metadata } = live.metadata;
  const copy = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { ...metadata, annotations: { ...metadata.annotations, [OWNER_GENERATION_ANNOTATION]: '999999999999' } },
    spec: live.spec,
  };
  const forged = await kubectl(['apply', '--server-side', `--field-manager=${FIELD_MANAGER}`, '--force-conflicts', '-f', '-'], JSON.stringify(copy));
  assert.equal(forged.code, 0, forged.stderr);
  const after = await getJson(['get', 'deployment', 'applied', '-n', NS, '--show-managed-fields']);
  const entry = (after.metadata.managedFields as Json[]).find((e) => JSON.stringify(e.fieldsV1 ?? {}).includes(OWNER_GENERATION_ANNOTATION));
  assert.deepEqual([entry?.manager, entry?.operation], [FIELD_MANAGER, 'Apply'], "indistinguishable from the controller's own apply");
  await scaleAndExpectFollow('applied', 2);
});

test('the fence still refuses a reconcile of an older owner generation after a newer one applied (real API server)', async () => {
  await createMemcached('stale', 1);
  const client = (await createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: fn.kubeconfigPath } }, env: {} })(CLUSTER)).with({
    fieldManager: FIELD_MANAGER,
  });
  const older = await client.get<Memcached>(MEMCACHED, 'stale', NS);
  assert.ok(older);
  // A newer reconcile: the owner moves to size 4 and the function applies it.
  await scaleAndExpectFollow('stale', 4);
  const live = await client.get<KubeObject>(DEPLOYMENTS, 'stale', NS);
  const fence = { fieldManager: FIELD_MANAGER, readOwner: () => client.get<Memcached>(MEMCACHED, 'stale', NS) };
  await assert.rejects(
    applyOwnedIfChanged((kind, child) => client.apply(kind, child), older, DEPLOYMENTS, desiredDeployment(older) as KubeObject, live, fence),
    (err: unknown) => isConflict(err) && /newer than the generation/.test(String(err)),
  );
  assert.equal((await getJson(['get', 'deployment', 'stale', '-n', NS])).spec.replicas, 4, 'the older desired state was not applied');
});
