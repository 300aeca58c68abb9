import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigError,
  DEFAULT_OWNED_TRIGGERS,
  DEFAULT_PRIMARY_TRIGGERS,
  isValidatedConfig,
  loadConfig,
  parseConfig,
} from '../../../src/forwarder/config/config.ts';

const minimal = {
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
};

function problems(doc: unknown, env = {}): string[] {
  try {
    parseConfig(doc, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return [...err.problems];
  }
  assert.fail('expected the config to be rejected');
}

test('a minimal config gets every default, and the region from the queue URL', () => {
  const c = parseConfig(minimal);
  assert.equal(c.queue.region, 'eu-west-1');
  assert.equal(c.watches.length, 1);
  assert.deepEqual(c.watches[0]!.triggers, DEFAULT_PRIMARY_TRIGGERS);
  assert.deepEqual(c.watches[0]!.namespaces, []);
  assert.equal(c.leaderElection.enabled, false);
  assert.equal(c.leaderElection.leaseDurationSeconds, 15);
  assert.equal(c.leaderElection.renewDeadlineSeconds, 10);
  assert.equal(c.leaderElection.retryPeriodSeconds, 2);
  assert.equal(c.resyncOnStart, true);
  assert.ok(isValidatedConfig(c));
  assert.ok(!isValidatedConfig({ ...c }));
});

test('owned watches default to forwarding every change (status included)', () => {
  const c = parseConfig({ ...minimal, owned: [{ apiVersion: 'apps/v1', kind: 'Deployment' }] });
  const owned = c.watches.find((w) => w.role === 'owned')!;
  assert.deepEqual(owned.triggers, DEFAULT_OWNED_TRIGGERS);
  assert.equal(owned.plural, undefined, 'plural left for discovery');
});

test('environment overrides cluster id, queue URL, region, leader election and identity', () => {
  const c = parseConfig(minimal, {
    OPERLESS_CLUSTER: 'other',
    OPERLESS_QUEUE_URL: 'http://127.0.0.1:9324/000000000000/q',
    OPERLESS_QUEUE_REGION: 'us-east-2',
    OPERLESS_LEADER_ELECTION: 'true',
    POD_NAME: 'fwd-abc',
    POD_NAMESPACE: 'operless',
    OPERLESS_FORWARDER_PORT: '9090',
  });
  assert.equal(c.clusterId, 'other');
  assert.equal(c.queue.url, 'http://127.0.0.1:9324/000000000000/q');
  assert.equal(c.queue.region, 'us-east-2');
  assert.equal(c.leaderElection.enabled, true);
  assert.equal(c.leaderElection.identity, 'fwd-abc');
  assert.equal(c.leaderElection.namespace, 'operless');
  assert.equal(c.server.port, 9090);
});

test('every problem is reported at once, each naming its field', () => {
  const found = problems({
    clusterId: 'bad id!',
    queue: { url: 'not a url', region: 'Europe' },
    primaries: [{ apiVersion: 'Cache/v1', kind: 'memcached', plural: 'Memcacheds', triggers: ['spec'] }, 'x'],
    owned: { apiVersion: 'apps/v1' },
    coalesceWindowMs: -5,
    leaderElection: { leaseDurationSeconds: 10, renewDeadlineSeconds: 12 },
    colour: 'blue',
  });
  const fields = found.map((p) => p.split(':')[0]);
  for (const field of [
    'clusterId',
    'queue.url',
    'queue.region',
    'primaries[0].apiVersion',
    'primaries[0].kind',
    'primaries[0].plural',
    'primaries[0].triggers[0]',
    'primaries[1]',
    'owned',
    'coalesceWindowMs',
    'leaderElection.renewDeadlineSeconds',
    'colour',
  ]) {
    assert.ok(fields.includes(field), `expected a problem for ${field}; got:\n${found.join('\n')}`);
  }
});

test('missing essentials say what to set, including the env variable', () => {
  const found = problems({});
  assert.ok(found.some((p) => p.startsWith('clusterId: is required') && p.includes('OPERLESS_CLUSTER')));
  assert.ok(found.some((p) => p.startsWith('queue.url: is required') && p.includes('OPERLESS_QUEUE_URL')));
  assert.ok(found.some((p) => p.startsWith('primaries: must list at least one primary')));
});

test('a cluster-scoped kind cannot be restricted to namespaces; a kind cannot be listed twice', () => {
  const found = problems({
    ...minimal,
    primaries: [
      { apiVersion: 'v1', kind: 'Namespace', namespaced: false, namespaces: ['a'] },
      { apiVersion: 'v1', kind: 'Namespace' },
    ],
  });
  assert.ok(found.some((p) => p.startsWith('primaries[0].namespaces: must be empty')));
  assert.ok(found.some((p) => p.includes('listed twice')));
});

test('"watches" is rejected with a pointer to primaries/owned', () => {
  const found = problems({ ...minimal, watches: [] });
  assert.ok(found.some((p) => p.startsWith('watches:') && p.includes('primaries')));
});

test('retryPeriod must be below renewDeadline, which must be below leaseDuration', () => {
  const found = problems({ ...minimal, leaderElection: { leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 10 } });
  assert.ok(found.some((p) => p.startsWith('leaderElection.retryPeriodSeconds')));
});

test('loadConfig reads YAML from OPERLESS_FORWARDER_CONFIG and names the file in errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fwd-config-'));
  const good = join(dir, 'good.yaml');
  writeFileSync(good, 'clusterId: c1\nqueue:\n  url: https://sqs.us-east-1.amazonaws.com/1/q\nprimaries:\n  - apiVersion: v1\n    kind: ConfigMap\n');
  assert.equal(loadConfig({ OPERLESS_FORWARDER_CONFIG: good }).clusterId, 'c1');
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'clusterId: [unclosed\n');
  assert.throws(
    () => loadConfig({ OPERLESS_FORWARDER_CONFIG: bad }),
    (err: unknown) => err instanceof ConfigError && err.message.includes(bad) && err.message.includes('not valid YAML'),
  );
  assert.throws(
    () => loadConfig({ OPERLESS_FORWARDER_CONFIG: join(dir, 'missing.yaml') }),
    (err: unknown) => err instanceof ConfigError && err.message.includes('ENOENT'),
  );
});

