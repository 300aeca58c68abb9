/**
 * End to end, through the parts that ship: the Memcached operator on a real kube-apiserver
 * (+ etcd + kube-controller-manager with garbage collection and the Deployment/ReplicaSet
 * controllers), the forwarder's esbuild bundle as its own process, ElasticMQ, and the
 * function bundle that `serverless package` produces, consumed the way Lambda's event
 * source mapping does and running under the function's own least-privilege RBAC
 * (infra/rbac). `kubectl` is the user's client. Pods are marked Ready by the simulated
 * kubelet (no kubelet runs here). The last test runs the same parts in namespace-scoped mode.
 *
 * The main flow (apply the sample → converge → scale → a deleted child comes back → delete,
 * nothing in the DLQ) runs once per ordering, each with its own forwarder and function and
 * its own namespace: `unordered` (a standard work queue) in `default`, then `per-key` in
 * `per-key` — a FIFO work queue and FIFO DLQ, the forwarder sending in the object key's group,
 * and the function with a second event source on the standard delay queue (its batches go to
 * the delay mover), as serverless.yml deploys `ordering: per-key`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { stringify } from 'yaml';
import { startBroker, startControlPlane, WORKLOAD_CONTROLLERS, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { applyForwarderIdentity, applyScopedForwarderIdentity, applyScopedFunctionIdentity } from '../support/identities.ts';
import { startLambdaRunner, type LambdaRunner, type SQSHandlerFn } from '../../src/local/lambda-runner.ts';
import { decodeMessage, encodeMessage, newMessage } from '../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import { createKubeClient } from '../../src/kube/client.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { defineController } from '../../src/core/controller/controller.ts';
import { memcachedController } from '../../src/memcached/controller.ts';
import { startPodSimulator, type PodSimulator } from '../../src/local/pod-simulator.ts';
import { watchesFor } from '../../src/devloop/project.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { ORDERINGS, type Ordering } from '../../src/contract/ordering.ts';
import { devQueueNames } from '../../src/devloop/dev-queues.ts';
import { clusterHelpers, spawnForwarder } from './cluster-helpers.ts';
import { extractBundle, packageService, ROOT } from '../../scripts/package.ts';

const CRD = join(ROOT, 'infra', 'crds', 'memcacheds.cache.example.com.yaml');
const SAMPLE = join(ROOT, 'infra', 'samples', 'memcached.yaml');
const RBAC = join(ROOT, 'infra', 'rbac', 'memcached-function.yaml');

let cp: ControlPlane;
let broker: Broker;
let work: string;
let simulator: PodSimulator | undefined;
let bundle: string;
let resyncBundle: string;
let forwarderBundle: string;
let forwarderKubeconfig: string;
let fnKubeconfig: string;

/** A forwarder and a function consuming its queues: one per ordering of the main flow, one namespace-scoped (the last test). */
interface Operator {
  forwarder?: ChildProcess;
  exit?: Promise<number | null>;
  /** The work queue's runner, and with per-key ordering the delay queue's. */
  runners: LambdaRunner[];
  readonly lines: string[];
}

/** The operator of the main flow now running. */
let current: Operator = { runners: [], lines: [] };
const scoped: Operator = { runners: [], lines: [] };
const { until, kubectl, getJson } = clusterHelpers(
  () => cp,
  () => current.lines,
);
/** `until` with the namespace-scoped forwarder's log tail in a failure. */
const untilScoped = clusterHelpers(
  () => cp,
  () => scoped.lines,
).until;

/** The queues of each ordering, as `operless dev` names a function's (`devQueueNames`). */
const QUEUES = Object.fromEntries(ORDERINGS.map((o) => [o, devQueueNames('memcached', o)])) as Record<Ordering, ReturnType<typeof devQueueNames>>;
/** The main flow's namespace in each ordering. */
const NAMESPACE: Record<Ordering, string> = { unordered: 'default', 'per-key': 'per-key' };

async function stopOperator(op: Operator): Promise<void> {
  await Promise.all(op.runners.splice(0).map((r) => r.stop()));
  if (op.forwarder && op.forwarder.exitCode === null) {
    op.forwarder.kill('SIGTERM');
    await op.exit;
  }
}

/**
 * A fresh instance of a bundle (`tag` makes its URL new): the handler reads its environment when it
 * loads. Its chunks keep their URLs, so instances share them (the lazily loaded SDKs and eks.ts:
 * no per-instance state at module level); the environment is read by the entry.
 */
