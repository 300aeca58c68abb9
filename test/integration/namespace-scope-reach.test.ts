/**
 * Namespace-scoped mode stays in its namespaces when one of them is forbidden (issue 29, item
 * 11), on the real API server and ElasticMQ. The scope is team-a, team-b, team-c; the identity
 * (the function's RBAC as `operless rbac --namespaces team-a,team-c` prints it) may list in
 * team-a and team-c only, so team-b answers 403 — the state of an install whose RBAC missed a
 * namespace, or whose scope lists one too many.
 *
 * - The scheduled resync logs team-b with a counter and still resyncs team-c (after it), then
 *   rejects naming team-b; before, the 403 aborted every namespace after it.
 * - `operless status` lists in the scope's namespaces and reports team-b as forbidden (exit 1);
 *   without a scope it reports "all namespaces" as forbidden with how to scope, instead of
 *   failing the section whole; with OPERLESS_NAMESPACES=team-a,team-c it is all green.
 * - `operless enqueue --all` sends for team-a and team-c and names team-b (exit 1); a
 *   `--namespace` outside the scope is refused before anything is sent.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, startControlPlane, type Broker, type ControlPlane, type Identity } from '../../src/testing/index.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { createResyncHandler, ResyncError } from '../../src/core/resync/resync.ts';
import { createLogger } from '../../src/observability/log.ts';
import { MEMCACHED } from '../../src/memcached/types.ts';
import { applyScopedFunctionIdentity } from '../support/identities.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'src', 'cli', 'main.ts');
const CRD = join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml');
const CLUSTER = 'scope-reach';
const SCOPE = ['team-a', 'team-b', 'team-c'];
const ALLOWED = ['team-a', 'team-c'];

let cp: ControlPlane;
let broker: Broker;
let fn: Identity;
const home = mkdtempSync(join(tmpdir(), 'operless-scope-reach-'));

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [CRD] }), startBroker()]);
  for (const ns of SCOPE) {
    assert.equal((await cp.kubectl(['create', 'namespace', ns])).code, 0);
    const created = await cp.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: MEMCACHED.apiVersion, kind: 'Memcached', metadata: { name: `mc-${ns}`, namespace: ns }, spec: { size: 1 } }),
    });
    assert.equal(created.code, 0, created.stderr);
  }
  fn = (await applyScopedFunctionIdentity(cp, ALLOWED)).identity;
});
after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
  rmSync(home, { recursive: true, force: true });
});

async function drain(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const keys: string[] = [];
  for (;;) {
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    if (!got.Messages?.length) return keys.sort();
    for (const m of got.Messages) {
      const body = JSON.parse(m.Body ?? '{}') as { namespace: string; name: string; reason: string };
      assert.equal(body.reason, 'Resync');
      keys.push(`${body.namespace}/${body.name}`);
    }
  }
}

test('resync: a forbidden namespace is logged and counted, and the namespace after it is still resynced', async () => {
  const queueUrl = await broker.createQueue({ name: 'scope-reach-resync' });
  const lines: Record<string, unknown>[] = [];
  const handler = createResyncHandler({
    kinds: [MEMCACHED],
    env: { OPERLESS_QUEUE_URL: queueUrl, OPERLESS_CLUSTER: CLUSTER, OPERLESS_NAMESPACES: SCOPE.join(',') },
    clientFor: createClientFactory({ sources: { [CLUSTER]: { type: 'file', path: fn.kubeconfigPath } }, env: {} }),
    sqs: broker.sqs(),
    log: createLogger({ write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
  });
  await assert.rejects(handler({}), (err) => {
    assert.ok(err instanceof ResyncError, String(err));
    assert.deepEqual({ sent: err.report.sent, forbidden: err.report.forbidden }, { sent: 2, forbidden: 1 });
    assert.match(err.message, /refused to list Memcached in namespace team-b \(403/);
    return true;
  });
  assert.deepEqual(await drain(broker.sqs(), queueUrl), ['team-a/mc-team-a', 'team-c/mc-team-c'], 'team-c, listed after the forbidden team-b, is resynced');
  const warning = lines.find((l) => l.level === 'warn' && String(l.msg).startsWith('list forbidden'));
  assert.ok(warning, 'a warning for the forbidden list');
  assert.deepEqual([warning.kind, warning.namespace], ['Memcached', 'team-b']);
});

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function cli(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args, '--project', ROOT, '--kubeconfig', fn.kubeconfigPath],
      {
        cwd: home,
        env: { PATH: process.env.PATH ?? '', HOME: home, AWS_ENDPOINT_URL_SQS: broker.endpoint, AWS_REGION: broker.region, OPERLESS_CLUSTER: CLUSTER, ...env },
        timeout: 60_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

type Objects = { state: string; value?: { kind: string; total: number; listedIn: string[]; forbidden: string[] }[]; error?: string };

test("operless status lists in the install's namespaces and names a forbidden one, rather than failing whole", async () => {
  const scoped = await cli(['status', '--json', '--namespaces', SCOPE.join(',')]);
  assert.equal(scoped.code, 1, 'a forbidden namespace makes the exit code 1');
  const objects = (JSON.parse(scoped.stdout) as { objects: Objects }).objects;
  assert.equal(objects.state, 'ok', scoped.stdout);
  assert.deepEqual(
    objects.value?.map((k) => [k.kind, k.total, k.listedIn, k.forbidden]),
    [['Memcached', 2, ALLOWED, ['team-b']]],
  );
  const text = await cli(['status', '--namespaces', SCOPE.join(',')]);
  assert.match(text.stdout, /Memcached: 2 total, .* \(in team-a, team-c\)/);
  assert.match(text.stdout, /✘ forbidden \(403\) in team-b: not counted; grant this identity list there/);

  const wide = await cli(['status', '--json']);
  const wideObjects = (JSON.parse(wide.stdout) as { objects: Objects }).objects;
  assert.equal(wideObjects.state, 'ok', 'a cluster-wide 403 is reported, not a failed section');
  assert.deepEqual(wideObjects.value?.[0]?.forbidden, ['all namespaces']);
  assert.match((await cli(['status'])).stdout, /forbidden \(403\) in all namespaces: not counted; a namespace-scoped install\? pass --namespaces/);

  const fromEnv = await cli(['status', '--json'], { OPERLESS_NAMESPACES: ALLOWED.join(',') });
  assert.equal(fromEnv.code, 0, fromEnv.stdout + fromEnv.stderr);
  assert.deepEqual(
    (JSON.parse(fromEnv.stdout) as { objects: Objects }).objects.value?.map((k) => [k.total, k.forbidden]),
    [[2, []]],
  );
});

test('operless enqueue --all sends for the namespaces it may list and names the forbidden one; a --namespace outside the scope is refused', async () => {
  const queueUrl = await broker.createQueue({ name: 'scope-reach-enqueue' });
  const all = await cli(['enqueue', 'mc', '--all', '--json', '--namespaces', SCOPE.join(','), '--queue-url', queueUrl]);
  assert.equal(all.code, 1, all.stdout + all.stderr);
  const summary = JSON.parse(all.stdout) as { sent: number; forbidden: number; error: string; objects: string[] };
  assert.equal(summary.sent, 2);
  assert.equal(summary.forbidden, 1);
  assert.match(summary.error, /Memcached in namespace team-b \(403/);
  assert.deepEqual(await drain(broker.sqs(), queueUrl), ['team-a/mc-team-a', 'team-c/mc-team-c']);
  const text = await cli(['enqueue', 'mc', '--all', '--namespaces', SCOPE.join(','), '--queue-url', queueUrl]);
  assert.match(text.stdout, /✘ resync enqueued 2 of 2 objects; the API server refused to list Memcached in namespace team-b/);
  await drain(broker.sqs(), queueUrl);

  const outside = await cli(['enqueue', 'mc', '--all', '--namespace', 'kube-system', '--namespaces', ALLOWED.join(','), '--queue-url', queueUrl]);
  assert.notEqual(outside.code, 0);
  assert.match(outside.stderr, /--namespace kube-system is outside the install's namespaces \(team-a, team-c\)/);
  assert.deepEqual(await drain(broker.sqs(), queueUrl), [], 'nothing was sent');
});