// Queues per primary kind.
const A = 'https://sqs.eu-west-1.amazonaws.com/123456789012/memcached';
const B = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenant';
const memcached = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
const tenant = { apiVersion: 'tenancy.example.com/v1alpha1', kind: 'Tenant', plural: 'tenants', namespaced: false };

test('config: a primary without queueUrl gets queue.url; one with it keeps its own; queues lists each once', () => {
  const c = parseConfig({
    clusterId: 'c',
    queue: { url: A },
    primaries: [memcached, { ...tenant, queueUrl: B }, { ...memcached, kind: 'Other', plural: 'others' }],
  });
  assert.deepEqual(
    c.watches.map((w) => w.queueUrl),
    [A, B, A],
  );
  assert.deepEqual(c.queues, [A, B]);
  assert.equal(c.queue.url, A);
});

test('config: queue.url may be left out when every primary names its queue (the first is the default)', () => {
  const c = parseConfig({
    clusterId: 'c',
    primaries: [
      { ...memcached, queueUrl: A },
      { ...tenant, queueUrl: B },
    ],
    owned: [{ apiVersion: 'apps/v1', kind: 'Deployment' }],
  });
  assert.equal(c.queue.url, A);
  assert.equal(c.queue.region, 'eu-west-1', 'region from the queue URLs');
  assert.deepEqual(c.queues, [A, B]);
  assert.equal(c.watches.find((w) => w.role === 'owned')!.queueUrl, undefined, 'owned watches have no queue of their own');
});

test('config: OPERLESS_QUEUE_URL replaces only the default queue', () => {
  const c = parseConfig(
    { clusterId: 'c', queue: { url: A }, primaries: [memcached, { ...tenant, queueUrl: B }] },
    { OPERLESS_QUEUE_URL: 'http://127.0.0.1:9324/000000000000/other' },
  );
  assert.deepEqual(
    c.watches.map((w) => w.queueUrl),
    ['http://127.0.0.1:9324/000000000000/other', B],
  );
});

