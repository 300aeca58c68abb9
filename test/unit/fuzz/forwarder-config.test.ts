/**
 * Invalid forwarder configuration: `parseConfig` rejects every bad field with a
 * `ConfigError` whose problem list names that field (`path: what is wrong`), for a table of
 * bad values planted one at a time into a valid document, and for random documents —
 * never another exception, never a silently accepted bad value from the table.
 * (test/unit/forwarder/config.test.ts covers the defaults and env overrides; this file is
 * the bad-input breadth.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcParameters } from '../../support/fast-check.ts';
import { ConfigError, parseConfig } from '../../../src/forwarder/config/config.ts';

const valid = () => ({
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [
    { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true, namespaces: ['team-a'], triggers: ['generation'] },
  ],
  owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }],
  buffer: { maxMessages: 100 },
  send: { maxBatchBytes: 65536, backoffInitialMs: 100, backoffMaxMs: 1000 },
  watch: { silenceTimeoutSeconds: 60, listPageSize: 100 },
  leaderElection: { enabled: true, leaseName: 'fwd', namespace: 'operless' },
  server: { port: 8080 },
});

function setPath(doc: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let at: Record<string, unknown> = doc;
  for (const p of parts.slice(0, -1)) at = at[p] as Record<string, unknown>;
  const last = parts.at(-1)!;
  if (value === DELETE) delete at[last];
  else at[last] = value;
}
const DELETE = Symbol('delete');

function problemsOf(doc: unknown, env: Record<string, string> = {}): string[] | undefined {
  try {
    parseConfig(doc, env);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof ConfigError, `only ConfigError is thrown, got ${String(err)}`);
    assert.match(err.message, /invalid forwarder configuration/);
    assert.match(err.message, /docs\/forwarder\.md/, 'the message says where to read about the fields');
    return [...err.problems];
  }
}

/** [field path, bad value, the problem's field path (default: the same)] */
const BAD: [string, unknown, string?][] = [
  ['clusterId', DELETE],
  ['clusterId', ''],
  ['clusterId', 'has space'],
  ['clusterId', 42],
  ['clusterId', '-leading'],
  ['clusterId', ['a']],
  ['queue', 'https://x'],
  ['queue.url', DELETE],
  ['queue.url', 'ftp://host/q'],
  ['queue.url', 'not a url'],
  ['queue.url', 7],
  ['queue.region', 'Europe'],
  ['queue.endpoint', 'localhost:9324'],
  ['queue.extra', 1],
  ['primaries', DELETE],
  ['primaries', []],
  ['primaries', 'Memcached'],
  ['primaries', {}],
  ['primaries[0]', null],
  ['primaries[0]', 'Memcached'],
  ['primaries[0].apiVersion', DELETE],
  ['primaries[0].apiVersion', 'cache.example.com'],
  ['primaries[0].apiVersion', 'Cache/V1'],
  ['primaries[0].apiVersion', 1],
  ['primaries[0].kind', 'memcached'],
  ['primaries[0].kind', DELETE],
  ['primaries[0].kind', 'Mem cached'],
  ['primaries[0].kind', ''],
  ['primaries[0].plural', 'Memcacheds'],
  ['primaries[0].plural', 'mem_cacheds'],
  ['primaries[0].plural', false],
  ['primaries[0].namespaced', 'yes'],
  ['primaries[0].namespaced', 1],
  ['primaries[0].namespaces', 'team-a'],
  ['primaries[0].namespaces[0]', 'Team_A', 'primaries[0].namespaces[0]'],
  ['primaries[0].namespaces[0]', 3],
  ['primaries[0].triggers', []],
  ['primaries[0].triggers', 'generation'],
  ['primaries[0].triggers[0]', 'spec'],
  ['primaries[0].triggers[0]', null],
  ['primaries[0].labelSelector', 5],
  ['primaries[0].watchAll', true],
  ['owned[0].kind', 'deployment'],
  ['owned', 'Deployment'],
  ['buffer', 5],
  ['buffer.maxMessages', 0],
  ['buffer.maxMessages', -1],
  ['buffer.maxMessages', 'many'],
  ['buffer.maxMessages', 1e12],
  ['buffer.size', 10],
  ['send.maxBatchBytes', 100],
  ['send.maxBatchBytes', 2 * 1024 * 1024],
  ['send.backoffInitialMs', 0],
  ['send.backoffMaxMs', 10],
  ['send.retries', 3],
  ['watch.silenceTimeoutSeconds', 0],
  ['watch.listPageSize', 0],
  ['watch.listPageSize', 100_000],
  ['watch.backoffMaxMs', Number.NaN],
  ['watch.resync', 1],
  ['leaderElection.enabled', 'on'],
  ['leaderElection.leaseName', 'Bad_Name'],
  ['leaderElection.namespace', 'Not A Namespace'],
  ['leaderElection.leaseDurationSeconds', 0],
  ['leaderElection.renewDeadlineSeconds', 20],
  ['leaderElection.retryPeriodSeconds', 12],
  ['leaderElection.term', 5],
  ['server', 'localhost'],
  ['server.port', 70_000],
  ['server.port', -1],
  ['server.port', 'http'],
  ['server.host', 5],
  ['resyncOnStart', 'sometimes'],
  ['coalesceWindowMs', -5],
  ['coalesceWindowMs', 3_600_000],
  ['shutdownGraceMs', 'soon'],
  ['watches', [], 'watches'],
  ['unknownTopLevel', 1],
];

