/**
 * The sink option (docs/forwarder.md, "EventBridge sink"): `sink: sqs | eventbridge`, global or
 * per primary kind, with its `eventBus`; what the configuration refuses (a kind sending to the
 * bus without a bus, a queueUrl on such a kind, a bad bus name or an `aws.` source), and the
 * routes the forwarder's lanes follow (`sinkRoutes`): a kind sending to the bus never reaches
 * a queue URL, an owned object's message goes where its owner's go.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { CHART_SCHEMA_PATH } from '../../../scripts/config-schema.ts';
import { CHART_DIR } from '../../../src/build/forwarder-chart.ts';
import { ConfigError, parseConfig } from '../../../src/forwarder/config/config.ts';
import { eventBusDestination, eventBusOf, sinkRoutes } from '../../../src/forwarder/sink/destinations.ts';
import { queueLabels } from '../../../src/forwarder/sink/queues.ts';

const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/work';
const MEMCACHED = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
const REDIS = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Redis', plural: 'redises', namespaced: true };

function problems(doc: unknown): string[] {
  try {
    parseConfig(doc);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return [...err.problems];
  }
  assert.fail('expected the config to be rejected');
}

test('sqs is the default sink; eventbridge globally needs no queue URL and routes every kind to the bus', () => {
  assert.equal(parseConfig({ clusterId: 'c', queue: { url: QUEUE }, primaries: [MEMCACHED] }).watches[0]!.sink, 'sqs');
  const c = parseConfig({
    clusterId: 'c',
    queue: { region: 'eu-west-1' },
    sink: 'eventbridge',
    eventBus: { name: 'operless' },
    primaries: [MEMCACHED],
    owned: [{ apiVersion: 'apps/v1', kind: 'Deployment' }],
  });
  assert.deepEqual(c.eventBus, { name: 'operless', source: 'operless' });
  assert.deepEqual(parseConfig({ clusterId: 'c', queue: { url: QUEUE }, primaries: [MEMCACHED] }).eventBus, { source: 'operless' });
  assert.equal(c.watches[0]!.queueUrl, undefined);
  const routes = sinkRoutes(c);
  assert.deepEqual(routes.urls, [eventBusDestination('operless')]);
  assert.equal(routes.queueFor(MEMCACHED), 'eventbridge:operless');
  assert.equal(eventBusOf(routes.queueFor(MEMCACHED)), 'operless');
  assert.equal(eventBusOf(QUEUE), undefined);
});

test('per kind: one kind to the bus, the other to its queue, each with a lane and a distinct label', () => {
  const bus = 'arn:aws:events:eu-west-1:123456789012:event-bus/operless';
  const c = parseConfig({
    clusterId: 'c',
    queue: { url: QUEUE },
    eventBus: { name: bus, source: 'team.cache' },
    primaries: [{ ...MEMCACHED, sink: 'eventbridge' }, REDIS],
  });
  const routes = sinkRoutes(c);
  assert.equal(routes.queueFor(MEMCACHED), eventBusDestination(bus));
  assert.equal(routes.queueFor(REDIS), QUEUE);
  assert.deepEqual(new Set(routes.urls), new Set([QUEUE, eventBusDestination(bus)]));
  assert.equal(new Set(queueLabels(routes.urls).values()).size, 2);
  assert.equal(c.eventBus?.source, 'team.cache');
});

test('what the sink option refuses, naming the field', () => {
  assert.deepEqual(problems({ clusterId: 'c', queue: { region: 'eu-west-1' }, sink: 'eventbridge', primaries: [MEMCACHED] }), [
    'eventBus.name: is required: primaries[0] sends to eventbridge; set the event bus name or ARN, e.g. operless',
  ]);
  assert.match(
    problems({ clusterId: 'c', queue: { url: QUEUE }, eventBus: { name: 'b' }, primaries: [{ ...MEMCACHED, sink: 'eventbridge', queueUrl: QUEUE }] }).join(
      '\n',
    ),
    /primaries\[0\]\.queueUrl: must be absent when the kind sends to eventbridge/,
  );
  assert.match(problems({ clusterId: 'c', queue: { url: QUEUE }, sink: 'kafka', primaries: [MEMCACHED] }).join('\n'), /sink: must be one of sqs, eventbridge/);
  assert.match(
    problems({ clusterId: 'c', queue: { url: QUEUE }, eventBus: { name: 'b', source: 'aws.events' }, primaries: [MEMCACHED] }).join('\n'),
    /eventBus\.source: must not start with "aws\."/,
  );
  assert.match(
    problems({ clusterId: 'c', queue: { url: QUEUE }, eventBus: { name: 'bad name' }, primaries: [MEMCACHED] }).join('\n'),
    /eventBus\.name: must be an event bus name/,
  );
  assert.match(
    problems({
      clusterId: 'c',
      queue: { url: QUEUE },
      primaries: [MEMCACHED],
      owned: [{ apiVersion: 'apps/v1', kind: 'Deployment', sink: 'eventbridge' }],
    }).join('\n'),
    /owned\[0\]\.sink: is not a field of an owned watch/,
  );
  assert.match(
    problems({ clusterId: 'c', queue: { region: 'eu-west-1' }, eventBus: { name: 'b' }, primaries: [{ ...MEMCACHED, sink: 'eventbridge' }, REDIS] }).join('\n'),
    /queue\.url: is required \(primaries\[1\] names no queueUrl\)/,
  );
});

test('the chart takes the sink in settings: no queue URL needed when the kinds send to the bus', () => {
  const validate = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(CHART_SCHEMA_PATH, 'utf8')) as object);
  const defaults = parse(readFileSync(`${CHART_DIR}/values.yaml`, 'utf8')) as Record<string, unknown>;
  const values = (extra: Record<string, unknown>) => ({
    ...defaults,
    clusterId: 'c',
    queue: { url: '', region: 'eu-west-1', endpoint: '' },
    primaries: [MEMCACHED],
    owned: [],
    ...extra,
  });
  assert.ok(validate(values({ settings: { sink: 'eventbridge', eventBus: { name: 'operless' } } })), JSON.stringify(validate.errors));
  assert.ok(
    validate(values({ primaries: [{ ...MEMCACHED, sink: 'eventbridge' }], settings: { eventBus: { name: 'operless' } } })),
    JSON.stringify(validate.errors),
  );
  assert.equal(validate(values({ settings: {} })), false, 'no queue and no bus: refused');
  assert.equal(validate(values({ settings: { sink: 'sqs' } })), false);
  assert.equal(validate(values({ settings: { sink: 'eventbridge', eventBus: { name: 'bad name' } } })), false);
});