async function freshModule<T>(path: string, tag: string): Promise<T> {
  return (await import(`${pathToFileURL(path).href}?${tag}`)) as T;
}

/** The forwarder bundle as its own process, watching what the Memcached controller reconciles and owns, sending to `queue`. */
function startForwarder(file: string, options: { queue: string; kubeconfigPath: string; lines: string[]; namespaces?: string[] }) {
  const config = {
    clusterId: 'e2e',
    ...(options.namespaces ? { namespaces: options.namespaces } : {}),
    queue: { url: broker.queueUrl(options.queue), region: broker.region },
    ...watchesFor([defineController(memcachedController)]),
    leaderElection: { enabled: false },
    server: { port: 0 },
    coalesceWindowMs: 50,
  };
  writeFileSync(join(work, file), stringify(config));
  return spawnForwarder({
    bundle: forwarderBundle,
    configPath: join(work, file),
    kubeconfigPath: options.kubeconfigPath,
    sqsEndpoint: broker.endpoint,
    lines: options.lines,
  });
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'operless-e2e-'));
  cp = await startControlPlane({ controllers: WORKLOAD_CONTROLLERS, crds: [CRD] });
  const pair = (name: string, dlq: string) => ({ name, visibilityTimeoutSeconds: 60, dlq: { name: dlq, maxReceiveCount: 5 } });
  broker = await startBroker({
    queues: [
      ...Object.values(QUEUES).flatMap((q) => [pair(q.queue, q.dlq), ...(q.delay ? [pair(q.delay.queue, q.delay.dlq)] : [])]),
      pair('scoped', 'scoped-dlq'),
    ],
  });

  // The function's identity: exactly the RBAC shipped in infra/rbac.
  const applied = await cp.kubectl(['apply', '-f', RBAC]);
  assert.equal(applied.code, 0, applied.stderr);
  fnKubeconfig = (await cp.identity('memcached-function', ['operless:memcached'])).kubeconfigPath;

  // The shipped function bundle, out of the zip `serverless package` made.
  const packaged = await packageService({ outDir: join(work, 'package') });
  const fn = packaged.functions.find((f) => f.name === 'memcached');
  const resyncFn = packaged.functions.find((f) => f.name === 'resync');
  assert.ok(fn && resyncFn, 'serverless package produced the memcached and resync functions');
  bundle = extractBundle(fn);
  resyncBundle = extractBundle(resyncFn);

  // The forwarder's identity: the shipped ServiceAccount with exactly the RBAC of the rendered
  // manifests (never admin).
  forwarderKubeconfig = (await applyForwarderIdentity(cp)).identity.kubeconfigPath;
  forwarderBundle = (await bundleForwarder(join(work, 'forwarder.mjs'))).outFile;
  Object.assign(process.env, {
    OPERLESS_CLUSTER: 'e2e',
    OPERLESS_METRICS: 'off',
    AWS_REGION: broker.region,
    AWS_ENDPOINT_URL_SQS: broker.endpoint,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });

  const admin = createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'e2e-kubelet' });
  simulator = startPodSimulator(admin, { log: silentLogger, intervalMs: 300 });
});

after(async () => {
  await simulator?.stop();
  await stopOperator(scoped);
  await stopOperator(current);
  await broker?.stop();
  await cp?.stop();
  rmSync(work, { recursive: true, force: true });
});

interface Mc {
  metadata: { generation: number; uid: string; finalizers?: string[] };
  status?: { readyReplicas?: number; nodes?: string[]; observedGeneration?: number; conditions?: { type: string; status: string }[] };
}
interface Deploy {
  metadata: { uid: string; ownerReferences?: { kind: string; controller?: boolean }[] };
  spec: { replicas: number };
}

const available = (mc: Mc | undefined) =>
  mc?.status?.observedGeneration === mc?.metadata.generation && mc?.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') === true;