test('config: bad queue fields are named by their path', () => {
  const found = problems({
    clusterId: 'c',
    queue: { url: A },
    primaries: [memcached, { ...tenant, queueUrl: 'tenant-queue' }, { ...memcached, kind: 'Third', plural: 'thirds', queueUrl: 42 }],
    owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', queueUrl: B }],
  });
  assert.ok(
    found.some((p) => p.startsWith('primaries[1].queueUrl: must be an http(s) queue URL') && p.includes('"tenant-queue"')),
    found.join('\n'),
  );
  assert.ok(
    found.some((p) => p.startsWith('primaries[2].queueUrl: must be a string')),
    found.join('\n'),
  );
  assert.ok(
    found.some((p) => p.startsWith('owned[0].queueUrl: is not a field of an owned watch') && p.includes("owner's")),
    found.join('\n'),
  );
  assert.equal(found.filter((p) => p.startsWith('owned[0].queueUrl')).length, 1, 'reported once, not also as an unknown field');
});

test('config: without queue.url, the primaries lacking a queueUrl are named', () => {
  const found = problems({ clusterId: 'c', primaries: [{ ...memcached, queueUrl: A }, tenant] });
  assert.ok(
    found.some((p) => p.startsWith('queue.url: is required (primaries[1] names no queueUrl)')),
    found.join('\n'),
  );
});

test('server.host must be an address or host name to listen on', () => {
  const base = {
    clusterId: 'c',
    queue: { url: 'https://sqs.us-east-1.amazonaws.com/123456789012/q' },
    primaries: [{ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true }],
  };
  for (const host of ['0.0.0.0', '::', '127.0.0.1', 'localhost', 'fd00::1'])
    assert.equal(parseConfig({ ...base, server: { host } }, {}, 't').server.host, host);
  for (const host of ['0.0.0.0:8080 ', 'my host', 'http://x']) {
    assert.throws(
      () => parseConfig({ ...base, server: { host } }, {}, 't'),
      (err: unknown) => err instanceof ConfigError && /server\.host: must be an address or host name/.test(err.message),
      host,
    );
  }
});

