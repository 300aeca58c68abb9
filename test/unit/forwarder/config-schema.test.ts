/**
 * One schema, one validator: the forwarder's configuration schema (src/forwarder/config/schema.ts)
 * is the only truth, and what is derived from it cannot drift —
 * - the compiled validator and the chart's values.schema.json are what the generator writes today;
 * - a name is accepted exactly when the contract's validator accepts it (one validator per name);
 * - every default the forwarder applies is the schema's `default`;
 * - the chart's schema (checked here with ajv as helm would; test/security/helm-values.test.ts
 *   runs the real helm) accepts `settings` exactly when the forwarder's schema does.
 * fast-check cases print their seed on failure; `OPERLESS_FC_SEED` replays one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { fcParameters } from '../../support/fast-check.ts';
import { CHART_SCHEMA_PATH, staleFiles } from '../../../scripts/config-schema.ts';
import { isApiVersion, isClusterId, isDnsLabel, isDnsSubdomain, isKind, type NameValidator } from '../../../src/contract/names.ts';
import { ConfigError, parseConfig } from '../../../src/forwarder/config/config.ts';
import {
  DEFAULT_OWNED_TRIGGERS,
  DEFAULT_PRIMARY_TRIGGERS,
  DEFAULT_RELATED_TRIGGERS,
  FORWARDER_CONFIG_SCHEMA,
  type JsonSchema,
} from '../../../src/forwarder/config/schema.ts';
import { validate } from '../../../src/forwarder/config/validator.generated.ts';
import { CHART_DIR } from '../../../src/build/forwarder-chart.ts';

const minimal = () => ({
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true }],
});

function problems(doc: unknown): string[] {
  try {
    parseConfig(doc, {});
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return [...err.problems];
  }
  return [];
}

test('the compiled validator and the chart values schema are fresh (node scripts/config-schema.ts writes them)', () => {
  assert.deepEqual(staleFiles(), [], 'regenerate with: node scripts/config-schema.ts');
});

/** [how a document sets the name, the problem path, the contract's validator] */
const NAMES: [string, (value: string) => unknown, string, NameValidator][] = [
  ['clusterId', (v) => ({ ...minimal(), clusterId: v }), 'clusterId', isClusterId],
  ['apiVersion', (v) => ({ ...minimal(), primaries: [{ apiVersion: v, kind: 'Memcached' }] }), 'primaries[0].apiVersion', isApiVersion],
  ['kind', (v) => ({ ...minimal(), owned: [{ apiVersion: 'v1', kind: v }] }), 'owned[0].kind', isKind],
  ['plural', (v) => ({ ...minimal(), primaries: [{ apiVersion: 'v1', kind: 'Memcached', plural: v }] }), 'primaries[0].plural', isDnsLabel],
  ['namespace', (v) => ({ ...minimal(), primaries: [{ apiVersion: 'v1', kind: 'Memcached', namespaces: [v] }] }), 'primaries[0].namespaces[0]', isDnsLabel],
  ['leaseName', (v) => ({ ...minimal(), leaderElection: { leaseName: v } }), 'leaderElection.leaseName', isDnsSubdomain],
  ['Lease namespace', (v) => ({ ...minimal(), leaderElection: { namespace: v } }), 'leaderElection.namespace', isDnsLabel],
];

test('names the message contract refuses (too long) are refused at start-up, not dropped message by message later', () => {
  for (const [name, doc, path, valid] of NAMES) {
    const tooLong =
      name === 'kind'
        ? `K${'k'.repeat(63)}`
        : name === 'clusterId'
          ? 'c'.repeat(64)
          : name === 'apiVersion'
            ? `${'g'.repeat(320)}/v1`
            : name === 'leaseName'
              ? `${'a'.repeat(63)}.`.repeat(4).concat('a')
              : 'a'.repeat(64);
    assert.equal(valid(tooLong), false, `${name}: the contract refuses ${tooLong.length} characters`);
    assert.ok(
      problems(doc(tooLong)).some((p) => p.startsWith(`${path}: must be at most`)),
      `${name} of ${tooLong.length} characters is accepted`,
    );
  }
});

