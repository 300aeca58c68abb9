/**
 * The `operless` CLI against a REAL kube-apiserver + etcd and a REAL SQS-compatible broker
 * (ElasticMQ), run as a child process (`node src/cli/main.ts …`) so exit codes, stdout and
 * stderr are what a user sees. The child runs in an empty folder with `--project` pointing at
 * this repository, so a running `operless dev` elsewhere cannot leak into its target.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { closedPort, startBroker, startControlPlane, type Broker, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { crdPaths } from '../../src/crd/generate.ts';
import { CRD_DIR, resources } from '../../src/resources.ts';
import { decodeMessage, encodeMessage, newMessage, objectKey, type ReconcileMessage } from '../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_FAILED_AT, DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { startMemoryQueueServer } from '../../src/local/memory-queue-server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'src', 'cli', 'main.ts');
const API_VERSION = 'cache.example.com/v1alpha1';
const RBAC_FILE = 'infra/rbac/memcached-function.yaml';

let cp: ControlPlane;
let broker: Broker;
let sqs: SQSClient;
let cwd: string;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI as a child process with the broker and cluster as its environment. */
function cli(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      {
        cwd,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: cwd, // no ~/.kube/config of the machine
          KUBECONFIG: cp.kubeconfigPath,
          AWS_ENDPOINT_URL_SQS: broker.endpoint,
          AWS_REGION: broker.region,
          OPERLESS_QUEUE_URL: broker.queueUrl('work'),
          OPERLESS_DLQ_URL: broker.queueUrl('work-dlq'),
          OPERLESS_CLUSTER: 'it',
          ...env,
        },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const project = ['--project', ROOT];

async function kubectl(args: string[], input?: string, as?: Identity): Promise<string> {
  const r = await cp.kubectl(args, { ...(input === undefined ? {} : { input }), ...(as ? { as } : {}) });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function memcached(namespace: string, name: string): string {
  return `apiVersion: ${API_VERSION}\nkind: Memcached\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nspec:\n  size: 1\n`;
}

/** Receives (and deletes) messages until `count` arrived or the queue stays empty. */
async function drain(queueUrl: string, count: number): Promise<ReconcileMessage[]> {
  const out: ReconcileMessage[] = [];
  let empty = 0;
  while (out.length < count && empty < 3) {
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    if (Messages.length === 0) {
      empty += 1;
      continue;
    }
    for (const m of Messages) {
      const decoded = decodeMessage(m.Body ?? '');
      assert.ok(decoded.ok, `not a reconcile message: ${m.Body}`);
      out.push(decoded.message);
    }
    await sqs.send(
      new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }),
    );
  }
  return out;
}

async function depth(queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }));
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed),
  };
}

before(async () => {
  [cp, broker] = await Promise.all([
    startControlPlane({ crds: crdPaths(CRD_DIR, resources) }),
    startBroker({ queues: [{ name: 'work', visibilityTimeoutSeconds: 30, dlq: { name: 'work-dlq', maxReceiveCount: 3 } }] }),
  ]);
  sqs = broker.sqs();
  cwd = mkdtempSync(join(tmpdir(), 'operless-cli-it-'));
  await kubectl(['create', 'namespace', 'ns-a']);
  await kubectl(['create', 'namespace', 'ns-b']);
});

after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
});