for (const ordering of ORDERINGS) {
  describe(`${ordering} ordering`, () => {
    const ns = NAMESPACE[ordering];
    const queues = QUEUES[ordering];
    const operator: Operator = { runners: [], lines: [] };

    before(async () => {
      if (ns !== 'default') await kubectl('create', 'namespace', ns);
      // The forwarder bundle as its own process, watching what the controller reconciles and
      // owns; per-key it sends to the FIFO queue, each message in its object key's group.
      ({ child: operator.forwarder, exit: operator.exit } = startForwarder(`forwarder-${ordering}.yaml`, {
        queue: queues.queue,
        kubeconfigPath: forwarderKubeconfig,
        lines: operator.lines,
      }));
      current = operator;
      await until('the forwarder is running', async () => operator.lines.some((l) => l.includes('forwarder running')), 30_000);
      // The function, as Lambda would run it: environment from serverless.yml, bundle from the
      // zip; per-key, the delay queue is its second event source (the mover's batches).
      Object.assign(process.env, {
        OPERLESS_QUEUE_URL: broker.queueUrl(queues.queue),
        OPERLESS_DLQ_URL: broker.queueUrl(queues.dlq),
        OPERLESS_DELAY_QUEUE_URL: queues.delay ? broker.queueUrl(queues.delay.queue) : '',
        OPERLESS_KUBECONFIG: fnKubeconfig,
      });
      const { handler } = await freshModule<{ handler: SQSHandlerFn }>(bundle, ordering);
      for (const queue of [queues.queue, ...(queues.delay ? [queues.delay.queue] : [])]) {
        operator.runners.push(
          await startLambdaRunner({
            queueUrl: broker.queueUrl(queue),
            sqs: broker.sqs(),
            handler,
            functionName: 'memcached',
            batchSize: 10,
            batchWindowSeconds: 1,
            maxConcurrency: 3,
            timeoutSeconds: 30,
            logger: silentLogger,
          }),
        );
      }
    });

    after(async () => {
      await stopOperator(operator);
    });

    test('kubectl apply of the sample: a Deployment of 3, a headless Service, status with the pod names', async () => {
      await kubectl('apply', '-n', ns, '-f', SAMPLE);
      await until(
        'the Deployment exists with 3 replicas',
        async () => (await getJson<Deploy>('deployment', 'memcached-sample', '-n', ns))?.spec.replicas === 3,
      );
      const deployment = (await getJson<Deploy>('deployment', 'memcached-sample', '-n', ns))!;
      assert.ok(
        deployment.metadata.ownerReferences?.some((o) => o.kind === 'Memcached' && o.controller),
        'the Deployment has a controller owner reference',
      );
      const service = await getJson<{ spec: { clusterIP: string } }>('service', 'memcached-sample', '-n', ns);
      assert.equal(service?.spec.clusterIP, 'None', 'the Service is headless');

      const wait = await cp.kubectl(['wait', '-n', ns, '--for=condition=Available', 'memcached/memcached-sample', '--timeout=90s']);
      assert.equal(wait.code, 0, `kubectl wait failed: ${wait.stderr}`);
      await until('status lists 3 ready pods', async () => {
        const mc = await getJson<Mc>('memcached', 'memcached-sample', '-n', ns);
        return available(mc) && mc?.status?.readyReplicas === 3 && mc.status.nodes?.length === 3;
      });
      const mc = (await getJson<Mc>('memcached', 'memcached-sample', '-n', ns))!;
      assert.deepEqual(mc.metadata.finalizers, ['cache.example.com/finalizer']);
      for (const node of mc.status!.nodes!) assert.match(node, /^memcached-sample-/);
    });

    test('kubectl get mc shows the printer columns', async () => {
      const table = await kubectl('get', 'mc', '-n', ns);
      const [header, row] = table.trim().split('\n');
      assert.match(header!, /^NAME\s+SIZE\s+READY\s+AVAILABLE\s+AGE/);
      assert.match(row!, /^memcached-sample\s+3\s+3\s+True\s+/);
    });

    test('changing spec.size: the Deployment follows and status catches up at the new generation', async () => {
      await kubectl('patch', '-n', ns, 'memcached', 'memcached-sample', '--type=merge', '-p', '{"spec":{"size":5}}');
      await until('the Deployment has 5 replicas', async () => (await getJson<Deploy>('deployment', 'memcached-sample', '-n', ns))?.spec.replicas === 5);
      await until('Available at generation 2 with 5 ready', async () => {
        const mc = await getJson<Mc>('memcached', 'memcached-sample', '-n', ns);
        return mc?.metadata.generation === 2 && available(mc) && mc.status?.readyReplicas === 5;
      });
      const events = await kubectl('get', 'events', '-n', ns, '--field-selector', 'involvedObject.kind=Memcached', '-o', 'json');
      const reasons = (JSON.parse(events) as { items: { reason: string }[] }).items.map((e) => e.reason);
      assert.ok(reasons.includes('Scaled'), `a Scaled event was recorded (events: ${reasons.join(', ')})`);
    });

    test('a Deployment deleted by hand comes back', async () => {
      const before = (await getJson<Deploy>('deployment', 'memcached-sample', '-n', ns))!;
      await kubectl('delete', '-n', ns, 'deployment', 'memcached-sample', '--wait=true');
      await until('the Deployment is recreated', async () => {
        const d = await getJson<Deploy>('deployment', 'memcached-sample', '-n', ns);
        return d !== undefined && d.metadata.uid !== before.metadata.uid && d.spec.replicas === 5;
      });
    });

    test('deleting the Memcached runs the finalizer, and garbage collection removes its children', async () => {
      await kubectl('delete', '-n', ns, 'memcached', 'memcached-sample', '--wait=false');
      await until('the Memcached is gone', async () => (await getJson<Mc>('memcached', 'memcached-sample', '-n', ns)) === undefined);
      const events = await kubectl('get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=memcached-sample', '-o', 'json');
      const reasons = (JSON.parse(events) as { items: { reason: string }[] }).items.map((e) => e.reason);
      assert.ok(reasons.includes('Finalizing'), `the finalizer recorded its Event (events: ${reasons.join(', ')})`);
      await until(
        'the Deployment and Service are garbage-collected',
        async () =>
          (await getJson('deployment', 'memcached-sample', '-n', ns)) === undefined && (await getJson('service', 'memcached-sample', '-n', ns)) === undefined,
        90_000,
      );
    });

    test('nothing ended in a dead-letter queue, and the forwarder never failed to send', async () => {
      for (const dlq of [queues.dlq, ...(queues.delay ? [queues.delay.dlq] : [])]) {
        const attrs = await broker.sqs().send(
          new GetQueueAttributesCommand({
            QueueUrl: broker.queueUrl(dlq),
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
          }),
        );
        assert.equal(attrs.Attributes?.ApproximateNumberOfMessages, '0', `${dlq} is empty`);
        assert.equal(attrs.Attributes?.ApproximateNumberOfMessagesNotVisible, '0', `${dlq} is empty`);
      }
      const errors = operator.lines.filter((l) => /"level":"error"/.test(l));
      assert.equal(errors.length, 0, errors.join('\n'));
      assert.ok(operator.runners[0]!.stats.invocations > 0);
      for (const runner of operator.runners) assert.equal(runner.stats.failedInvocations, 0);
      assert.ok(readFileSync(CRD, 'utf8').includes('memcacheds.cache.example.com'));
    });
  });
}