test('related watches: the mapping of each primary is parsed; a wrong mapping, an unknown primary or a cluster-scoped kind is refused naming the field', () => {
  const primaries = [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }];
  const related = (target: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    ...minimal,
    primaries,
    related: [{ apiVersion: 'v1', kind: 'ConfigMap', ...extra, for: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', ...target }] }],
  });
  const c = parseConfig(related({ field: 'spec.configMapRef.name' }));
  const watch = c.watches.find((w) => w.role === 'related');
  assert.deepEqual(watch?.targets, [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', map: { field: 'spec.configMapRef.name' } }]);
  assert.deepEqual(watch?.triggers, ['generation', 'labels', 'deletion']);
  assert.deepEqual(parseConfig(related({ namespace: true })).watches[1]?.targets?.[0]?.map, { namespace: true });
  assert.deepEqual(parseConfig(related({ label: 'cache.example.com/memcached' })).watches[1]?.targets?.[0]?.map, { label: 'cache.example.com/memcached' });
  assert.ok(problems(related({})).some((p) => p.startsWith('related[0].for[0]: must set exactly one of field, label, namespace, got none')));
  assert.ok(problems(related({ field: 'spec.a', namespace: true })).some((p) => p.startsWith('related[0].for[0]: must set exactly one')));
  assert.ok(problems(related({ field: 'metadata.name' })).some((p) => p.startsWith("related[0].for[0].field: must be a path into the primary's spec")));
  assert.ok(problems(related({ label: 'Bad Key' })).some((p) => p.startsWith('related[0].for[0]: label must be a label key')));
  assert.ok(problems(related({ namespace: false })).some((p) => p.startsWith('related[0].for[0]: namespace must be true')));
  assert.ok(
    problems({ ...related({ field: 'spec.a' }), primaries: [{ ...primaries[0], kind: 'Other' }] }).some((p) =>
      p.startsWith('related[0].for[0].kind: must name a kind listed under primaries'),
    ),
  );
  assert.ok(problems(related({ field: 'spec.a' }, { namespaced: false })).some((p) => p.startsWith('related[0].namespaced: must be true')));
  assert.ok(
    problems({ ...minimal, related: [{ apiVersion: 'v1', kind: 'ConfigMap' }] }).some((p) => p.startsWith('related[0]')),
    'for is required',
  );
  assert.ok(
    problems({ ...related({ field: 'spec.a' }), related: [{ ...related({ field: 'spec.a' }).related[0], queueUrl: 'https://x/y' }] }).some((p) =>
      p.startsWith('related[0].queueUrl: is not a field of a related watch'),
    ),
  );
});

test('namespaces (namespace-scoped mode): sorted without repeats, from the file or OPERLESS_NAMESPACES; empty by default', () => {
  assert.deepEqual(parseConfig(minimal).namespaces, []);
  assert.deepEqual(parseConfig({ ...minimal, namespaces: ['team-b', 'team-a', 'team-b'] }).namespaces, ['team-a', 'team-b']);
  assert.deepEqual(parseConfig({ ...minimal, namespaces: ['x'] }, { OPERLESS_NAMESPACES: 'team-a, team-c' }).namespaces, ['team-a', 'team-c']);
  assert.deepEqual(parseConfig(minimal, { OPERLESS_NAMESPACES: '' }).namespaces, []);
});

test('namespaces: an invalid name is refused naming the field, from the file or the environment', () => {
  assert.ok(
    problems({ ...minimal, namespaces: ['team-a', 'Team_B'] }).some((p) => p.startsWith('namespaces[1]: must be a namespace name')),
    problems({ ...minimal, namespaces: ['team-a', 'Team_B'] }).join('\n'),
  );
  assert.ok(problems(minimal, { OPERLESS_NAMESPACES: 'team-a,Bad_Name' }).some((p) => p.startsWith('namespaces[1]: must be a namespace name')));
});

test("namespaces: a watch's own namespaces must be among them", () => {
  const doc = { ...minimal, namespaces: ['team-a'], primaries: [{ ...minimal.primaries[0], namespaces: ['team-a', 'team-z'] }] };
  const found = problems(doc);
  assert.deepEqual(
    found.filter((p) => p.includes('top-level namespaces')),
    ['primaries[0].namespaces[1]: must be one of the top-level namespaces (team-a): the operator runs for those only, got "team-z"'],
  );
  assert.doesNotThrow(() => parseConfig({ ...doc, primaries: [{ ...minimal.primaries[0], namespaces: ['team-a'] }] }));
});

test("a related watch of Secrets parses scoped or not: the privilege is the RBAC's, refused unscoped by the chart (test/security/related-secrets.test.ts), warned about by the forwarder", () => {
  const memcached = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
  const secrets = (extra: object = {}) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    for: [{ apiVersion: memcached.apiVersion, kind: 'Memcached', field: 'spec.secretRef.name' }],
    ...extra,
  });
  const doc = (related: object[], extra: object = {}) => ({
    clusterId: 'c',
    queue: { url: 'https://sqs.eu-west-1.amazonaws.com/1/q' },
    primaries: [memcached],
    related,
    ...extra,
  });
  for (const [scoped, env] of [
    [doc([secrets()]), {}],
    [doc([secrets({ namespaces: ['a'] })]), {}],
    [doc([secrets()], { namespaces: ['a'] }), {}],
    [doc([secrets()]), { OPERLESS_NAMESPACES: 'a' }],
    [doc([secrets({ labelSelector: 'x=y' })]), {}],
  ] as const) {
    assert.equal(parseConfig(scoped, env).watches.filter((w) => w.role === 'related').length, 1, JSON.stringify(scoped));
  }
});