describe('operless enqueue', () => {
  test('puts a Resync message for a named object on the real queue, without touching the cluster', async () => {
    const r = await cli(['enqueue', 'mc/ns-a/not-created-yet', ...project], { KUBECONFIG: join(cwd, 'nonexistent') });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Enqueued 1 object\(s\) with reason Resync on .*\/work:\n {2}Memcached\/ns-a\/not-created-yet/);
    const [message, ...rest] = await drain(broker.queueUrl('work'), 1);
    assert.deepEqual(rest, []);
    assert.equal(message?.reason, 'Resync');
    assert.equal(message?.cluster, 'it');
    assert.equal(message?.apiVersion, API_VERSION);
    assert.equal(message?.kind, 'Memcached');
    assert.equal(message?.namespace, 'ns-a');
    assert.equal(message?.name, 'not-created-yet');
    assert.equal(message?.uid, undefined);
  });

  test('--all lists through the API in pages and sends one message per object with uid and resourceVersion', async () => {
    for (let i = 0; i < 5; i += 1) await kubectl(['apply', '-f', '-'], memcached('ns-a', `cache-${i}`));
    for (let i = 0; i < 2; i += 1) await kubectl(['apply', '-f', '-'], memcached('ns-b', `cache-${i}`));
    const listed = JSON.parse(await kubectl(['get', 'memcacheds', '-A', '-o', 'json'])) as {
      items: { metadata: { namespace: string; name: string; uid: string; resourceVersion: string } }[];
    };

    const inA = await cli(['enqueue', 'memcacheds', '--all', '--namespace', 'ns-a', '--page-size', '2', '--json', ...project]);
    assert.equal(inA.code, 0, inA.stderr);
    const summary = JSON.parse(inA.stdout) as { listed: number; sent: number; failed: number; objects: string[] };
    assert.deepEqual([summary.listed, summary.sent, summary.failed], [5, 5, 0]);
    const messages = await drain(broker.queueUrl('work'), 5);
    assert.equal(messages.length, 5);
    for (const m of messages) {
      const object = listed.items.find((o) => o.metadata.namespace === m.namespace && o.metadata.name === m.name);
      assert.ok(object, `message for an object that was not listed: ${m.namespace}/${m.name}`);
      assert.equal(m.namespace, 'ns-a');
      assert.equal(m.uid, object.metadata.uid);
      assert.equal(m.resourceVersion, object.metadata.resourceVersion);
      assert.equal(m.reason, 'Resync');
    }
    assert.deepEqual(new Set(messages.map((m) => m.name)), new Set(['cache-0', 'cache-1', 'cache-2', 'cache-3', 'cache-4']));

    const everywhere = await cli(['enqueue', '--all', ...project]);
    assert.equal(everywhere.code, 0, everywhere.stderr);
    assert.match(everywhere.stdout, /Listed 7 object\(s\); enqueued 7/);
    assert.equal((await drain(broker.queueUrl('work'), 7)).length, 7);
  });

  test('bad input is a usage error (exit 2); an unreachable queue is exit 1 with what to do', async () => {
    const unknown = await cli(['enqueue', 'redis/default/x', ...project]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown kind "redis"; this project reconciles: Memcached/);
    const scope = await cli(['enqueue', 'mc/x', ...project]);
    assert.equal(scope.code, 2);
    assert.match(scope.stderr, /Memcached is namespaced; write mc\/<namespace>\/<name>/);
    const down = await cli(['enqueue', 'mc/default/x', ...project], { OPERLESS_QUEUE_URL: `${broker.endpoint}/000000000000/no-such-queue` });
    assert.equal(down.code, 1);
    assert.match(down.stdout, /✘ 1 message\(s\) were not accepted by the queue: could not send to queue .*no-such-queue/);
    assert.match(down.stdout, /operless doctor/);
  });
});

