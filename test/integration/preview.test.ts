/**
 * `operless preview` against a REAL kube-apiserver + etcd: what new operator code would
 * change, with nothing written.
 *
 * - A fixture operator (App → Deployment) reconciled for real by its v1 build; its v2 build
 *   changes the Deployment template for objects with `spec.size > 2` only. The preview of v2
 *   lists exactly those, with the template diff; every primary's and child's resourceVersion and
 *   the Event list are unchanged afterwards, and the v2 code's guarded external call never ran.
 * - A reconcile that throws for one object reports its error; the others are still previewed,
 *   and the exit code says a reconcile would fail.
 * - A write a ValidatingAdmissionPolicy denies is reported with the policy's message.
 * - The request rate: a preview of 1,000 objects, every request through one token bucket; the
 *   API server's own count (`apiserver_request_total`) stays within `qps × (elapsed + 1 s)`.
 * - The command as a user runs it, in this repository's own project (Memcached): `operless
 *   preview --all --kubeconfig …` prints the Deployments it would create, exits 3, writes nothing.
 * - `operless dlq replay <id>` with a real ElasticMQ DLQ: the dead-lettered Memcached message runs
 *   through the current code as a preview; the message stays in the DLQ, nothing is written.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBroker, startControlPlane, testCrd, type ControlPlane } from '../../src/testing/index.ts';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { encodeMessage } from '../../src/contract/message.ts';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_REASON } from '../../src/contract/dlq.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import type { BoundKubeClient } from '../../src/kube/client.ts';
import { rateLimiter } from '../../src/kube/recording-transport.ts';
import type { KubeTransport } from '../../src/kube/transport.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { EVENTS } from '../../src/kube/kinds.ts';
import { defineController, type Controller } from '../../src/core/controller/controller.ts';
import { reconcileKey } from '../../src/core/reconcile/reconciler.ts';
import { done } from '../../src/core/controller/result.ts';
import { newMessage } from '../../src/contract/message.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { previewObject, type ObjectPreview } from '../../src/preview/run.ts';
import { PREVIEW_EXIT, previewExitCode, previewText } from '../../src/preview/report.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NS = 'default';
const APP: KindRef = { apiVersion: 'preview.operless.dev/v1', kind: 'App', plural: 'apps', namespaced: true };
const DEPLOYMENT: KindRef = { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
const MEMCACHED: KindRef = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };

const APP_CRD = testCrd({
  group: 'preview.operless.dev',
  kind: 'App',
  specSchema: { type: 'object', properties: { size: { type: 'integer' } } },
  statusSchema: { type: 'object', properties: { image: { type: 'string' }, replicas: { type: 'integer' }, observedGeneration: { type: 'integer' } } },
});

interface App extends KubeObject {
  spec: { size: number };
}

/** Names of objects whose v2 reconcile made its external call (it must not in a preview). */
const externalCalls: string[] = [];

function appController(build: 1 | 2): Controller<App> {
  return defineController<App>({
    ...APP,
    owns: [DEPLOYMENT],
    async reconcile(app, ctx) {
      if (build === 2 && app.metadata.name === 'app-broken') throw new Error('the v2 build cannot read app-broken');
      const image = build === 2 && app.spec.size > 2 ? 'registry.example/web:2' : 'registry.example/web:1';
      const labels = { app: app.metadata.name };
      await ctx.applyOwned(DEPLOYMENT, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: app.metadata.name },
        spec: {
          replicas: app.spec.size,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'web', image }] } },
        },
      });
      await ctx.updateStatus({ image, replicas: app.spec.size });
      if (build === 2 && !ctx.preview) externalCalls.push(app.metadata.name);
      await ctx.events.record(app, { type: 'Normal', reason: 'Deployed', action: 'Reconcile', note: image });
      return done();
    },
  });
}

let cp: ControlPlane;
let admin: BoundKubeClient;
const SIZES: Record<string, number> = { 'app-small': 1, 'app-two': 2, 'app-three': 3, 'app-big': 5, 'app-broken': 4 };

async function reconcileForReal(controller: Controller<App>, name: string): Promise<void> {
  const ran = await reconcileKey(controller as unknown as Controller<KubeObject>, newMessage({ cluster: 'it', ...APP, namespace: NS, name }, 'Added'), {
    client: admin,
    events: { async record() {} },
    log: silentLogger,
    signal: new AbortController().signal,
    reconcileId: `real-${name}`,
  });
  assert.equal(ran.ending.type, 'result', JSON.stringify(ran.ending));
}