test('every bad field planted into a valid config is rejected with a problem naming it', () => {
  assert.equal(problemsOf(valid()), undefined, 'the base document is valid');
  const missed: string[] = [];
  for (const [path, value, expected = path] of BAD) {
    const doc = valid() as unknown as Record<string, unknown>;
    setPath(doc, path, value);
    const problems = problemsOf(doc);
    const shown = value === DELETE ? '(deleted)' : JSON.stringify(value);
    if (!problems) {
      missed.push(`${path} = ${shown}: accepted`);
      continue;
    }
    // A problem's path is the field itself or an enclosing one (a bad list names the list).
    const base = expected.replace(/\[\d+\]$/, '');
    if (!problems.some((p) => p.startsWith(`${expected}:`) || p.startsWith(`${base}:`) || p.startsWith(`${expected}.`) || p.startsWith(`${expected}[`))) {
      missed.push(`${path} = ${shown}: problems do not name it: ${problems.join(' | ')}`);
    }
    for (const p of problems) assert.match(p, /^[\w.[\]()]+: \S/, `each problem is "field: what is wrong": ${p}`);
  }
  assert.deepEqual(missed, []);
});

test('environment overrides are validated like the file (OPERLESS_CLUSTER, OPERLESS_QUEUE_URL, OPERLESS_FORWARDER_PORT, OPERLESS_LEADER_ELECTION)', () => {
  const cases: [Record<string, string>, string][] = [
    [{ OPERLESS_CLUSTER: 'bad cluster' }, 'clusterId'],
    [{ OPERLESS_QUEUE_URL: 'queue' }, 'queue.url'],
    [{ OPERLESS_QUEUE_REGION: 'mars' }, 'queue.region'],
    [{ OPERLESS_FORWARDER_PORT: 'eighty' }, 'server.port'],
    [{ OPERLESS_LEADER_ELECTION: 'maybe' }, 'leaderElection.enabled'],
    [{ POD_NAMESPACE: 'Bad NS' }, 'leaderElection.namespace'],
  ];
  for (const [env, field] of cases) {
    const doc = valid() as unknown as Record<string, unknown>;
    if (field === 'leaderElection.namespace') delete (doc.leaderElection as Record<string, unknown>).namespace;
    const problems = problemsOf(doc, env);
    assert.ok(
      problems?.some((p) => p.startsWith(`${field}:`)),
      `${JSON.stringify(env)} → ${problems?.join(' | ') ?? 'accepted'}`,
    );
  }
});

test('random documents: parseConfig returns a config or throws ConfigError with field-named problems, nothing else', () => {
  const doc = fc.oneof(
    fc.jsonValue(),
    fc.dictionary(
      fc.constantFrom('clusterId', 'queue', 'primaries', 'owned', 'buffer', 'send', 'watch', 'leaderElection', 'server', 'resyncOnStart', '__proto__'),
      fc.jsonValue(),
    ),
    fc.tuple(fc.constantFrom(...BAD.map((b) => b[0])), fc.jsonValue()).map(([path, value]) => {
      const d = valid() as unknown as Record<string, unknown>;
      try {
        setPath(d, path, value);
      } catch {
        /* path vanished under an earlier mutation */
      }
      return d;
    }),
  );
  fc.assert(
    fc.property(doc, (d) => {
      const problems = problemsOf(d);
      if (problems) {
        assert.ok(problems.length > 0);
        // Keys of a random document can be any string, so only the shape "field: why" is checked.
        for (const p of problems) assert.match(p, /: \S/, `problem is "field: what is wrong": ${p}`);
      }
    }),
    fcParameters({ numRuns: 500 }),
  );
});

// A fractional port would fail later at listen() (exit 1 instead of 2); a fractional
// listPageSize would make every LIST answer 400: integer fields refuse fractions up front.
test('integer fields reject fractions', () => {
  for (const [path, value] of [
    ['server.port', 80.5],
    ['watch.listPageSize', 1.5],
    ['buffer.maxMessages', 10.5],
  ] as const) {
    const doc = valid() as unknown as Record<string, unknown>;
    setPath(doc, path, value);
    assert.ok(
      problemsOf(doc)?.some((p) => p.startsWith(`${path}:`)),
      `${path} = ${value} accepted`,
    );
  }
});