test('property: each name is accepted exactly when the contract validator of that name accepts it', () => {
  const pieces = fc.constantFrom('a', 'z', '0', '9', '-', '.', '/', 'A', 'M', '_', ' ', 'v1', 'v1alpha1', 'beta2', 'é');
  const nameLike = fc.oneof(
    fc.array(pieces, { minLength: 1, maxLength: 12 }).map((parts) => parts.join('')),
    fc.tuple(fc.constantFrom('a', 'M', 'v'), fc.integer({ min: 55, max: 70 })).map(([c, n]) => c.repeat(n)),
    fc.string({ minLength: 1, maxLength: 8 }),
  );
  fc.assert(
    fc.property(fc.constantFrom(...NAMES), nameLike, ([name, doc, path, valid], value) => {
      const refused = problems(doc(value)).some((p) => p.startsWith(`${path}:`));
      assert.equal(
        refused,
        !valid(value),
        `${name} ${JSON.stringify(value)}: contract says ${valid(value) ? 'valid' : 'invalid'}, the config ${refused ? 'refuses' : 'accepts'} it`,
      );
    }),
    fcParameters({ numRuns: 600 }),
  );
});

/** Every `default` of the schema's sections, as [path, value]. */
function schemaDefaults(schema: JsonSchema, prefix = ''): [string, unknown][] {
  return Object.entries(schema.properties ?? {}).flatMap(([name, field]): [string, unknown][] => {
    if (typeof field !== 'object') return [];
    const path = prefix ? `${prefix}.${name}` : name;
    if (field.type === 'object') return schemaDefaults(field, path);
    return field.default === undefined ? [] : [[path, field.default]];
  });
}

test("every default of the configuration is the schema's default (one place)", () => {
  const config = parseConfig(minimal()) as unknown as Record<string, unknown>;
  const defaults = schemaDefaults(FORWARDER_CONFIG_SCHEMA).filter(([path]) => path !== 'owned' && path !== 'related');
  assert.ok(defaults.length >= 20, `${defaults.length} defaults`);
  for (const [path, value] of defaults) {
    const actual = path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], config);
    assert.deepEqual(actual, value, path);
  }
  const primary = FORWARDER_CONFIG_SCHEMA.definitions?.primary?.properties?.triggers;
  assert.deepEqual(parseConfig(minimal()).watches[0]!.triggers, typeof primary === 'object' ? primary.default : undefined);
});

test('a field set to null or "" is absent and gets its default; a list item that is null is refused', () => {
  const c = parseConfig({
    ...minimal(),
    owned: null,
    send: null,
    leaderElection: { leaseName: '' },
    primaries: [{ ...minimal().primaries[0], plural: '', labelSelector: '' }],
  });
  assert.equal(c.leaderElection.leaseName, 'operless-forwarder');
  assert.equal(c.send.maxBatchBytes, 262_144);
  assert.equal(c.watches[0]!.plural, undefined);
  assert.equal(c.watches.length, 1);
  const input = { ...minimal(), send: {} };
  const before = structuredClone(input);
  parseConfig(input);
  assert.deepEqual(input, before, "the caller's document is not changed (defaults go into a copy)");
  assert.ok(
    problems({ ...minimal(), primaries: [{ ...minimal().primaries[0], triggers: [null] }] }).some((p) =>
      p.startsWith('primaries[0].triggers[0]: must be one of'),
    ),
  );
});

test('numbers and booleans in the file are YAML numbers and booleans; environment overrides are converted', () => {
  assert.deepEqual(problems({ ...minimal(), buffer: { maxMessages: '100' } }), ['buffer.maxMessages: must be a number, got string "100"']);
  const c = parseConfig(minimal(), { OPERLESS_FORWARDER_PORT: '9090', OPERLESS_LEADER_ELECTION: 'true' });
  assert.deepEqual([c.server.port, c.leaderElection.enabled], [9090, true]);
});