describe('operless dlq', () => {
  test('redrive moves the selected real messages back to the work queue with attempt 0; the rest stay', async () => {
    const dlq = broker.queueUrl('work-dlq');
    const failed = (name: string, attempt: number) =>
      encodeMessage({ ...newMessage({ cluster: 'it', apiVersion: API_VERSION, kind: 'Memcached', namespace: 'ns-a', name }, 'Retry', Date.now()), attempt });
    const attributes = (reason: string, error: string) => ({
      [DLQ_ATTRIBUTE_REASON]: { DataType: 'String', StringValue: reason },
      [DLQ_ATTRIBUTE_ERROR]: { DataType: 'String', StringValue: error },
      [DLQ_ATTRIBUTE_FAILED_AT]: { DataType: 'String', StringValue: new Date().toISOString() },
    });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlq,
        MessageBody: failed('exhausted', 9),
        MessageAttributes: attributes('RetriesExhausted', 'deployments.apps is forbidden'),
      }),
    );
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlq,
        MessageBody: failed('terminal', 0),
        MessageAttributes: attributes('TerminalError', 'spec.image is not allowed'),
      }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: dlq, MessageBody: '{"not":"a message"}', MessageAttributes: attributes('InvalidMessage', 'missing v') }));

    const list = await cli(['dlq', 'list', '--json']);
    assert.equal(list.code, 0, list.stderr);
    const entries = JSON.parse(list.stdout) as { reason: string; error: string; message?: ReconcileMessage }[];
    assert.deepEqual(entries.map((e) => e.reason).sort(), ['InvalidMessage', 'RetriesExhausted', 'TerminalError']);
    assert.equal(entries.find((e) => e.reason === 'RetriesExhausted')?.error, 'deployments.apps is forbidden');
    assert.deepEqual(await depth(dlq), { visible: 3, inFlight: 0, delayed: 0 }, 'listing leaves every message in place');

    const dry = await cli(['dlq', 'redrive', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /Would redrive 2 of 3 message\(s\)/);
    assert.match(dry.stdout, /Skipped 1 invalid message/);
    assert.deepEqual(await depth(dlq), { visible: 3, inFlight: 0, delayed: 0 });
    assert.equal((await depth(broker.queueUrl('work'))).visible, 0);

    const redrive = await cli(['dlq', 'redrive', '--filter', 'reason=RetriesExhausted']);
    assert.equal(redrive.code, 0, redrive.stderr);
    assert.match(redrive.stdout, /Redrove 1 of 3 message\(s\) to .*\/work:\n {2}Memcached\/ns-a\/exhausted/);
    const back = await drain(broker.queueUrl('work'), 1);
    assert.equal(back.length, 1);
    assert.equal(back[0]?.name, 'exhausted');
    assert.equal(back[0]?.attempt, 0, 'a redriven message starts its retries afresh');
    assert.deepEqual(await depth(dlq), { visible: 2, inFlight: 0, delayed: 0 });

    const rest = JSON.parse((await cli(['dlq', 'list', '--json'])).stdout) as { reason: string }[];
    assert.deepEqual(rest.map((e) => e.reason).sort(), ['InvalidMessage', 'TerminalError']);
  });

  test('per-key ordering: redrive from a FIFO DLQ into a FIFO work queue, grouped by the object key', async () => {
    const work = await broker.createQueue({ name: 'pk-work.fifo', visibilityTimeoutSeconds: 30, dlq: { name: 'pk-dlq.fifo', maxReceiveCount: 3 } });
    const dlq = broker.queueUrl('pk-dlq.fifo');
    const body = encodeMessage({
      ...newMessage({ cluster: 'it', apiVersion: API_VERSION, kind: 'Memcached', namespace: 'ns-a', name: 'fifo' }, 'Retry', Date.now()),
      attempt: 9,
    });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlq,
        MessageBody: body,
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd',
        MessageAttributes: { [DLQ_ATTRIBUTE_REASON]: { DataType: 'String', StringValue: 'RetriesExhausted' } },
      }),
    );
    const redrive = await cli(['dlq', 'redrive'], { OPERLESS_QUEUE_URL: work, OPERLESS_DLQ_URL: dlq });
    assert.equal(redrive.code, 0, redrive.stderr);
    assert.match(redrive.stdout, /Redrove 1 of 1 message/);
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: work, MaxNumberOfMessages: 10, WaitTimeSeconds: 2, MessageSystemAttributeNames: ['All'] }),
    );
    assert.equal(Messages.length, 1);
    assert.equal(
      Messages[0]?.Attributes?.MessageGroupId,
      objectKey({ cluster: 'it', apiVersion: API_VERSION, kind: 'Memcached', namespace: 'ns-a', name: 'fifo' }),
    );
    assert.deepEqual(await depth(dlq), { visible: 0, inFlight: 0, delayed: 0 });
  });
});

