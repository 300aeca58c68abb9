/**
 * Hostile objects against the forwarder as the process its image runs (the esbuild bundle),
 * a REAL kube-apiserver + etcd and a REAL broker (ElasticMQ), watching what the shipped
 * config watches (Memcached primaries, their Deployments and Services) under the shipped
 * ServiceAccount:
 *
 * - issue 20's exact object (a Deployment whose controller reference names `Memcached
 *   Bad_Name`) is dropped with a reason and the forwarder goes on forwarding;
 * - property-based fuzzing: objects with arbitrary metadata, owner references, labels,
 *   annotations and sizes (up to the API server's own limits), applied to every watched kind
 *   and interleaved with valid Memcacheds. Whatever the API server accepts is either routed
 *   to a valid message (every Memcached, every child whose controller is a Memcached the
 *   contract can name) or dropped and counted with its reason — the test's oracle computes
 *   which from the objects as the API server stored them. The forwarder stays up and ready.
 *   `OPERLESS_FC_SEED` replays a run, `OPERLESS_FC_RUNS` sizes it (scripts/fuzz-forwarder.ts
 *   runs a long one);
 * - the last resort: an uncaught exception and an unhandled rejection (injected with
 *   `node --import`, no hook in the product) end the process with one ERROR line, the held
 *   messages flushed, exit code 4.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { createKubeApi, KubeApiError, type KubeApi } from '../../src/kube/api.ts';
import { checkMessageField, type ReconcileMessage } from '../../src/contract/message.ts';
import { applyForwarderIdentity, type ForwarderIdentity } from '../support/identities.ts';
import { replayFromEnv } from '../support/fast-check.ts';
import { collect, startBundleEnv, type BundleEnv, type LoggedChild } from './forwarder-env.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const MEMCACHED_CRD = join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml');
const MC_API = 'cache.example.com/v1alpha1';

let cp: ControlPlane;
let broker: Broker;
let admin: KubeApi;
let identity: ForwarderIdentity;
let env: BundleEnv;

before(async () => {
  env = await startBundleEnv({
    name: 'fwd-hostile',
    crds: [MEMCACHED_CRD],
    queues: [{ name: 'issue' }, { name: 'fuzz' }, { name: 'crash-throw' }, { name: 'crash-reject' }],
  });
  ({ cp, broker } = env);
  admin = createKubeApi(cp.kubeConfig);
  identity = await applyForwarderIdentity(cp);
});
after(async () => {
  await admin?.close?.();
  await env?.stop();
});

// ---- the forwarder process -----------------------------------------------------------------

/** The bundle as the image runs it, with the shipped watches scoped to `namespaces`, as the shipped ServiceAccount. */
function runForwarder(
  name: string,
  queue: string,
  namespaces: readonly string[],
  options: { config?: Record<string, unknown>; nodeArgs?: readonly string[] } = {},
): LoggedChild {
  const shipped = identity.config as { primaries?: object[]; owned?: object[] };
  const scoped = (list: readonly object[] | undefined) => (list ?? []).map((w) => ({ ...w, namespaces: [...namespaces] }));
  const config = {
    clusterId: 'hostile',
    queue: { url: broker.queueUrl(queue), region: broker.region },
    primaries: scoped(shipped.primaries),
    owned: scoped(shipped.owned),
    leaderElection: { enabled: false },
    server: { port: 0, host: '127.0.0.1' },
    coalesceWindowMs: 200,
    resyncOnStart: false,
    send: { backoffInitialMs: 50, backoffMaxMs: 1000 },
    watch: { backoffInitialMs: 100, backoffMaxMs: 2000 },
    ...options.config,
  };
  return env.runBundle(name, config, { kubeconfigPath: identity.identity.kubeconfigPath, ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}) });
}

