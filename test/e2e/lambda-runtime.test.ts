/**
 * The shipped bundle under Lambda's own runtime: the `memcached` function out of the zip that
 * `serverless package` makes, unpacked into a task root outside the repository (no
 * node_modules: it resolves only what it carries, as in a container image), run by AWS's
 * Node.js runtime interface client under AWS's Runtime Interface Emulator, against the real
 * kube-apiserver + etcd and ElasticMQ. Events are real SQS messages received from ElasticMQ
 * and shaped as Lambda's event source mapping shapes them.
 *
 * - A reconcile: `{ batchItemFailures: [] }` as Lambda returns it, the Deployment on the API server.
 * - A poison record: acknowledged, in the DLQ with its reason (the SQS client is in the bundle).
 * - A reconcile that hangs (the API server behind a stalling proxy), under a short timeout: the
 *   handler answers before the emulator's timeout, its budget derived from the runtime's
 *   deadline (`Lambda-Runtime-Deadline-Ms` → `getRemainingTimeInMillis`).
 * - An exception at init (a bad setting): the emulator's answer names it, and the log shows it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand, SendMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { startLambdaEmulator, type LambdaEmulator, type LambdaInvocation } from '../../src/testing/lambda-emulator.ts';
import { buildSqsEvent, queueArnFromUrl } from '../../src/local/lambda-runner.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import { extractBundle, packageService, ROOT, type PackagedFunction } from '../../scripts/package.ts';
import { startStallProxy, type StallProxy } from '../support/stall-proxy.ts';

const CRD = join(ROOT, 'infra', 'crds', 'memcacheds.cache.example.com.yaml');
const SAMPLE = join(ROOT, 'infra', 'samples', 'memcached.yaml');
const RBAC = join(ROOT, 'infra', 'rbac', 'memcached-function.yaml');
const HANDLER = 'functions/memcached.handler';
/** The hang scenario's timeout: short, so the file stays fast; the logic is the same at 60 s. */
const SHORT_TIMEOUT_S = 6;
/**
 * Its reserve (OPERLESS_BUDGET_RESERVE_MS): the handler answers when a tenth of it is left, and
 * the runtime must still post that answer before the emulator's timer fires — 400 ms, not the
 * default's 120 ms, so a loaded CI machine cannot turn the answer into a timeout.
 */
const SHORT_RESERVE_MS = 4000;

let cp: ControlPlane;
let broker: Broker;
let work: string;
let taskRoot: string;
let timeoutSeconds: number;
let functionEnv: Record<string, string>;
let emulator: LambdaEmulator | undefined;
let stall: StallProxy | undefined;
const extra: LambdaEmulator[] = [];

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'operless-ric-'));
  cp = await startControlPlane({ crds: [CRD] });
  broker = await startBroker({ queues: [{ name: 'work', visibilityTimeoutSeconds: 60, dlq: { name: 'work-dlq', maxReceiveCount: 5 } }] });
  const applied = await cp.kubectl(['apply', '-f', RBAC]);
  assert.equal(applied.code, 0, applied.stderr);
  const fnIdentity = await cp.identity('memcached-function', ['operless:memcached']);

  const packaged = await packageService({ outDir: join(work, 'package') });
  const fn = packaged.functions.find((f) => f.name === 'memcached') as PackagedFunction;
  assert.ok(fn, 'serverless package produced the memcached function');
  taskRoot = join(work, 'task');
  extractBundle(fn, taskRoot);
  const props = packaged.template.Resources.MemcachedLambdaFunction?.Properties as { Timeout: number; MemorySize: number; Handler: string };
  assert.equal(props.Handler, HANDLER);
  timeoutSeconds = props.Timeout;

  functionEnv = {
    OPERLESS_QUEUE_URL: broker.queueUrl('work'),
    OPERLESS_DLQ_URL: broker.queueUrl('work-dlq'),
    OPERLESS_CLUSTER: 'e2e',
    OPERLESS_KUBECONFIG: fnIdentity.kubeconfigPath,
    OPERLESS_METRICS: 'off',
    AWS_REGION: broker.region,
    AWS_ENDPOINT_URL_SQS: broker.endpoint,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_SESSION_TOKEN: 'test',
  };
  emulator = await startLambdaEmulator({ taskRoot, handler: HANDLER, timeoutSeconds, memoryMb: props.MemorySize, functionName: 'memcached', env: functionEnv });

  const apiUrl = new URL(cp.kubeConfig.getCurrentCluster()?.server ?? '');
  stall = await startStallProxy({ host: apiUrl.hostname, port: Number(apiUrl.port) }, 'stall');
  writeFileSync(join(work, 'stalled.kubeconfig'), fnIdentity.kubeconfigYaml.replaceAll(apiUrl.origin, stall.url('https')));
});