/** resourceVersions of every App and Deployment, and the Events in the namespace: what a preview must leave as it was. */
async function clusterState() {
  const apps = await admin.list(APP, { namespace: NS });
  const deployments = await admin.list(DEPLOYMENT, { namespace: NS });
  const events = await admin.list(EVENTS, { namespace: NS });
  return {
    apps: Object.fromEntries(apps.items.map((o) => [o.metadata.name, o.metadata.resourceVersion])),
    deployments: Object.fromEntries(deployments.items.map((o) => [o.metadata.name, o.metadata.resourceVersion])),
    events: events.items.length,
  };
}

function previewAll(controller: Controller<App>, names: readonly string[], transport: KubeTransport, take?: () => Promise<void>): Promise<ObjectPreview[]> {
  return Promise.all(names.map((name) => previewObject(controller as unknown as Controller<KubeObject>, { namespace: NS, name }, { transport, take })));
}

before(async () => {
  cp = await startControlPlane({ crds: [APP_CRD, join(ROOT, 'infra', 'crds', 'memcacheds.cache.example.com.yaml')] });
  admin = await createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath } })('admin');
  for (const [name, size] of Object.entries(SIZES)) {
    await admin.create(APP, { apiVersion: APP.apiVersion, kind: 'App', metadata: { name, namespace: NS }, spec: { size } });
    await reconcileForReal(appController(1), name);
  }
});

after(async () => {
  await cp?.stop();
});

test('the v2 build changes the template of size > 2 only: listed with the diff, nothing written, no external call', async () => {
  const beforeState = await clusterState();
  const previews = await previewAll(appController(2), Object.keys(SIZES), admin.transport);
  const byName = new Map(previews.map((p) => [p.name, p]));
  for (const name of ['app-small', 'app-two']) {
    const p = byName.get(name)!;
    assert.deepEqual(p.result, { type: 'done' });
    assert.deepEqual(p.changes, [], `${name}: nothing would change`);
  }
  for (const name of ['app-three', 'app-big']) {
    const p = byName.get(name)!;
    assert.deepEqual(p.result, { type: 'done' });
    const deployment = p.changes.find((c) => c.kind === 'Deployment' && c.action === 'change');
    assert.ok(deployment, `${name}: the Deployment would change (${JSON.stringify(p.changes)})`);
    assert.equal(deployment.name, name);
    assert.deepEqual(deployment.diff, [
      { op: '~', path: 'spec.template.spec.containers[0].image', before: 'registry.example/web:1', after: 'registry.example/web:2' },
    ]);
    const status = p.changes.find((c) => c.subresource === 'status');
    assert.deepEqual(status?.diff, [{ op: '~', path: 'status.image', before: 'registry.example/web:1', after: 'registry.example/web:2' }]);
    assert.deepEqual(
      p.events.map((e) => e.reason),
      ['Deployed'],
      'the Event is reported, not recorded',
    );
  }
  const broken = byName.get('app-broken')!;
  assert.equal(broken.result.type, 'error');
  assert.match(broken.result.type === 'error' ? broken.result.message : '', /cannot read app-broken/);
  assert.equal(previewExitCode(previews), PREVIEW_EXIT.failed, 'a reconcile that would fail wins');
  assert.equal(previewExitCode(previews.filter((p) => p.name !== 'app-broken')), PREVIEW_EXIT.changes);
  assert.equal(previewExitCode(previews.filter((p) => p.name === 'app-small' || p.name === 'app-two')), PREVIEW_EXIT.unchanged);
  const text = previewText(previews);
  assert.match(
    text,
    /App\/default\/app-three: done\n {2}~ would change Deployment\/default\/app-three\n {6}~ spec\.template\.spec\.containers\[0\]\.image: "registry\.example\/web:1" → "registry\.example\/web:2"/,
  );
  assert.doesNotMatch(text, /app-small|app-two/);
  assert.deepEqual(await clusterState(), beforeState, 'no resourceVersion moved and no Event was recorded');
  assert.deepEqual(externalCalls, [], 'ctx.preview let the author skip the external call');
});