describe('operless status', () => {
  let forwarder: Forwarder;
  let statusQueue: string;
  let statusDlq: string;

  before(async () => {
    statusQueue = await broker.createQueue({ name: 'status-work', visibilityTimeoutSeconds: 60, dlq: { name: 'status-dlq', maxReceiveCount: 3 } });
    statusDlq = broker.queueUrl('status-dlq');
    const forwarderQueue = await broker.createQueue({ name: 'forwarder' });
    forwarder = startForwarder(
      {
        clusterId: 'it',
        queue: { url: forwarderQueue, region: broker.region, endpoint: broker.endpoint },
        primaries: [{ apiVersion: API_VERSION, kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
        leaderElection: { enabled: false },
        server: { port: 0, host: '127.0.0.1' },
      },
      {
        kubeConfig: cp.kubeConfig,
        logger: silentLogger,
        queue: createSqsQueue({ queueUrl: forwarderQueue, region: broker.region, client: sqs }),
      },
    );
    await forwarder.ready;
  });
  after(async () => {
    await forwarder?.stop({ graceMs: 1000 });
  });

  test('shows real depths, forwarder health and the objects not yet reconciled at their generation', async () => {
    await kubectl(['create', 'namespace', 'status']);
    await kubectl(['apply', '-f', '-'], memcached('status', 'stale'));
    await kubectl(['apply', '-f', '-'], memcached('status', 'done'));
    await kubectl(['patch', 'memcached', 'done', '-n', 'status', '--subresource=status', '--type=merge', '-p', '{"status":{"observedGeneration":1}}']);
    await kubectl(['patch', 'memcached', 'done', '-n', 'status', '--type=merge', '-p', '{"spec":{"size":2}}']); // generation 2
    await kubectl(['patch', 'memcached', 'done', '-n', 'status', '--subresource=status', '--type=merge', '-p', '{"status":{"observedGeneration":2}}']);

    const body = encodeMessage(newMessage({ cluster: 'it', apiVersion: API_VERSION, kind: 'Memcached', namespace: 'status', name: 'stale' }, 'Modified'));
    for (let i = 0; i < 3; i += 1) await sqs.send(new SendMessageCommand({ QueueUrl: statusQueue, MessageBody: body }));
    await sqs.send(new SendMessageCommand({ QueueUrl: statusQueue, MessageBody: body, DelaySeconds: 600 }));
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: statusQueue, MaxNumberOfMessages: 1, VisibilityTimeout: 600 }));
    assert.equal(received.Messages?.length, 1);
    await sqs.send(new SendMessageCommand({ QueueUrl: statusDlq, MessageBody: body }));

    const env = { OPERLESS_QUEUE_URL: statusQueue, OPERLESS_DLQ_URL: statusDlq, OPERLESS_FORWARDER_URL: forwarder.url! };
    const r = await cli(['status', '--json', ...project], env);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const report = JSON.parse(r.stdout) as Record<string, any>;
    assert.equal(report.queue.state, 'ok');
    assert.deepEqual([report.queue.value.visible, report.queue.value.inFlight, report.queue.value.delayed], [2, 1, 1]);
    // ElasticMQ has no age of the oldest message (its statistics are the three counts).
    assert.equal(report.queue.value.oldestAgeSeconds, undefined);
    assert.match(report.queue.value.oldestMessageAge, /^n\/a for this broker/);
    assert.deepEqual([report.dlq.value.visible, report.dlq.value.inFlight, report.dlq.value.delayed], [1, 0, 0]);
    assert.equal(report.forwarder.value.ready, true);
    assert.equal(report.forwarder.value.metrics.operless_forwarder_watches_synced, 1);
    assert.equal(report.forwarder.value.metrics.operless_forwarder_queue_reachable, 1);
    const mc = (report.objects.value as { kind: string; total: number; notReconciled: number; names: string[] }[]).find((k) => k.kind === 'Memcached')!;
    assert.ok(mc.names.includes('status/stale (generation 1, observed never)'), mc.names.join('\n'));
    assert.ok(!mc.names.some((n) => n.startsWith('status/done')), 'observedGeneration = generation is reconciled');
    const total = JSON.parse(await kubectl(['get', 'memcacheds', '-A', '-o', 'json'])).items.length as number;
    assert.equal(mc.total, total);
    assert.equal(mc.notReconciled, total - 1, 'only status/done was reconciled');

    await kubectl(['patch', 'memcached', 'done', '-n', 'status', '--type=merge', '-p', '{"spec":{"size":3}}']); // generation 3, observed 2
    const human = await cli(['status', '--max-names', '100', ...project], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^queue\s+2 visible, 1 in flight, 1 delayed/m);
    assert.match(human.stdout, /^forwarder\s+✔ ready/m);
    assert.match(human.stdout, /status\/done \(generation 3, observed 2\)/);
  });

  test('a forwarder that does not answer and a missing queue make it exit 1, and say so', async () => {
    const silent = `http://127.0.0.1:${await closedPort()}`; // free a moment ago, closed: nothing listens
    const r = await cli(['status', ...project], {
      OPERLESS_QUEUE_URL: `${broker.endpoint}/000000000000/no-such-queue`,
      OPERLESS_FORWARDER_URL: silent,
    });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^queue\s+✘ .*no-such-queue.*operless doctor/m);
    assert.match(r.stdout, new RegExp(`^forwarder\\s+✘ ${silent.replaceAll('.', '\\.')} did not answer`, 'm'));
    assert.match(r.stdout, /^objects\s+Memcached: /m, 'the other sections are still shown');
  });
});

