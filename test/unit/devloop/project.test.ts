import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseServerlessYaml } from '../../../src/project/serverless-yml.ts';
import { reconcileFunctions, watchesFor } from '../../../src/devloop/project.ts';
import { defineController } from '../../../src/core/controller/controller.ts';
import { memcachedController } from '../../../src/memcached/controller.ts';
import { done } from '../../../src/core/controller/result.ts';

test('serverless.yml: functions, their handlers, which are fed by SQS, and esbuild settings', () => {
  const config = parseServerlessYaml(readFileSync('serverless.yml', 'utf8'));
  const byName = Object.fromEntries(config.functions.map((f) => [f.name, f]));
  assert.deepEqual(byName.memcached, { name: 'memcached', module: 'functions/memcached.ts', exportName: 'handler', sqs: true });
  assert.equal(byName.resync?.sqs, false);
  assert.equal(config.esbuild.format, 'esm');
  assert.deepEqual(
    reconcileFunctions(readFileSync('serverless.yml', 'utf8')).map((f) => f.name),
    ['memcached'],
  );
});

test('a handler without an export name is an error naming the function', () => {
  assert.throws(
    () => parseServerlessYaml('functions:\n  broken:\n    handler: functions/broken\n'),
    /function "broken" has handler "functions\/broken"; expected <path>\.<export>/,
  );
});

test('forwarder watches: every primary, and each owned kind once', () => {
  const other = defineController({
    apiVersion: 'example.com/v1',
    kind: 'Other',
    plural: 'others',
    namespaced: false,
    owns: [{ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true }],
    reconcile: async () => done(),
  });
  const watches = watchesFor([defineController(memcachedController), other]);
  assert.deepEqual(
    watches.primaries?.map((w) => w.kind),
    ['Memcached', 'Other'],
  );
  assert.deepEqual(watches.owned?.map((w) => w.kind).sort(), ['Deployment', 'Service']);
  assert.deepEqual(
    watches.related,
    [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        plural: 'configmaps',
        namespaced: true,
        for: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', field: 'spec.configMapRef.name' }],
      },
    ],
    'the local loop watches the related kinds the controllers declare, with their mapping',
  );
});
