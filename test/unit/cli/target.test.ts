/** Which queue a CLI message goes to (src/cli/target.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queueUrlForKind, type Target } from '../../../src/cli/target.ts';

const devTarget: Target = {
  queueUrl: 'http://127.0.0.1:9324/000000000000/memcached',
  dlqUrl: 'http://127.0.0.1:9324/000000000000/memcached-dlq',
  region: 'us-east-1',
  cluster: 'local',
  json: false,
  source: 'operless dev',
  devFunctions: {
    memcached: { queueUrl: 'http://127.0.0.1:9324/000000000000/memcached', dlqUrl: 'x', kinds: ['Memcached'] },
    tenant: { queueUrl: 'http://127.0.0.1:9324/000000000000/tenant', dlqUrl: 'y', kinds: ['Tenant'] },
  },
};

test('next to operless dev, each kind goes to the queue of the function that reconciles it', () => {
  assert.equal(queueUrlForKind(devTarget, 'Tenant'), 'http://127.0.0.1:9324/000000000000/tenant');
  assert.equal(queueUrlForKind(devTarget, 'Memcached'), 'http://127.0.0.1:9324/000000000000/memcached');
  assert.equal(queueUrlForKind(devTarget, 'Unknown'), devTarget.queueUrl, 'a kind no function names: the default queue');
});

test('an explicit queue URL (flag or environment) takes every kind', () => {
  const explicit: Target = { ...devTarget, queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work', source: 'flags/env' };
  assert.equal(queueUrlForKind(explicit, 'Tenant'), 'https://sqs.eu-west-1.amazonaws.com/123456789012/work');
});

test('no queue at all is a usage error naming the ways to set one', () => {
  const none: Target = { region: 'us-east-1', cluster: 'c', json: false, source: 'flags/env' };
  assert.throws(() => queueUrlForKind(none, 'Tenant'), /pass --queue-url, set OPERLESS_QUEUE_URL/);
});
