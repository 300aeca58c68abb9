import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SIMULATED_MESSAGE, needsSimulation, simulatedStatus } from '../../../src/local/pod-simulator.ts';

const pod = (status?: object, deletionTimestamp?: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default', ...(deletionTimestamp ? { deletionTimestamp } : {}) },
  spec: { containers: [{ name: 'memcached', image: 'memcached:1.6' }] },
  ...(status ? { status } : {}),
});

test('pending pods need the simulator; ready and terminating pods do not', () => {
  assert.equal(needsSimulation(pod()), true);
  assert.equal(needsSimulation(pod({ phase: 'Pending' })), true);
  assert.equal(needsSimulation(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] })), true);
  assert.equal(needsSimulation(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] })), false);
  assert.equal(needsSimulation(pod(undefined, '2026-01-01T00:00:00Z')), false);
});

test('the simulated status is what a kubelet reports for a ready pod, and says it is simulated', () => {
  const status = simulatedStatus(pod(), new Date('2026-01-01T00:00:00Z'), '10.244.0.7') as {
    phase: string;
    podIP: string;
    conditions: { type: string; status: string; message: string }[];
    containerStatuses: { name: string; ready: boolean }[];
  };
  assert.equal(status.phase, 'Running');
  assert.equal(status.podIP, '10.244.0.7');
  assert.deepEqual(
    status.conditions.map((c) => [c.type, c.status]),
    [
      ['PodScheduled', 'True'],
      ['Initialized', 'True'],
      ['ContainersReady', 'True'],
      ['Ready', 'True'],
    ],
  );
  assert.ok(status.conditions.every((c) => c.message === SIMULATED_MESSAGE));
  assert.deepEqual(
    status.containerStatuses.map((c) => [c.name, c.ready]),
    [['memcached', true]],
  );
});