/** The samples of a Prometheus metric, by their label text (`reason="invalid_name"`). */
async function metric(probes: string, name: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${probes}/metrics`)).text();
  const out = new Map<string, number>();
  for (const l of text.split('\n')) {
    const m = l.match(/^(\w+)(?:\{(.*)\})? (\S+)$/);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

async function readyz(probes: string): Promise<number> {
  return (await fetch(`${probes}/readyz`)).status;
}

// ---- objects -------------------------------------------------------------------------------

type WatchedKind = 'Memcached' | 'Deployment' | 'Service';
const PATHS: Record<WatchedKind, (ns: string) => string> = {
  Memcached: (ns) => `/apis/${MC_API}/namespaces/${ns}/memcacheds`,
  Deployment: (ns) => `/apis/apps/v1/namespaces/${ns}/deployments`,
  Service: (ns) => `/api/v1/namespaces/${ns}/services`,
};

function body(kind: WatchedKind, metadata: Record<string, unknown>): Record<string, unknown> {
  switch (kind) {
    case 'Memcached':
      return { apiVersion: MC_API, kind, metadata, spec: { size: 1 } };
    case 'Deployment':
      return {
        apiVersion: 'apps/v1',
        kind,
        metadata,
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'h' } },
          template: { metadata: { labels: { app: 'h' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
        },
      };
    case 'Service':
      return { apiVersion: 'v1', kind, metadata, spec: { clusterIP: 'None', ports: [{ port: 80 }] } }; // headless: no IP range to exhaust
  }
}

/** Why the API server refused objects (the field it named), for the fuzz summary line. */
const refusals = new Map<string, number>();

/** Creates the object; the stored object when the API server accepts it, undefined when it refuses it. */
async function tryCreate(kind: WatchedKind, namespace: string, metadata: Record<string, unknown>): Promise<Record<string, any> | undefined> {
  try {
    return await admin.requestJson<Record<string, any>>('POST', `${PATHS[kind](namespace)}?fieldManager=hostile-test`, {
      body: body(kind, { ...metadata, namespace }),
      timeoutMs: 120_000,
    });
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status < 400) throw err;
    const field = err.message.match(/(metadata\.[a-zA-Z]+)/)?.[1] ?? `${err.status} ${err.reason}`;
    refusals.set(field, (refusals.get(field) ?? 0) + 1);
    if (process.env.OPERLESS_FUZZ_VERBOSE) process.stdout.write(`refused: ${err.message.slice(0, 300)}\n`);
    return undefined;
  }
}

async function createNamespace(name: string): Promise<void> {
  await admin.requestJson('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
}

const keyOf = (m: Pick<ReconcileMessage, 'kind' | 'namespace' | 'name'>) => `${m.kind}/${m.namespace ?? ''}/${m.name}`;

/**
 * The oracle: what the forwarder must do with an object the API server stored — the message
 * key it routes to, a drop with its reason, or nothing (no controller, or one that is not a
 * Memcached). Written from the API's rules (the FIRST `controller: true` reference is the
 * controller; group and kind must match, any version) and the contract's field validators.
 */
function expectation(kind: WatchedKind, stored: Record<string, any>): { key: string } | { drop: string } | undefined {
  const ns = stored.metadata.namespace as string;
  if (kind === 'Memcached') return { key: `Memcached/${ns}/${stored.metadata.name}` };
  const refs = (stored.metadata.ownerReferences ?? []) as { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  const controller = refs.find((r) => r.controller === true);
  if (!controller || controller.kind !== 'Memcached' || controller.apiVersion.split('/')[0] !== 'cache.example.com' || !controller.apiVersion.includes('/'))
    return undefined;
  if (checkMessageField('name', controller.name)) return { drop: 'invalid_name' };
  if (checkMessageField('uid', controller.uid)) return { drop: 'invalid_uid' };
  return { key: `Memcached/${ns}/${controller.name}` };
}

// ---- issue 20's object -----------------------------------------------------------------------

test('issue 20: a Deployment controlled by "Memcached Bad_Name" is dropped with a reason; the forwarder stays up and forwards on', async () => {
  const ns = 'issue-20';
  await createNamespace(ns);
  const run = runForwarder('issue', 'issue', [ns]);
  const probes = String((await run.line(/forwarder running/)).probes);
  const stored = await tryCreate('Deployment', ns, {
    name: 'bad-owner',
    ownerReferences: [{ apiVersion: MC_API, kind: 'Memcached', name: 'Bad_Name', uid: '00000000-0000-0000-0000-000000000000', controller: true }],
  });
  assert.ok(stored, 'the API server accepts the object of the issue (it does not validate owner reference names)');
  const warn = await run.line(/change dropped/);
  assert.equal(warn.level, 'warn');
  assert.equal(warn.key, `Deployment/${ns}/bad-owner`);
  assert.equal(warn.reason, 'invalid_name');
  assert.deepEqual((warn.owner as Record<string, unknown>).name, 'Bad_Name');
  assert.ok(await tryCreate('Memcached', ns, { name: 'after-the-bad-one' }));
  const messages = await collect(broker.sqs(), broker.queueUrl('issue'), { until: (m) => m.some((x) => x.name === 'after-the-bad-one'), timeoutMs: 30_000 });
  assert.deepEqual(messages.map(keyOf), [`Memcached/${ns}/after-the-bad-one`], 'nothing for Bad_Name; the next object forwarded');
  assert.equal(run.child.exitCode, null, `the forwarder is still running; stderr:\n${run.stderr()}`);
  assert.equal(await readyz(probes), 200);
  assert.deepEqual([...(await metric(probes, 'operless_forwarder_events_dropped_total'))], [['reason="invalid_name"', 1]]);
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0);
});

// ---- property-based fuzzing ------------------------------------------------------------------

const validName = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?$/);
const hostileString = fc.oneof(
  { arbitrary: validName, weight: 4 },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }), weight: 1 },
  {
    arbitrary: fc.constantFrom('Bad_Name', '-a', 'a-', 'a..b', 'UPPER', 'a.b', 'a/b', 'x:y', ' ', '日本語', '\u0000', 'a'.repeat(253), 'a'.repeat(254)),
    weight: 2,
  },
  { arbitrary: fc.constantFrom(129, 254, 4_000, 100_000).map((n) => 'n'.repeat(n)), weight: 1 },
);
const ownerRef = fc.record(
  {
    apiVersion: fc.oneof(
      {
        arbitrary: fc.constantFrom(MC_API, MC_API, MC_API, 'cache.example.com/v1', 'cache.example.com/v9beta9', 'apps/v1', 'v1', 'Cache.Example.com/v1alpha1'),
        weight: 8,
      },
      { arbitrary: fc.constantFrom('cache.example.com/', 'x/y/z', '/v1'), weight: 1 }, // refused: no version
      { arbitrary: hostileString, weight: 1 },
    ),
    kind: fc.oneof(
      { arbitrary: fc.constantFrom('Memcached', 'Memcached', 'Memcached', 'Deployment', 'Service', 'memcached', 'Tenant'), weight: 6 },
      { arbitrary: hostileString, weight: 1 },
    ),
    name: hostileString,
    uid: fc.oneof(
      { arbitrary: fc.uuid(), weight: 3 },
      { arbitrary: hostileString, weight: 1 },
      { arbitrary: fc.constantFrom(128, 129, 1000).map((n) => 'u'.repeat(n)), weight: 1 },
    ),
    controller: fc.option(fc.boolean(), { nil: undefined }),
  },
  { requiredKeys: ['apiVersion', 'kind', 'name', 'uid'] },
);
const labelKey = fc.oneof(validName, fc.string({ maxLength: 70 }), fc.constantFrom('example.com/a', 'a/b/c', 'kubernetes.io/x', 'x'.repeat(64)));
const labelValue = fc.oneof(validName, fc.string({ maxLength: 70 }), fc.constant(''), fc.constant('v'.repeat(64)));
const hostileMetadata = fc.record(
  {
    ownerReferences: fc.array(ownerRef, { maxLength: 3 }),
    // mostly keys the API server takes (a refused object tests nothing), sometimes anything
    labels: fc.oneof(
      { arbitrary: fc.dictionary(validName, validName, { maxKeys: 4 }), weight: 6 },
      { arbitrary: fc.dictionary(labelKey, labelValue, { maxKeys: 3 }), weight: 1 },
    ),
    annotations: fc.oneof(
      {
        arbitrary: fc.dictionary(
          validName.map((k) => `hostile.example.com/${k}`),
          fc.string({ unit: 'grapheme', maxLength: 200 }),
          { maxKeys: 3 },
        ),
        weight: 6,
      },
      { arbitrary: fc.dictionary(labelKey, fc.string({ maxLength: 100 }), { maxKeys: 3 }), weight: 1 },
    ),
    // up to the limits: 256 KiB of annotations in all, an object near etcd's 1.5 MiB request limit
    bulk: fc.constantFrom(0, 0, 0, 100_000, 261_000, 263_000, 1_400_000),
  },
  { requiredKeys: ['ownerReferences', 'labels', 'annotations', 'bulk'] },
);
const hostileObject = fc.record({
  kind: fc.constantFrom<WatchedKind>('Memcached', 'Deployment', 'Service'),
  nameSuffix: fc.oneof({ arbitrary: validName, weight: 5 }, { arbitrary: hostileString, weight: 1 }),
  odd: fc.boolean(), // the 63-character namespace
  metadata: hostileMetadata,
});
const fuzzRun = fc.array(hostileObject, { minLength: 1, maxLength: 4 });

/** `OPERLESS_FC_RUNS` (a positive integer; anything else is refused), else `fallback`. */
function runsFromEnv(fallback: number): number {
  const raw = process.env.OPERLESS_FC_RUNS;
  if (raw === undefined) return fallback;
  const runs = Number(raw);
  if (!Number.isSafeInteger(runs) || runs < 1) throw new Error(`OPERLESS_FC_RUNS=${JSON.stringify(raw)} is refused: it must be a positive number of runs`);
  return runs;
}

type HostileObject = typeof hostileObject extends fc.Arbitrary<infer T> ? T : never;

const controlledBy = (ref: Record<string, unknown>) => ({
  ownerReferences: [{ apiVersion: MC_API, kind: 'Memcached', uid: '22222222-2222-2222-2222-222222222222', controller: true, ...ref }],
});

/** Objects every fuzz run applies first: one per reason and per case the issue names. */
const EDGE_CASES: { kind: WatchedKind; metadata: Record<string, unknown> }[] = [
  { kind: 'Deployment', metadata: { name: 'edge-bad-name', ...controlledBy({ name: 'Bad_Name' }) } },
  { kind: 'Service', metadata: { name: 'edge-long-name', ...controlledBy({ name: 'a'.repeat(254) }) } },
  { kind: 'Deployment', metadata: { name: 'edge-long-uid', ...controlledBy({ name: 'edge-owner', uid: 'u'.repeat(129) }) } },
  { kind: 'Service', metadata: { name: 'edge-huge-owner', ...controlledBy({ name: 'n'.repeat(1_400_000) }) } },
  { kind: 'Service', metadata: { name: 'edge-owned-owner', ...controlledBy({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'edge-bad-name' }) } },
  { kind: 'Deployment', metadata: { name: 'edge-other-version', ...controlledBy({ apiVersion: 'cache.example.com/v9', name: 'edge-versioned' }) } },
  {
    kind: 'Deployment',
    metadata: {
      name: 'edge-two-refs',
      ownerReferences: [
        { apiVersion: MC_API, kind: 'Memcached', name: 'edge-not-controller', uid: 'x' },
        { apiVersion: MC_API, kind: 'Memcached', name: 'edge-controller', uid: 'y', controller: true },
      ],
    },
  },
  {
    kind: 'Deployment',
    metadata: {
      name: 'edge-two-controllers',
      ownerReferences: [
        // refused by the API server
        { apiVersion: MC_API, kind: 'Memcached', name: 'edge-c1', uid: 'x', controller: true },
        { apiVersion: MC_API, kind: 'Memcached', name: 'edge-c2', uid: 'y', controller: true },
      ],
    },
  },
  {
    kind: 'Memcached',
    metadata: { name: 'a'.repeat(253), labels: { ['l'.repeat(63)]: 'v'.repeat(63) }, annotations: { 'hostile.example.com/big': 'b'.repeat(250_000) } },
  },
];

function materialise(i: number, j: number, o: HostileObject): Record<string, unknown> {
  const { bulk, ...meta } = o.metadata;
  const annotations: Record<string, string> = { ...meta.annotations };
  let ownerReferences = meta.ownerReferences;
  if (bulk > 0 && bulk < 1_000_000) annotations['hostile.example.com/bulk'] = 'b'.repeat(bulk);
  // the API server refuses a second controller reference, so the huge one is the only one
  if (bulk >= 1_000_000)
    ownerReferences = [
      { apiVersion: MC_API, kind: 'Memcached', name: 'n'.repeat(bulk), uid: 'huge', controller: true },
      ...ownerReferences.map((r) => ({ ...r, controller: false })),
    ];
  return { name: `h${i}-${j}-${o.nameSuffix}`.slice(0, 300), labels: meta.labels, annotations, ownerReferences };
}

test('fuzz: whatever the API server accepts in a watched kind is routed to a valid message or dropped with a counted reason; the forwarder stays up and ready', async () => {
  const seed = replayFromEnv().seed ?? Math.floor(Math.random() * 0x7fffffff);
  const runs = runsFromEnv(25);
  const replay = `replay with OPERLESS_FC_SEED=${seed} OPERLESS_FC_RUNS=${runs}`;
  const namespaces = ['h', `h-${'x'.repeat(61)}`];
  for (const ns of namespaces) await createNamespace(ns);
  const run = runForwarder('fuzz', 'fuzz', namespaces);
  const probes = String((await run.line(/forwarder running/)).probes);

  const expectedKeys = new Set<string>();
  const expectedDrops = new Map<string, number>();
  let accepted = 0;
  let refused = 0;
  // Every run starts with the known edge cases, then the seed's random ones.
  const plan: { kind: WatchedKind; odd: boolean; metadata: Record<string, unknown> }[][] = [
    EDGE_CASES.map((c) => ({ ...c, odd: false })),
    ...fc.sample(fuzzRun, { seed, numRuns: runs }).map((objects, i) => objects.map((o, j) => ({ kind: o.kind, odd: o.odd, metadata: materialise(i, j, o) }))),
  ];
  for (const [i, objects] of plan.entries()) {
    for (const o of objects) {
      const ns = namespaces[o.odd ? 1 : 0]!;
      const stored = await tryCreate(o.kind, ns, o.metadata);
      if (!stored) {
        refused++;
        continue;
      }
      accepted++;
      const expected = expectation(o.kind, stored);
      if (expected && 'key' in expected) expectedKeys.add(expected.key);
      if (expected && 'drop' in expected) expectedDrops.set(expected.drop, (expectedDrops.get(expected.drop) ?? 0) + 1);
    }
    // interleaved valid objects
    const ns = namespaces[i % 2]!;
    assert.ok(await tryCreate('Memcached', ns, { name: `valid-${i}` }), 'a valid Memcached is accepted');
    expectedKeys.add(`Memcached/${ns}/valid-${i}`);
  }
  // One last valid object per watch stream (kind × namespace): once each one's message is in,
  // every earlier event of its stream has been handled.
  for (const ns of namespaces) {
    for (const kind of ['Memcached', 'Deployment', 'Service'] as const) {
      const owner = `sentinel-${kind.toLowerCase()}`;
      const metadata =
        kind === 'Memcached'
          ? { name: owner }
          : {
              name: `sentinel-${kind.toLowerCase()}`,
              ownerReferences: [{ apiVersion: MC_API, kind: 'Memcached', name: owner, uid: '11111111-1111-1111-1111-111111111111', controller: true }],
            };
      assert.ok(await tryCreate(kind, ns, metadata));
      expectedKeys.add(`Memcached/${ns}/${owner}`);
    }
  }

  const seen = new Set<string>();
  await collect(broker.sqs(), broker.queueUrl('fuzz'), {
    until: (all) => {
      for (const m of all) seen.add(keyOf(m));
      return [...expectedKeys].every((k) => seen.has(k)) || run.child.exitCode !== null;
    },
    timeoutMs: 120_000,
  });
  const summary = `${accepted} objects accepted, ${refused} refused by the API server ${JSON.stringify(Object.fromEntries(refusals))}, ${expectedKeys.size} keys, drops ${JSON.stringify(Object.fromEntries(expectedDrops))}`;
  process.stdout.write(`hostile-objects fuzz: seed ${seed}, ${runs} runs: ${summary}\n`);
  assert.equal(run.child.exitCode, null, `the forwarder died (${replay}); stderr:\n${run.stderr()}`);
  const missing = [...expectedKeys].filter((k) => !seen.has(k));
  assert.deepEqual(missing, [], `every valid object's message reached the queue (${replay})`);
  const unexpected = [...seen].filter((k) => !expectedKeys.has(k));
  assert.deepEqual(unexpected, [], `no message the oracle did not expect (${replay})`);

  const dropped = await metric(probes, 'operless_forwarder_events_dropped_total');
  const want = new Map([...expectedDrops].map(([reason, n]) => [`reason="${reason}"`, n]));
  assert.deepEqual(new Map([...dropped].filter(([, n]) => n > 0)), want, `every drop counted with its reason (${replay})`);
  const warned = run.lines.filter((l) => l.level === 'warn' && /change dropped/.test(String(l.msg)));
  assert.equal(
    warned.length,
    [...expectedDrops.values()].reduce((a, b) => a + b, 0),
    `one WARN line per drop (${replay})`,
  );
  for (const w of warned) assert.ok(String(w.key).length <= 400 && JSON.stringify(w).length < 4000, 'log lines stay small whatever the object holds');
  assert.equal(await readyz(probes), 200, `ready (${replay})`);
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0, `clean shutdown (${replay})`);
});