test('declared timers are named, not run: each object reports whether its chain would start; no mark is written', async () => {
  const beforeState = await clusterState();
  let runs = 0;
  const timed = defineController<App>({
    ...appController(1).spec,
    timers: [
      {
        name: 'health',
        everySeconds: 300,
        async run() {
          runs++;
        },
      },
    ],
  });
  const previews = await previewAll(timed, ['app-small', 'app-two'], admin.transport);
  assert.equal(runs, 0, 'a preview does not run a timer');
  for (const p of previews)
    assert.deepEqual(p.timers, [{ name: 'health', everySeconds: 300, wouldStart: true }], `${p.name}: no chain marked, the reconcile would start one`);
  assert.match(previewText(previews), /^timer App health every 300 s: not run by a preview; a reconcile would start its chain for 2 object\(s\)$/m);
  assert.equal(previewExitCode(previews), PREVIEW_EXIT.unchanged, 'a timer is no change');
  assert.deepEqual(await clusterState(), beforeState, 'no mark written, nothing moved');
});

test('a write an admission policy denies is reported with its message', async () => {
  await cp.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'max-replicas' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['deployments'] }] },
        validations: [{ expression: 'object.spec.replicas <= 4', message: 'at most 4 replicas here' }],
      },
    }),
  });
  await cp.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'max-replicas' },
      spec: { policyName: 'max-replicas', validationActions: ['Deny'] },
    }),
  });
  try {
    const beforeState = await clusterState();
    // The policy's own informer catches up asynchronously: wait for its first denial.
    let big: ObjectPreview | undefined;
    for (let i = 0; i < 60; i++) {
      [big] = await previewAll(appController(2), ['app-big'], admin.transport);
      if (big?.changes.some((c) => c.action === 'refused')) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const refused = big?.changes.find((c) => c.action === 'refused');
    assert.ok(refused, JSON.stringify(big));
    assert.equal(refused.kind, 'Deployment');
    assert.equal(refused.name, 'app-big');
    assert.match(refused.refusal?.message ?? '', /at most 4 replicas here/);
    assert.equal(big?.result.type, 'error', 'the reconcile would fail on the denial');
    assert.match(previewText([big!]), /! would be refused: PATCH Deployment\/default\/app-big: .*at most 4 replicas here/);
    assert.deepEqual(await clusterState(), beforeState);
  } finally {
    await cp.kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', 'max-replicas']);
  }
});

/** Every request the API server has served so far, by its own count (`apiserver_request_total`). */
async function apiServerRequests(): Promise<number> {
  const r = await cp.kubectl(['get', '--raw', '/metrics']);
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('apiserver_request_total{'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

test("a preview of 1,000 objects keeps to its request rate, by the API server's own count", async () => {
  const names = Array.from({ length: 1000 }, (_, i) => `rate-${i}`);
  for (let i = 0; i < names.length; i += 50) {
    await Promise.all(
      names
        .slice(i, i + 50)
        .map((name) => admin.create(APP, { apiVersion: APP.apiVersion, kind: 'App', metadata: { name, namespace: NS }, spec: { size: 1 } })),
    );
  }
  let requests = 0;
  const counting: KubeTransport = {
    server: admin.transport.server,
    request: (req) => {
      requests += 1;
      return admin.transport.request(req);
    },
    watch: (req, onEvent) => {
      requests += 1;
      return admin.transport.watch(req, onEvent);
    },
    list: (req, onItem) => {
      requests += 1;
      return admin.transport.list(req, onItem);
    },
    close: async () => {},
  };
  const qps = 200;
  const take = rateLimiter(qps);
  const served = await apiServerRequests();
  const started = Date.now();
  const previews: ObjectPreview[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < names.length) {
        const name = names[next++]!;
        previews.push(await previewObject(appController(1) as unknown as Controller<KubeObject>, { namespace: NS, name }, { transport: counting, take }));
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  const byServer = (await apiServerRequests()) - served;
  assert.equal(previews.length, names.length);
  for (const p of previews)
    assert.ok(
      p.changes.some((c) => c.kind === 'Deployment' && c.action === 'create'),
      `${p.name}: would create its Deployment`,
    );
  assert.ok(requests >= names.length * 3, `a GET, an apply and a status write per object at least (${requests})`);
  // The server's count holds the preview's requests, the two metric scrapes and its own few (leases): a small allowance.
  assert.ok(byServer >= requests, `the API server served at least the ${requests} requests made (${byServer})`);
  assert.ok(byServer <= qps * (seconds + 1) + 50, `${byServer} requests served in ${seconds.toFixed(1)} s: at most ${qps}/s after a one-second burst`);
  for (const name of names.slice(0, 20)) assert.equal(await admin.get(DEPLOYMENT, name, NS), undefined, 'nothing was created');
  assert.equal((await admin.list(DEPLOYMENT, { namespace: NS })).items.filter((d) => d.metadata.name.startsWith('rate-')).length, 0);
});

test('operless preview --all in this repository (Memcached), as a user runs it: would-be Deployments, exit 3, nothing written', async () => {
  await admin.create(MEMCACHED, { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache', namespace: NS }, spec: { size: 2 } });
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'operless.js'), 'preview', 'memcached', '--all', '--kubeconfig', cp.kubeconfigPath], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
    timeout: 120_000,
  });
  assert.equal(r.status, PREVIEW_EXIT.changes, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /Memcached\/default\/cache: /);
  assert.match(r.stdout, /\+ would create Deployment\/default\/cache/);
  assert.match(r.stdout, /1 object\(s\) previewed: 1 would change, 0 would fail, 0 unchanged; nothing was written\./);
  assert.equal(await admin.get(DEPLOYMENT, 'cache', NS), undefined, 'no Deployment was created');
  const json = spawnSync(process.execPath, [join(ROOT, 'bin', 'operless.js'), 'preview', 'mc/default/cache', '--json', '--kubeconfig', cp.kubeconfigPath], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
    timeout: 120_000,
  });
  assert.equal(json.status, PREVIEW_EXIT.changes, json.stderr);
  const parsed = JSON.parse(json.stdout) as { exitCode: number; previews: ObjectPreview[] };
  assert.equal(parsed.previews[0]?.name, 'cache');
  assert.ok(parsed.previews[0]?.changes.some((c) => c.kind === 'Deployment' && c.action === 'create'));
});

