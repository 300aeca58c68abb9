import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BENCH_PROCESS, busyProcesses, processCpuShares, processCpuSnapshot } from '../../../bench/lib/machine.ts';
import { operatorConflicts } from '../../../bench/lib/apiserver-metrics.ts';

test('processCpuShares: cores per process between two snapshots, busiest first, small ones and exited ones left out', () => {
  const before = {
    at: 0,
    seconds: new Map([
      ['kube-apiserver', 10],
      ['etcd', 5],
      ['gone', 3],
      ['idle', 1],
      ['still', 2],
    ]),
  };
  const after = {
    at: 10_000,
    seconds: new Map([
      ['kube-apiserver', 19],
      ['etcd', 7],
      ['idle', 1.2],
      ['still', 2],
      ['new', 4],
    ]),
  };
  assert.deepEqual(Object.entries(processCpuShares(before, after)), [
    ['kube-apiserver', 0.9],
    ['new', 0.4],
    ['etcd', 0.2],
  ]);
  assert.deepEqual(
    Object.entries(processCpuShares(before, after, 0)),
    [
      ['kube-apiserver', 0.9],
      ['new', 0.4],
      ['etcd', 0.2],
      ['idle', 0.02],
    ],
    'min 0: every process that used CPU, however little; none that used none',
  );
  assert.deepEqual(busyProcesses(processCpuShares(before, after, 0)), [
    ['kube-apiserver', 0.9],
    ['new', 0.4],
    ['etcd', 0.2],
  ]);
  assert.deepEqual(processCpuShares(after, before), {}, 'snapshots out of order: nothing');
  assert.deepEqual(processCpuShares(undefined, after), {});
});

test('processCpuSnapshot reads this process under the bench label', () => {
  const snap = processCpuSnapshot();
  if (!snap) return; // no /proc on this platform
  assert.ok((snap.seconds.get(BENCH_PROCESS) ?? -1) >= 0, 'the bench process is in the snapshot');
});

test("operatorConflicts: the 409s on what the operator writes, not the controller manager's status writes", () => {
  assert.equal(
    operatorConflicts({
      'PUT deployments/status': 69,
      'PUT replicasets/status': 35,
      'APPLY memcacheds/status': 11,
      'APPLY deployments': 2,
      'PUT memcacheds': 1,
      'APPLY services': 1,
    }),
    15,
  );
  assert.equal(operatorConflicts({}), 0);
});