after(async () => {
  for (const e of [emulator, ...extra]) await e?.stop();
  await stall?.close();
  await broker?.stop();
  await cp?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Sends `body` to the work queue and receives it back as the event source mapping would. */
async function received(body: string): Promise<Message> {
  const sqs = broker.sqs();
  const sent = await sqs.send(new SendMessageCommand({ QueueUrl: broker.queueUrl('work'), MessageBody: body }));
  let found: Message | undefined;
  await waitUntil(
    'the sent message is received',
    async () => {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: broker.queueUrl('work'),
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      found ??= out.Messages?.find((m) => m.MessageId === sent.MessageId);
      return found !== undefined;
    },
    { timeoutMs: 20_000 },
  );
  return found as Message;
}

const eventOf = (message: Message) =>
  buildSqsEvent([message], { eventSourceARN: queueArnFromUrl(broker.queueUrl('work'), broker.region), awsRegion: broker.region });

const reconcileBody = async (): Promise<string> => {
  const mc = await cp.kubectl(['get', 'memcached', 'memcached-sample', '-n', 'default', '-o', 'json']);
  assert.equal(mc.code, 0, mc.stderr);
  const { metadata } = JSON.parse(mc.stdout) as { metadata: { uid: string; resourceVersion: string } };
  return encodeMessage(
    newMessage(
      { cluster: 'e2e', apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'memcached-sample', uid: metadata.uid },
      'Added',
    ),
  );
};

function describe(invocation: LambdaInvocation, em: LambdaEmulator): string {
  return `status ${invocation.status}, body ${invocation.body.slice(0, 500)}\n--- emulator output (tail) ---\n${em.output().split('\n').slice(-25).join('\n')}`;
}

test('a reconcile under aws-lambda-ric: batchItemFailures as Lambda returns it, the Deployment on the API server, REPORT with the init', async (t) => {
  const em = emulator as LambdaEmulator;
  const apply = await cp.kubectl(['apply', '-n', 'default', '-f', SAMPLE]);
  assert.equal(apply.code, 0, apply.stderr);
  const message = await received(await reconcileBody());
  const invocation = await em.invoke(eventOf(message));
  assert.equal(invocation.status, 200, describe(invocation, em));
  assert.deepEqual(invocation.payload, { batchItemFailures: [] }, describe(invocation, em));
  const deployment = await cp.kubectl(['get', 'deployment', 'memcached-sample', '-n', 'default', '-o', 'json']);
  assert.equal(deployment.code, 0, `the reconcile created the Deployment: ${deployment.stderr}`);
  assert.equal((JSON.parse(deployment.stdout) as { spec: { replicas: number } }).spec.replicas, 3);
  assert.ok(invocation.report, `a REPORT line for ${invocation.requestId}\n${em.output()}`);
  assert.ok(invocation.report.initDurationMs !== undefined, 'the first invocation reports an Init Duration');
  assert.ok(invocation.runtimeInitMs !== undefined, 'the emulator reported the runtime init (INIT REPORT)');
  t.diagnostic(
    `cold invocation: runtime init ${invocation.runtimeInitMs} ms, REPORT Duration ${invocation.report.durationMs} ms (Init Duration ${invocation.report.initDurationMs} ms), timeout ${timeoutSeconds} s`,
  );
});

test('a poison record is acknowledged and lands in the DLQ with its reason (the SQS client ships in the bundle)', async () => {
  const em = emulator as LambdaEmulator;
  const message = await received('{"not":"a reconcile message"}');
  const invocation = await em.invoke(eventOf(message));
  assert.equal(invocation.status, 200, describe(invocation, em));
  assert.deepEqual(invocation.payload, { batchItemFailures: [] }, `the poison record is acknowledged once dead-lettered: ${describe(invocation, em)}`);
  assert.doesNotMatch(em.output(), /Cannot find (package|module) '@aws-sdk/);
  const sqs = broker.sqs();
  let dead: Message | undefined;
  await waitUntil(
    'the poison record is in the DLQ',
    async () => {
      const out = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: broker.queueUrl('work-dlq'), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }),
      );
      dead ??= out.Messages?.find((m) => m.Body === message.Body);
      return dead !== undefined;
    },
    { timeoutMs: 20_000 },
  );
  assert.equal(dead?.MessageAttributes?.[DLQ_ATTRIBUTE_REASON]?.StringValue, 'InvalidMessage');
});