// Bulk queues (docs/forwarder.md, "Live changes before the backlog").
const BULK_WORK = 'https://sqs.eu-west-1.amazonaws.com/123456789012/work';
const BULK = 'https://sqs.eu-west-1.amazonaws.com/123456789012/work-bulk';
const OTHER = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenant';

test('queue.bulkUrl is the bulk queue of the primaries of queue.url; bulkQueueUrl of one primary; the env sets the default one', () => {
  const c = parseConfig({ clusterId: 'c', queue: { url: BULK_WORK, bulkUrl: BULK }, primaries: [memcached, { ...tenant, queueUrl: OTHER }] });
  assert.equal(c.queue.bulkUrl, BULK);
  assert.equal(c.watches[0]!.bulkQueueUrl, BULK);
  assert.equal(c.watches[1]!.bulkQueueUrl, undefined, "a primary with a queue of its own does not take the default queue's bulk queue");
  const own = parseConfig({ clusterId: 'c', queue: { url: BULK_WORK }, primaries: [memcached, { ...tenant, queueUrl: OTHER, bulkQueueUrl: `${OTHER}-bulk` }] });
  assert.equal(own.watches[0]!.bulkQueueUrl, undefined);
  assert.equal(own.watches[1]!.bulkQueueUrl, `${OTHER}-bulk`);
  const env = parseConfig({ clusterId: 'c', queue: { url: BULK_WORK }, primaries: [memcached] }, { OPERLESS_BULK_QUEUE_URL: BULK });
  assert.equal(env.watches[0]!.bulkQueueUrl, BULK);
  assert.equal(parseConfig({ clusterId: 'c', queue: { url: BULK_WORK }, primaries: [memcached] }).watches[0]!.bulkQueueUrl, undefined);
});

test('a bulk queue is refused, naming the field, for a .fifo queue, as the queue itself, on an eventbridge kind and on an owned watch', () => {
  assert.match(
    problems({ clusterId: 'c', queue: { url: `${BULK_WORK}.fifo`, bulkUrl: BULK }, primaries: [memcached] }).join('\n'),
    /queue\.bulkUrl: must be absent for a \.fifo queue: per-key order cannot span two queues/,
  );
  assert.match(
    problems({ clusterId: 'c', queue: { url: BULK_WORK, bulkUrl: `${BULK}.fifo` }, primaries: [memcached] }).join('\n'),
    /queue\.bulkUrl: must be absent for a \.fifo queue/,
  );
  assert.match(
    problems({ clusterId: 'c', queue: { url: BULK_WORK, bulkUrl: BULK_WORK }, primaries: [memcached] }).join('\n'),
    /queue\.bulkUrl: must differ from queue\.url/,
  );
  assert.match(
    problems({ clusterId: 'c', queue: { url: BULK_WORK }, primaries: [{ ...memcached, queueUrl: `${OTHER}.fifo`, bulkQueueUrl: BULK }] }).join('\n'),
    /primaries\[0\]\.bulkQueueUrl: must be absent for a \.fifo queue/,
  );
  assert.match(
    problems({ clusterId: 'c', queue: { url: BULK_WORK }, primaries: [{ ...memcached, bulkQueueUrl: BULK_WORK }] }).join('\n'),
    /primaries\[0\]\.bulkQueueUrl: must differ from the kind's queue/,
  );
  assert.match(
    problems({ clusterId: 'c', sink: 'eventbridge', eventBus: { name: 'operless' }, primaries: [{ ...memcached, bulkQueueUrl: BULK }] }).join('\n'),
    /primaries\[0\]\.bulkQueueUrl: must be absent when the kind sends to eventbridge/,
  );
  assert.match(
    problems({
      clusterId: 'c',
      queue: { url: BULK_WORK },
      primaries: [memcached],
      owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', bulkQueueUrl: BULK }],
    }).join('\n'),
    /owned\[0\]\.bulkQueueUrl: is not a field of an owned watch/,
  );
  assert.match(problems({ clusterId: 'c', queue: { url: BULK_WORK, bulkUrl: 'not a url' }, primaries: [memcached] }).join('\n'), /queue\.bulkUrl/);
});