/** The chart's schema compiled the way helm reads it (draft-07). */
const chartSchema = JSON.parse(readFileSync(CHART_SCHEMA_PATH, 'utf8')) as object;
const chartValidate = new Ajv({ allErrors: true, strict: false }).compile(chartSchema);
const chartDefaults = parse(readFileSync(`${CHART_DIR}/values.yaml`, 'utf8')) as Record<string, unknown>;
const chartValues = (settings: unknown) => ({ ...chartDefaults, ...minimal(), owned: [], settings });

test("the chart's own defaults with a minimal set of watches pass its schema", () => {
  assert.ok(chartValidate(chartValues({})), JSON.stringify(chartValidate.errors));
});

test("property: the chart accepts settings exactly when the forwarder's schema does", () => {
  const sections: Record<string, string[]> = {
    buffer: ['maxMessages'],
    send: ['maxBatchBytes', 'connectTimeoutMs', 'backoffMaxMs'],
    watch: ['listPageSize', 'silenceTimeoutSeconds'],
    leaderElection: ['leaseDurationSeconds', 'leaseName', 'enabled'],
    server: ['host', 'port'],
  };
  const scalar = fc.oneof(
    fc.integer({ min: -10, max: 2_000_000 }),
    fc.double({ noNaN: true, min: -1, max: 5000 }),
    fc.boolean(),
    fc.constantFrom('x', 'many', 'fwd', '0.0.0.0', 'true'),
  );
  const setting = fc.oneof(
    fc
      .tuple(fc.constantFrom('coalesceWindowMs', 'coalesceMaxWindowMs', 'resyncOnStart', 'shutdownGraceMs', 'unknownSetting'), scalar)
      .map(([k, v]) => ({ [k]: v })),
    fc
      .constantFrom(...Object.keys(sections))
      .chain((section) => fc.tuple(fc.constantFrom(...sections[section]!, 'extra'), scalar).map(([k, v]) => ({ [section]: { [k]: v } }))),
  );
  fc.assert(
    fc.property(
      fc.array(setting, { maxLength: 3 }).map((list) => Object.assign({}, ...list) as Record<string, unknown>),
      (settings) => {
        const chart = chartValidate(chartValues(settings));
        const forwarder = validate({ ...minimal(), ...structuredClone(settings) });
        assert.equal(
          chart,
          forwarder,
          `settings ${JSON.stringify(settings)}: chart ${chart ? 'accepts' : 'refuses'}, forwarder schema ${forwarder ? 'accepts' : 'refuses'}`,
        );
      },
    ),
    fcParameters({ numRuns: 400 }),
  );
});

