/**
 * `npm start` end to end: `operless dev` as a child process brings up the whole loop (real
 * kube-apiserver + etcd + controller-manager, embedded queue, forwarder, local Lambda runner,
 * simulated kubelet), reconciles the sample until it is Available; `operless status` and
 * `operless enqueue` in a second process find it through its state file; SIGINT stops it with
 * exit code 0 and no process of its tree survives. The webhooks function is served through the
 * forwarder's HTTPS endpoint (a test CA) and the local Lambda Invoke API: `kubectl apply` of a
 * bad Memcached is denied with the function's message, and the sample reads as v1beta1.
 *
 * It runs in per-key mode (`--ordering per-key`: FIFO work queue by object key, a delay queue
 * and a second runner of the function on it), at no extra cost: the default mode's `npm
 * start` is the generated project's, in test/e2e/scaffolded-start.test.ts, and both modes
 * share everything but the queues.
 *
 * The loop runs in a temporary project folder whose entries link to this repository, so its
 * `.operless/` state cannot collide with an `operless dev` someone runs in the repository.
 * (`npm start` is `bash scripts/run.sh dev`, which provisions the binaries and then execs
 * exactly this command; the test runs the command directly so it never triggers `npm ci`.)
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { processTree, survivors, watchProcess } from './process-helpers.ts';
import { provision } from '../../src/testing/index.ts';
import { waitUntil } from '../../src/testing/wait.ts';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { readDevState } from '../../src/devloop/dev-state.ts';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'src', 'cli', 'main.ts');
const AVAILABLE = /✔ Memcached default\/memcached-sample is Available \(generation \d+\)/;

function run(args: readonly string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

function kubectlRun(kubectl: string, kubeconfig: string, args: readonly string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(kubectl, ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
    child.stdin?.end(input ?? '');
  });
}

/** A project folder whose entries are links to this repository's. */
function linkedProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'operless-e2e-dev-'));
  for (const entry of ['serverless.yml', 'functions', 'infra', 'src', 'package.json', 'node_modules', 'tsconfig.json']) {
    if (existsSync(join(ROOT, entry))) symlinkSync(join(ROOT, entry), join(dir, entry));
  }
  return dir;
}

let child: ChildProcess | undefined;
let project: string | undefined;

after(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (project) rmSync(project, { recursive: true, force: true });
});