describe('operless doctor', () => {
  let fn: Identity;
  let partial: Identity;

  before(async () => {
    await kubectl(['apply', '-f', join(ROOT, RBAC_FILE)]);
    fn = await cp.identity('memcached-function', ['operless:memcached']);
    await kubectl(
      ['apply', '-f', '-'],
      `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: partial }
rules:
  - { apiGroups: [cache.example.com], resources: [memcacheds], verbs: [get, list] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: partial }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: partial }
subjects: [{ apiGroup: rbac.authorization.k8s.io, kind: Group, name: operless:partial }]
`,
    );
    partial = await cp.identity('partial-function', ['operless:partial']);
  });

  test("passes for the admin, and for the function's own identity under the shipped RBAC", async () => {
    const admin = await cli(['doctor', ...project]);
    assert.equal(admin.code, 0, admin.stdout + admin.stderr);
    assert.match(admin.stdout, /^✔ cluster reachable: https:\/\/127\.0\.0\.1:\d+, Kubernetes v1\.\d+/m);
    assert.match(admin.stdout, /^✔ identity: .*system:masters.*--as-group operless:memcached/m);
    assert.match(admin.stdout, /^✔ CRD memcacheds\.cache\.example\.com: installed, Established, serves v1alpha1$/m);
    assert.match(admin.stdout, /^✔ permission on memcacheds\/status\.cache\.example\.com: patch$/m);
    assert.match(admin.stdout, /^✔ work queue: /m);
    assert.match(admin.stdout, /^✔ redrive policy: after 3 receives to work-dlq$/m);
    assert.match(admin.stdout, /^– EKS token: OPERLESS_EKS_CLUSTER is not set/m);
    assert.match(admin.stdout, /All checks passed\./);

    const own = await cli(['doctor', '--json', ...project], { KUBECONFIG: fn.kubeconfigPath });
    assert.equal(own.code, 0, own.stdout);
    const report = JSON.parse(own.stdout) as { ok: boolean; checks: { name: string; state: string; detail: string }[] };
    assert.equal(report.ok, true);
    assert.match(report.checks.find((c) => c.name === 'identity')!.detail, /^memcached-function \[operless:memcached/);
    assert.match(report.checks.find((c) => c.name === 'CRD memcacheds.cache.example.com')!.detail, /per API discovery/);
    assert.ok(report.checks.filter((c) => c.name.startsWith('permission on')).length >= 7);

    const impersonated = await cli(['doctor', '--as', 'someone', '--as-group', 'operless:memcached', '--as-group', 'unrelated', ...project]);
    assert.equal(impersonated.code, 0, impersonated.stdout);
    assert.match(impersonated.stdout, /^✔ identity: someone \[operless:memcached, unrelated/m);
  });

  test('catches a missing permission for a restricted identity, naming it and the fix', async () => {
    const r = await cli(['doctor', ...project], { KUBECONFIG: partial.kubeconfigPath });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /^✘ permission on memcacheds\.cache\.example\.com: missing patch \(has get, list\)/m);
    assert.match(r.stdout, /^✘ permission on pods: missing list/m);
    assert.match(r.stdout, new RegExp(`^ {4}fix: kubectl apply -f ${RBAC_FILE.replace(/\./g, '\\.')} \\(ClusterRole operless-memcached\\)`, 'm'));
    assert.match(r.stdout, /check\(s\) failed\./);

    const asNobody = await cli(['doctor', '--json', '--as', 'nobody', ...project]);
    assert.equal(asNobody.code, 1);
    const failed = (JSON.parse(asNobody.stdout) as { checks: { name: string; state: string }[] }).checks.filter((c) => c.state === 'fail').map((c) => c.name);
    assert.ok(failed.includes('permission on deployments.apps'), failed.join(', '));
  });

  test('reports a CRD that is not installed, a queue that does not answer and a cluster that cannot be reached', async () => {
    const other = mkdtempSync(join(tmpdir(), 'operless-cli-project-'));
    mkdirSync(join(other, 'infra', 'crds'), { recursive: true });
    writeFileSync(
      join(other, 'infra', 'crds', 'tenants.example.com.yaml'),
      `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: tenants.example.com }
spec:
  group: example.com
  scope: Cluster
  names: { kind: Tenant, plural: tenants }
  versions: [{ name: v1, served: true, storage: true }]
`,
    );
    const r = await cli(['doctor', '--project', other], { OPERLESS_QUEUE_URL: `${broker.endpoint}/000000000000/no-such-queue` });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /^✘ CRD tenants\.example\.com: not installed\n {4}fix: kubectl apply -f infra\/crds\/tenants\.example\.com\.yaml/m);
    assert.match(r.stdout, /^– permissions: no ClusterRole or Role in infra\/rbac\//m);
    assert.match(r.stdout, /^✘ work queue: .*no-such-queue/m);
    assert.match(r.stdout, /^✔ dead-letter queue: /m);

    const kubeconfig = join(cwd, 'unreachable.kubeconfig');
    const closed = await closedPort(); // free a moment ago, closed: nothing listens
    writeFileSync(kubeconfig, readFileSync(cp.kubeconfigPath, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${closed}`));
    const down = await cli(['doctor', ...project], { KUBECONFIG: kubeconfig });
    assert.equal(down.code, 1);
    assert.match(down.stdout, new RegExp(`^✘ cluster reachable: .*could not reach the API server at https://127\\.0\\.0\\.1:${closed}\\b`, 'm'));
    assert.match(down.stdout, /^✔ work queue: /m, 'the queue checks still run');
  });

  test('with OPERLESS_EKS_CLUSTER set, a token is minted and a refusal by the API server is reported', async () => {
    const ca = Buffer.from(cp.caPem).toString('base64');
    const r = await cli(['doctor', ...project], {
      OPERLESS_EKS_CLUSTER: 'it-cluster',
      OPERLESS_EKS_ENDPOINT: cp.server,
      OPERLESS_EKS_CA: ca,
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /^✔ EKS token for it-cluster: minted/m);
    assert.match(r.stdout, /^✘ EKS API server accepts the token: .*(401|Unauthorized)/m);
    assert.match(r.stdout, /access entry/);
  });
});

test('operless status against the embedded queue shows the age of its oldest message', async () => {
  let now = Date.now();
  const embedded = await startMemoryQueueServer({ queues: [{ name: 'work', dlq: { name: 'work-dlq', maxReceiveCount: 3 } }], clock: { now: () => now } });
  try {
    const client = embedded.sqs();
    const body = encodeMessage(newMessage({ cluster: 'it', apiVersion: API_VERSION, kind: 'Memcached', namespace: 'age', name: 'old' }, 'Modified'));
    await client.send(new SendMessageCommand({ QueueUrl: embedded.queueUrl('work'), MessageBody: body }));
    now += 42_000;
    await client.send(new SendMessageCommand({ QueueUrl: embedded.queueUrl('work'), MessageBody: body }));
    await client.send(new SendMessageCommand({ QueueUrl: embedded.queueUrl('work'), MessageBody: body, DelaySeconds: 600 }));
    client.destroy();
    const env = {
      AWS_ENDPOINT_URL_SQS: embedded.endpoint,
      AWS_REGION: embedded.region,
      OPERLESS_QUEUE_URL: embedded.queueUrl('work'),
      OPERLESS_DLQ_URL: embedded.queueUrl('work-dlq'),
    };
    const r = await cli(['status', '--json', ...project], env);
    const report = JSON.parse(r.stdout) as Record<string, any>;
    assert.equal(report.queue.state, 'ok', r.stderr + r.stdout);
    assert.deepEqual([report.queue.value.visible, report.queue.value.delayed], [2, 1]);
    assert.equal(report.queue.value.oldestAgeSeconds, 42, 'the first message, sent 42 s ago (the delayed one does not count)');
    assert.equal(report.queue.value.oldestMessageAge, '42s');
    assert.equal(report.dlq.value.oldestAgeSeconds, 0, 'an empty queue: 0');
    const text = await cli(['status', ...project], env);
    assert.match(text.stdout, /oldest message age: 42s/);
  } finally {
    await embedded.stop();
  }
});