test('operless dlq replay <id>: the dead-lettered message through the current code, left in the DLQ, nothing written', async () => {
  const broker = await startBroker({ queues: [{ name: 'work', dlq: { name: 'work-dlq', maxReceiveCount: 3 } }] });
  try {
    const sqs = broker.sqs();
    const dlq = broker.queueUrl('work-dlq');
    const live =
      (await admin.get(MEMCACHED, 'cache', NS)) ??
      (await admin.create(MEMCACHED, { apiVersion: MEMCACHED.apiVersion, kind: 'Memcached', metadata: { name: 'cache', namespace: NS }, spec: { size: 2 } }));
    const body = encodeMessage({
      ...newMessage({ cluster: 'it', apiVersion: MEMCACHED.apiVersion, kind: 'Memcached', namespace: NS, name: 'cache', uid: live.metadata.uid }, 'Retry'),
      attempt: 9,
    });
    const sent = await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlq,
        MessageBody: body,
        MessageAttributes: {
          [DLQ_ATTRIBUTE_REASON]: { DataType: 'String', StringValue: 'RetriesExhausted' },
          [DLQ_ATTRIBUTE_ERROR]: { DataType: 'String', StringValue: 'gave up after 10 attempts: deployments.apps is forbidden' },
        },
      }),
    );
    const beforeState = await admin.list(DEPLOYMENT, { namespace: NS });
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'operless.js'), 'dlq', 'replay', sent.MessageId ?? '', '--kubeconfig', cp.kubeconfigPath], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        ...process.env,
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        AWS_ENDPOINT_URL_SQS: broker.endpoint,
        AWS_REGION: broker.region,
        OPERLESS_DLQ_URL: dlq,
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
      },
    });
    assert.equal(r.status, PREVIEW_EXIT.changes, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /dead-lettered: RetriesExhausted: gave up after 10 attempts: deployments\.apps is forbidden/);
    assert.match(r.stdout, /replayed with the current code \(Retry, attempt 9\); the message stays in the DLQ; nothing was written\./);
    assert.match(r.stdout, /"preview":true/, "the reconcile's own log lines, marked as a preview");
    assert.match(r.stdout, /\+ would create Deployment\/default\/cache/);
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    assert.equal(
      Number(attributes.Attributes?.ApproximateNumberOfMessages) + Number(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible),
      1,
      'the message is still in the DLQ',
    );
    assert.deepEqual(
      (await admin.list(DEPLOYMENT, { namespace: NS })).items.map((d) => d.metadata.name),
      beforeState.items.map((d) => d.metadata.name),
      'nothing was created',
    );
    const unknown = spawnSync(process.execPath, [join(ROOT, 'bin', 'operless.js'), 'dlq', 'replay', 'no-such-id', '--kubeconfig', cp.kubeconfigPath], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        ...process.env,
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        AWS_ENDPOINT_URL_SQS: broker.endpoint,
        AWS_REGION: broker.region,
        OPERLESS_DLQ_URL: dlq,
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
      },
    });
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /no message no-such-id among the 1 in/);
  } finally {
    await broker.stop();
  }
});