// ---- the last resort -------------------------------------------------------------------------

for (const fault of ['throw', 'reject'] as const) {
  test(`last resort: an ${fault === 'throw' ? 'uncaught exception' : 'unhandled rejection'} logs one ERROR line, flushes what is held and exits 4`, async () => {
    const ns = `crash-${fault}`;
    await createNamespace(ns);
    // Injected from outside the product: a module preloaded with --import fails on SIGUSR2.
    const injector = join(env.work, `fault-${fault}.mjs`);
    writeFileSync(
      injector,
      fault === 'throw'
        ? "process.on('SIGUSR2', () => setImmediate(() => { throw new Error('injected exception'); }));\n"
        : "process.on('SIGUSR2', () => setImmediate(() => { Promise.reject(new Error('injected rejection')); }));\n",
    );
    const run = runForwarder(`crash-${fault}`, `crash-${fault}`, [ns], {
      nodeArgs: ['--import', pathToFileURL(injector).href],
      config: { coalesceWindowMs: 60_000 },
    });
    const probes = String((await run.line(/forwarder running/)).probes);
    const queueUrl = broker.queueUrl(`crash-${fault}`);
    assert.ok(await tryCreate('Memcached', ns, { name: 'held' }));
    await collect(broker.sqs(), queueUrl, { until: (m) => m.length >= 1, timeoutMs: 30_000 });
    // The next change is held by the 60 s window: only a flush sends it.
    await admin.requestJson('PATCH', `${PATHS.Memcached(ns)}/held`, { body: { spec: { size: 2 } }, contentType: 'application/merge-patch+json' });
    const total = async (name: string) => [...(await metric(probes, name)).values()].reduce((a, b) => a + b, 0);
    await waitUntil('the change is held in the coalescing window', async () => (await total('operless_forwarder_messages_enqueued_total')) >= 2, {
      timeoutMs: 30_000,
    });
    assert.equal(await total('operless_forwarder_messages_sent_total'), 1, 'only the leading edge was sent');
    run.child.kill('SIGUSR2');
    assert.equal(await run.exited, 4, `exit code 4; stderr:\n${run.stderr()}`);
    const errors = run.lines.filter((l) => l.level === 'error');
    assert.equal(errors.length, 1, `one ERROR line: ${JSON.stringify(errors)}`);
    assert.match(String(errors[0]!.msg), fault === 'throw' ? /^uncaughtException: injected exception/ : /^unhandledRejection: injected rejection/);
    const flushed = await collect(broker.sqs(), queueUrl, { until: (m) => m.length >= 1, timeoutMs: 15_000 });
    assert.deepEqual(
      flushed.map((m) => `${m.reason} ${keyOf(m)}`),
      [`Modified Memcached/${ns}/held`],
      'the held change was flushed before exiting',
    );
  });
}
