import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configSettings } from '../../../src/memcached/settings.ts';
import { desiredDeployment, memcachedArgs, CONFIG_HASH_ANNOTATION } from '../../../src/memcached/desired.ts';
import { defineController } from '../../../src/core/controller/controller.ts';
import { memcachedController } from '../../../src/memcached/controller.ts';
import { memcached } from './fixtures.ts';

const cm = (data: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 's' }, data });

test('settings: known keys in range apply; the hash follows the settings only', () => {
  const r = configSettings('s', cm({ maxConnections: '2048', memoryLimitMB: ' 128 ' }));
  assert.ok('settings' in r);
  assert.deepEqual(r.settings, { maxConnections: 2048, memoryLimitMB: 128 });
  const same = configSettings('s', cm({ memoryLimitMB: '128', maxConnections: '2048' }));
  assert.ok('hash' in same && same.hash === r.hash, 'key order does not change the hash');
  const other = configSettings('s', cm({ maxConnections: '2049' }));
  assert.ok('hash' in other && other.hash !== r.hash);
  assert.deepEqual(memcachedArgs(memcached({ memoryLimitMB: 64 }), r.settings), ['-m', '128', '-p', '11211', '-c', '2048']);
  assert.deepEqual(memcachedArgs(memcached({ memoryLimitMB: 64 })), ['-m', '64', '-p', '11211']);
});

test('settings: a missing ConfigMap, an unknown key, a value out of range or not a number, binaryData are problems with a reason', () => {
  const reason = (r: ReturnType<typeof configSettings>) => ('problem' in r ? r.problem.reason : 'ok');
  assert.equal(reason(configSettings('s', undefined)), 'ConfigMapNotFound');
  for (const data of [
    { maxconnections: '1' },
    { maxConnections: '0' },
    { maxConnections: '70000' },
    { maxConnections: 'lots' },
    { memoryLimitMB: '8' },
    { maxConnections: '1.5' },
    { maxConnections: 5 },
  ]) {
    assert.equal(reason(configSettings('s', cm(data))), 'InvalidConfigMap', JSON.stringify(data));
  }
  assert.equal(reason(configSettings('s', { ...cm({}), binaryData: { x: 'AA==' } })), 'InvalidConfigMap');
  assert.equal(reason(configSettings('s', cm({}))), 'ok', 'an empty ConfigMap changes nothing');
});

test('the Deployment carries the settings hash on its pod template only when a ConfigMap is referenced', () => {
  type D = { spec: { template: { metadata: { annotations?: Record<string, string> } } } };
  assert.equal((desiredDeployment(memcached()) as unknown as D).spec.template.metadata.annotations, undefined);
  const d = desiredDeployment(memcached(), { settings: {}, hash: 'abc' }) as unknown as D;
  assert.deepEqual(d.spec.template.metadata.annotations, { [CONFIG_HASH_ANNOTATION]: 'abc' });
});

test('the Memcached controller declares its ConfigMap watch, and defineController checks related watches', () => {
  assert.deepEqual(
    memcachedController.watches?.map((w) => [w.kind.kind, w.map]),
    [['ConfigMap', { field: 'spec.configMapRef.name' }]],
  );
  assert.doesNotThrow(() => defineController(memcachedController));
  const bad =
    (watches: unknown, namespaced = true) =>
    () =>
      defineController({ ...memcachedController, namespaced, watches } as never);
  assert.throws(
    bad([{ kind: memcachedController.watches![0]!.kind, map: { field: 'status.x' } }]),
    /watches\[0\]\.map field must be a path into the primary's spec/,
  );
  assert.throws(
    bad([{ kind: memcachedController.watches![0]!.kind, map: { field: 'spec.a', label: 'x' } }]),
    /must have exactly one of field, label, namespace/,
  );
  assert.throws(bad([{ kind: { ...memcachedController.watches![0]!.kind, namespaced: false }, map: { namespace: true } }]), /must be namespaced/);
  assert.throws(bad([{ kind: memcachedController.watches![0]!.kind, map: { namespace: true } }], false), /needs a namespaced primary/);
});