/**
 * Namespace-scoped operation (docs/security.md): a second forwarder and function for the
 * namespace `scoped-in` only, under the namespace-scoped RBAC (the chart rendered with
 * `namespaces`; the function's rules as `operless rbac --namespaces` rewrites them). The
 * cluster-wide pairs have stopped (each ordering's after the main flow), so nothing else reconciles. Both Memcacheds exist before
 * the scoped forwarder starts: its start-up list and Resync, and the resync function, reach
 * the one in `scoped-in` and never the one in `scoped-out` (a cluster-wide list would, and is
 * 403 for these identities anyway). A message for `scoped-out` sent by hand goes to the DLQ as
 * `UnknownNamespace`.
 */
test('namespace-scoped: a Memcached in the listed namespace is reconciled; one outside it is never touched and never produces a message', async () => {
  for (const ns of ['scoped-in', 'scoped-out']) await kubectl('create', 'namespace', ns);
  const fnIdentity = (await applyScopedFunctionIdentity(cp, ['scoped-in'])).identity;
  const fwdIdentity = await applyScopedForwarderIdentity(cp, ['scoped-in']);
  for (const ns of ['scoped-in', 'scoped-out']) await kubectl('apply', '-n', ns, '-f', SAMPLE);

  ({ child: scoped.forwarder, exit: scoped.exit } = startForwarder('forwarder-scoped.yaml', {
    queue: 'scoped',
    kubeconfigPath: fwdIdentity.identity.kubeconfigPath,
    lines: scoped.lines,
    namespaces: ['scoped-in'],
  }));

  // The function bundles again (a fresh module instance: the handler reads its environment when it loads).
  Object.assign(process.env, {
    OPERLESS_QUEUE_URL: broker.queueUrl('scoped'),
    OPERLESS_DLQ_URL: broker.queueUrl('scoped-dlq'),
    OPERLESS_DELAY_QUEUE_URL: '',
    OPERLESS_NAMESPACES: 'scoped-in',
    OPERLESS_KUBECONFIG: fnIdentity.kubeconfigPath,
  });
  const reconcile = await freshModule<{ handler: SQSHandlerFn }>(bundle, 'scoped');
  const resync = await freshModule<{ handler: (event: unknown) => Promise<{ listed: number; sent: number }> }>(resyncBundle, 'scoped');
  const keys: string[] = [];
  scoped.runners.push(
    await startLambdaRunner({
      queueUrl: broker.queueUrl('scoped'),
      sqs: broker.sqs(),
      handler: (event, context) => {
        for (const record of event.Records) {
          const decoded = decodeMessage(record.body);
          keys.push(decoded.ok ? `${decoded.message.namespace}/${decoded.message.name} ${decoded.message.reason}` : 'invalid');
        }
        return reconcile.handler(event, context);
      },
      functionName: 'memcached-scoped',
      batchSize: 10,
      batchWindowSeconds: 1,
      maxConcurrency: 2,
      timeoutSeconds: 30,
      logger: silentLogger,
    }),
  );

  await untilScoped('the scoped forwarder is running', async () => scoped.lines.some((l) => l.includes('forwarder running')), 30_000);
  await untilScoped(
    'the Memcached in scoped-in is Available',
    async () => available(await getJson<Mc>('memcached', 'memcached-sample', '-n', 'scoped-in')),
    90_000,
  );
  // The scheduled resync, as Lambda runs it: it lists scoped-in only (a cluster-wide list is 403).
  const resyncs = () => keys.filter((k) => k === 'scoped-in/memcached-sample Resync').length;
  const before = resyncs();
  const report = await resync.handler({});
  assert.deepEqual([report.listed, report.sent], [1, 1], `the resync listed and sent the one Memcached in scoped-in: ${JSON.stringify(report)}`);
  await untilScoped("the resync function's message was handled", async () => resyncs() > before && (await queueDepth('scoped')) === 0, 30_000);

  const outside = await getJson<Mc & { apiVersion: string }>('memcached', 'memcached-sample', '-n', 'scoped-out');
  assert.ok(outside, 'the Memcached in scoped-out exists');
  assert.equal(outside.status, undefined, 'no status was written outside the namespaces');
  assert.equal(outside.metadata.finalizers, undefined, 'no finalizer was added outside the namespaces');
  assert.equal(await getJson('deployment', 'memcached-sample', '-n', 'scoped-out'), undefined, 'no Deployment outside the namespaces');
  assert.deepEqual(
    keys.filter((k) => k.startsWith('scoped-out/')),
    [],
    'no message ever named an object outside the namespaces',
  );
  assert.ok(!scoped.lines.some((l) => l.includes('scoped-out')), 'the scoped forwarder never logged an object outside its namespaces');

  // A message for scoped-out sent by hand (anyone who may send to the queue): DLQ UnknownNamespace, nothing touched.
  const message = newMessage(
    { cluster: 'e2e', apiVersion: outside.apiVersion, kind: 'Memcached', namespace: 'scoped-out', name: 'memcached-sample', uid: outside.metadata.uid },
    'Added',
    Date.now(),
  );
  await broker.sqs().send(new SendMessageCommand({ QueueUrl: broker.queueUrl('scoped'), MessageBody: encodeMessage(message) }));
  await untilScoped('the hand-sent message is in the DLQ', async () => (await queueDepth('scoped-dlq')) === 1, 30_000);
  const dead = await broker
    .sqs()
    .send(new ReceiveMessageCommand({ QueueUrl: broker.queueUrl('scoped-dlq'), MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }));
  assert.equal(dead.Messages?.[0]?.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue, 'UnknownNamespace');
  assert.equal(await getJson('deployment', 'memcached-sample', '-n', 'scoped-out'), undefined, 'still no Deployment outside the namespaces');
  assert.equal(scoped.lines.filter((l) => /"level":"error"/.test(l)).length, 0, scoped.lines.filter((l) => /"level":"error"/.test(l)).join('\n'));
});

async function queueDepth(queue: string): Promise<number> {
  const attrs = await broker.sqs().send(
    new GetQueueAttributesCommand({
      QueueUrl: broker.queueUrl(queue),
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(attrs.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(attrs.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
}