test('a reconcile that hangs: the handler answers before the function timeout, its budget taken from the runtime deadline', async (t) => {
  const em = await startLambdaEmulator({
    taskRoot,
    handler: HANDLER,
    timeoutSeconds: SHORT_TIMEOUT_S,
    functionName: 'memcached-hang',
    env: { ...functionEnv, OPERLESS_KUBECONFIG: join(work, 'stalled.kubeconfig'), OPERLESS_BUDGET_RESERVE_MS: String(SHORT_RESERVE_MS) },
  });
  extra.push(em);
  const message = await received(await reconcileBody());
  const invocation = await em.invoke(eventOf(message));
  assert.equal(invocation.status, 200, describe(invocation, em));
  assert.doesNotMatch(invocation.body, /Task timed out/, describe(invocation, em));
  const payload = invocation.payload as { batchItemFailures?: { itemIdentifier: string }[] } | undefined;
  assert.ok(Array.isArray(payload?.batchItemFailures), `a partial batch response: ${describe(invocation, em)}`);
  assert.ok((stall as StallProxy).accepted > 0, 'the reconcile did reach the stalled API server');
  // The reconcile's signal is aborted when half the reserve is left (core/invocation/budget.ts): at most
  // 6000 − 2000 = 4000 ms into the invocation, less what init and the receive took. Only a budget
  // read from the runtime's deadline (Lambda-Runtime-Deadline-Ms) gives that; without one,
  // nothing stops the reconcile and the emulator ends the invocation with "Task timed out".
  const stopped = /time budget ran out after (\d+) ms/.exec(em.output());
  assert.ok(stopped, `the handler stopped the hanging reconcile on its budget:\n${em.output()}`);
  const allowanceMs = Number(stopped[1]);
  assert.ok(
    allowanceMs <= SHORT_TIMEOUT_S * 1000 - SHORT_RESERVE_MS / 2 && allowanceMs > 1000,
    `allowance ${allowanceMs} ms fits a ${SHORT_TIMEOUT_S} s deadline with a ${SHORT_RESERVE_MS} ms reserve`,
  );
  assert.ok(invocation.report && invocation.report.durationMs < SHORT_TIMEOUT_S * 1000, `answered within the timeout: ${JSON.stringify(invocation.report)}`);
  t.diagnostic(
    `hang: reconcile stopped after ${allowanceMs} ms, answered after ${invocation.report?.durationMs} ms of a ${SHORT_TIMEOUT_S} s timeout; ${invocation.body}`,
  );
});

test('an exception at init is returned by the emulator and reported in the log, not hidden', async () => {
  const em = await startLambdaEmulator({
    taskRoot,
    handler: HANDLER,
    timeoutSeconds: SHORT_TIMEOUT_S,
    functionName: 'memcached-bad-config',
    env: { ...functionEnv, OPERLESS_CONCURRENCY: '-1' },
  });
  extra.push(em);
  const invocation = await em.invoke({ Records: [] });
  const payload = invocation.payload as { errorType?: string; errorMessage?: string } | undefined;
  assert.notEqual(invocation.status, 200, describe(invocation, em));
  assert.match(payload?.errorMessage ?? '', /OPERLESS_CONCURRENCY must be a non-negative number, got "-1"/, describe(invocation, em));
  assert.match(em.output(), /OPERLESS_CONCURRENCY must be a non-negative number/);
});