test('a bulk queue against the ordering: the chart refuses exactly what the forwarder refuses (a .fifo bulk queue, one beside a .fifo queue)', () => {
  const work = 'https://sqs.eu-west-1.amazonaws.com/123456789012/work';
  const bulk = `${work}-bulk`;
  const memcached = minimal().primaries[0]!;
  const cases: [string, { queue: Record<string, string>; primaries: Record<string, unknown>[] }][] = [
    ['standard queue, standard bulkUrl', { queue: { url: work, bulkUrl: bulk }, primaries: [memcached] }],
    ['a .fifo bulkUrl', { queue: { url: work, bulkUrl: `${bulk}.fifo` }, primaries: [memcached] }],
    ['bulkUrl beside a .fifo url', { queue: { url: `${work}.fifo`, bulkUrl: bulk }, primaries: [memcached] }],
    ['a .fifo url, no bulk queue', { queue: { url: `${work}.fifo` }, primaries: [memcached] }],
    ["a primary's standard bulkQueueUrl", { queue: { url: work }, primaries: [{ ...memcached, bulkQueueUrl: bulk }] }],
    ["a primary's .fifo bulkQueueUrl", { queue: { url: work }, primaries: [{ ...memcached, bulkQueueUrl: `${bulk}.fifo` }] }],
    [
      "a primary's bulkQueueUrl beside its .fifo queueUrl",
      { queue: { url: work }, primaries: [{ ...memcached, queueUrl: `${work}-2.fifo`, bulkQueueUrl: bulk }] },
    ],
    [
      "a primary's bulkQueueUrl beside its standard queueUrl and a .fifo url",
      { queue: { url: `${work}.fifo` }, primaries: [{ ...memcached, queueUrl: `${work}-2`, bulkQueueUrl: bulk }] },
    ],
    ["a primary's bulkQueueUrl on the .fifo url", { queue: { url: `${work}.fifo` }, primaries: [{ ...memcached, bulkQueueUrl: bulk }] }],
  ];
  const verdicts = cases.map(([name, doc]) => {
    const chart = chartValidate({ ...chartDefaults, clusterId: 'prod-eu', owned: [], ...doc, queue: { ...(chartDefaults.queue as object), ...doc.queue } });
    const found = problems({ clusterId: 'prod-eu', ...doc });
    assert.ok(
      found.every((p) => /bulk(Url|QueueUrl): must be absent for a \.fifo queue/.test(p)),
      `${name}: ${found.join('; ')}`,
    );
    return [name, chart, found.length === 0];
  });
  assert.deepEqual(
    verdicts.map(([name, chart]) => [name, chart]),
    verdicts.map(([name, , forwarder]) => [name, forwarder]),
    'the chart and the forwarder agree',
  );
  assert.deepEqual(
    verdicts.filter(([, , ok]) => ok).map(([name]) => name),
    [
      'standard queue, standard bulkUrl',
      'a .fifo url, no bulk queue',
      "a primary's standard bulkQueueUrl",
      "a primary's bulkQueueUrl beside its standard queueUrl and a .fifo url",
    ],
  );
});

test("the configuration reference in docs/forwarder.md shows the schema's defaults", () => {
  const docs = readFileSync(new URL('../../../docs/forwarder.md', import.meta.url), 'utf8');
  const block = docs.slice(docs.indexOf('## Configuration')).match(/```yaml\n([\s\S]*?)```/)?.[1];
  assert.ok(block, 'the Configuration section has a YAML reference');
  const reference = parse(block) as Record<string, unknown>;
  const shown = schemaDefaults(FORWARDER_CONFIG_SCHEMA)
    .filter(([path]) => path !== 'owned' && path !== 'related')
    .flatMap(([path, value]) => {
      const documented = path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], reference);
      return documented === undefined ? [] : [[path, documented, value]];
    });
  assert.ok(shown.length >= 20, `${shown.length} defaults shown`);
  for (const [path, documented, value] of shown)
    assert.deepEqual(documented, value, `docs/forwarder.md shows ${path}: ${JSON.stringify(documented)}, the schema's default is ${JSON.stringify(value)}`);
  const watches = reference as { primaries: { triggers: unknown }[]; owned: { triggers: unknown }[]; related: { triggers: unknown }[] };
  assert.deepEqual(watches.primaries[0]!.triggers, DEFAULT_PRIMARY_TRIGGERS, 'a primary\'s triggers, "the default"');
  assert.deepEqual(watches.owned[0]!.triggers, DEFAULT_OWNED_TRIGGERS, 'an owned kind\'s triggers, "the default"');
  assert.deepEqual(watches.related[0]!.triggers, DEFAULT_RELATED_TRIGGERS, 'a related kind\'s triggers, "the default"');
  assert.equal(reference.coalesceMaxWindowMs, Math.max(30_000, reference.coalesceWindowMs as number), 'coalesceMaxWindowMs: its derived default');
});