test('operless dev --ordering per-key reconciles the sample through FIFO queues, serves status and enqueue, and stops cleanly on SIGINT', async () => {
  project = linkedProject();
  const dev = spawn(process.execPath, [MAIN, 'dev', '--ordering', 'per-key'], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'] });
  child = dev;
  const { waitFor, exited, output } = watchProcess(dev, 'operless dev');

  await waitFor(AVAILABLE, 'the sample became Available');
  await waitFor(/press Ctrl-C to stop everything/, 'it finished starting');
  assert.match(output(), /export KUBECONFIG=.*\.operless\/kubeconfig/, 'the kubeconfig path is printed for kubectl');
  assert.match(
    output(),
    /memcached: operless-dev-memcached\.fifo \(DLQ operless-dev-memcached-dlq\.fifo; delay queue operless-dev-memcached-delay\)/,
    'per-key queues',
  );
  assert.match(
    output(),
    /functions running: memcached \(functions\/memcached\.ts, queue \S+\/operless-dev-memcached\.fifo\)/,
    'the function consumes the FIFO queue',
  );

  // The webhooks in the dev loop: served, and a bad Memcached is denied with the function's message.
  assert.match(output(), /webhooks served at https:\/\/127\.0\.0\.1:\d+ \(test CA \.operless\/webhook-tls\/ca\.crt\)/);
  const kubectl = (await provision({ targets: ['kube'] })).kube?.kubectl;
  assert.ok(kubectl, 'kubectl is provisioned');
  const kubeconfig = join(project, '.operless', 'kubeconfig');
  const bad = JSON.stringify({
    apiVersion: 'cache.example.com/v1alpha1',
    kind: 'Memcached',
    metadata: { name: 'too-tight', namespace: 'default' },
    spec: { size: 1, memoryLimitMB: 128, resources: { limits: { memory: '64Mi' } } },
  });
  const apply = (dryRun: boolean) => kubectlRun(kubectl, kubeconfig, ['apply', ...(dryRun ? ['--dry-run=server'] : []), '-f', '-'], bad);
  // The API server picks up new webhook configurations asynchronously: probe with server-side dry runs first.
  await waitUntil('the validating webhook answers', async () => (await apply(true)).code !== 0, { timeoutMs: 30_000 });
  const denied = await apply(false);
  assert.notEqual(denied.code, 0, 'the bad Memcached is refused');
  assert.match(denied.stderr, /admission webhook "validate\.memcacheds\.cache\.example\.com" denied the request: .*OOM-killed/);
  // v1beta1 is served through the conversion webhook (the CRD update takes effect asynchronously too).
  let beta: { spec: { replicas?: unknown; size?: unknown } } | undefined;
  await waitUntil(
    'the sample reads as v1beta1',
    async () => {
      const got = await kubectlRun(kubectl, kubeconfig, ['get', 'memcacheds.v1beta1.cache.example.com', 'memcached-sample', '-n', 'default', '-o', 'json']);
      if (got.code === 0) beta = JSON.parse(got.stdout);
      return got.code === 0;
    },
    { timeoutMs: 30_000 },
  );
  assert.equal(typeof beta?.spec.replicas, 'number');
  assert.equal(beta?.spec.size, undefined);

  // A second terminal: status and enqueue find the loop through .operless/dev.json.
  const status = await run(['status', '--json'], project);
  assert.equal(status.code, 0, status.stderr + status.stdout);
  const report = JSON.parse(status.stdout) as Record<string, any>;
  assert.equal(report.queue.state, 'ok');
  assert.equal(report.dlq.state, 'ok');
  assert.equal(report.forwarder.state, 'ok');
  assert.equal(report.forwarder.value.ready, true);
  assert.equal(report.forwarder.value.metrics.operless_forwarder_watches_synced, 1);
  const memcached = (report.objects.value as { kind: string; total: number; notReconciled: number }[]).find((k) => k.kind === 'Memcached');
  assert.deepEqual({ total: memcached?.total, notReconciled: memcached?.notReconciled }, { total: 1, notReconciled: 0 });

  const enqueued = await run(['enqueue', 'mc/default/memcached-sample'], project);
  assert.equal(enqueued.code, 0, enqueued.stderr);
  await waitFor(/reconciled\s+key=Memcached\/default\/memcached-sample result=\w+ .*reason=Resync/, 'the enqueued Resync was reconciled');

  // operless preview against the loop's cluster (found through .operless/dev.json, no flags):
  // the converged sample would change nothing (exit 0) once the loop has settled.
  let preview = { code: -1, stdout: '', stderr: '' };
  await waitUntil(
    'the converged sample previews unchanged',
    async () => {
      preview = await run(['preview', '--all'], project!);
      return preview.code === 0;
    },
    { timeoutMs: 60_000 },
  );
  assert.match(preview.stdout, /1 object\(s\) previewed: 0 would change, 0 would fail, 1 unchanged; nothing was written\./, preview.stdout + preview.stderr);

  // operless dlq replay against the loop: a dead-lettered message about the sample, put in the
  // loop's (FIFO) DLQ, runs through the current code with nothing to change, and stays there.
  const state = readDevState(project);
  assert.ok(state, '.operless/dev.json');
  const sqs = new SQSClient({ endpoint: state.sqsEndpoint, region: state.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const body = encodeMessage({
    ...newMessage(
      { cluster: state.cluster, apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'memcached-sample' },
      'Retry',
    ),
    attempt: 4,
  });
  const sent = await sqs.send(
    new SendMessageCommand({
      QueueUrl: state.dlqUrl,
      MessageBody: body,
      MessageGroupId: 'Memcached/default/memcached-sample',
      MessageDeduplicationId: 'replay-e2e',
    }),
  );
  const replay = await run(['dlq', 'replay', sent.MessageId ?? ''], project);
  assert.equal(replay.code, 0, replay.stdout + replay.stderr);
  assert.match(replay.stdout, /replayed with the current code \(Retry, attempt 4\)/);
  assert.match(replay.stdout, /the current code reconciles it with nothing to change: `operless dlq redrive` would now succeed\./);
  const listed = await run(['dlq', 'list', '--json'], project);
  assert.deepEqual(
    (JSON.parse(listed.stdout) as { messageId: string }[]).map((m) => m.messageId),
    [sent.MessageId],
    'the replayed message stays in the DLQ',
  );

  const tree = processTree(dev.pid!);
  assert.ok(
    tree.some((p) => /kube-apiserver/.test(p.command)),
    `the control plane runs under operless dev:\n${tree.map((p) => `${p.pid} ${p.command}`).join('\n')}`,
  );
  assert.ok(tree.some((p) => /etcd/.test(p.command)));

  dev.kill('SIGINT');
  const { code, signal } = await exited;
  assert.equal(signal, null, output().slice(-2000));
  assert.equal(code, 0, output().slice(-2000));
  assert.match(output(), /stopped; nothing left running/);

  // Give reparented wrappers a moment to finish exiting, then nothing of the tree may remain.
  assert.deepEqual(await survivors(tree), [], 'processes survived operless dev');
  assert.equal(existsSync(join(project, '.operless', 'dev.json')), false, 'the state file is removed on stop');
});
