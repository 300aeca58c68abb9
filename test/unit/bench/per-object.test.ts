/**
 * The per-object cost of the benchmark (issue 33): the arithmetic from two snapshots of the
 * API server's and etcd's CPU and the request counters to the cost per converged object and per
 * reconcile, the table and the targets judged on the pinned rows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterCost, perUnit, type ClusterCost } from '../../../bench/lib/cluster-cost.ts';
import { perObjectRow, workloadName, type PerObjectRow } from '../../../bench/scenarios/per-object.ts';
import { perObjectTable, perObjectTargets, requestsPerObject } from '../../../bench/scenarios/per-object-table.ts';
import { FULL, QUICK } from '../../../bench/run.ts';

const snapshot = (at: number, api: number, etcd: number, requests: [string, number][]) => ({
  at,
  apiServerCpuSeconds: api,
  etcdCpuSeconds: etcd,
  requests: new Map(requests),
});

test('clusterCost: CPU and requests between two snapshots, without watches and non-resource requests', () => {
  const before = snapshot(1_000, 10, 4, [
    ['GET memcacheds', 5],
    ['WATCH memcacheds', 2],
    ['GET ', 7],
  ]);
  const after = snapshot(11_000, 12.5, 4.75, [
    ['GET memcacheds', 1005],
    ['APPLY deployments', 1000],
    ['WATCH memcacheds', 9],
    ['GET ', 20],
    ['LIST pods', 0],
  ]);
  const cost = clusterCost(before, after, [1.5, 1.2, 0.9]);
  assert.equal(cost.seconds, 10);
  assert.equal(cost.apiServerCpuSeconds, 2.5);
  assert.equal(cost.etcdCpuSeconds, 0.75);
  assert.deepEqual(cost.byRequest, { 'GET memcacheds': 1000, 'APPLY deployments': 1000 });
  assert.equal(cost.requests, 2000);
  assert.deepEqual(cost.loadavg, [1.5, 1.2, 0.9]);
});

test('perUnit divides CPU into milliseconds and requests per unit; a count of 0 gives NaN, not Infinity', () => {
  assert.deepEqual(perUnit({ apiServerCpuSeconds: 2.5, etcdCpuSeconds: 0.75, requests: 2000 }, 1000), { apiServerCpuMs: 2.5, etcdCpuMs: 0.75, requests: 2 });
  const none = perUnit({ apiServerCpuSeconds: 1, etcdCpuSeconds: 1, requests: 1 }, 0);
  assert.ok(Number.isNaN(none.apiServerCpuMs) && Number.isNaN(none.requests));
});

const cost = (api: number, requests: number): ClusterCost => ({
  seconds: 60,
  apiServerCpuSeconds: api,
  etcdCpuSeconds: api / 4,
  requests,
  byRequest: { 'GET memcacheds': requests / 2, 'APPLY deployments': requests / 2 },
  loadavg: [1, 1, 1],
});
const row = (
  pinning: 'pinned' | 'unpinned',
  system: string,
  workload: PerObjectRow['workload'],
  size: number,
  api: number,
  extra: Partial<PerObjectRow> = {},
): PerObjectRow =>
  perObjectRow({
    pinning,
    system,
    workload,
    size,
    objects: 1000,
    reconciles: 2000,
    seconds: 50,
    cluster: cost(api, 4000),
    pins: [{ name: 'etcd', pid: 1, allowed: '0', want: '0', ok: true }],
    ...extra,
  });

test('perObjectRow divides by the objects converged and by the reconciles', () => {
  const r = row('pinned', 'Operless', 'convergence', 1000, 50);
  assert.deepEqual(r.perObject, { apiServerCpuMs: 50, etcdCpuMs: 12.5, requests: 4 });
  assert.deepEqual(r.perReconcile, { apiServerCpuMs: 25, etcdCpuMs: 6.25, requests: 2 });
  assert.equal(workloadName('steady', 20), 'steady 20 updates/s');
  assert.equal(workloadName('resync', 1000), 'no-op resync of 1000');
  assert.equal(requestsPerObject(r, 1), 'GET memcacheds 2.00, … (1 more)');
});

test('the targets are judged on the pinned rows against controller-runtime of the same split and workload', () => {
  const rows = [
    row('pinned', 'controller-runtime (10 workers)', 'convergence', 1000, 40, { seconds: 50 }),
    row('pinned', 'Operless (10 invocations × 1 key)', 'convergence', 1000, 50, { seconds: 45 }),
    row('unpinned', 'controller-runtime (10 workers)', 'convergence', 1000, 80),
    row('unpinned', 'Operless (10 invocations × 1 key)', 'convergence', 1000, 60),
    row('pinned', 'controller-runtime (10 workers)', 'steady', 20, 10, { lag: { p50: 30, p99: 90 } }),
    row('pinned', 'Operless (10 invocations × 1 key)', 'steady', 20, 10, { lag: { p50: 40, p99: 80 } }),
  ];
  const t = perObjectTargets({ rows });
  assert.deepEqual(
    t.map((x) => [x.figure, x.met]),
    [
      ['API server CPU per converged object, convergence N = 1000, pinned', false],
      ['convergence of 1000 new objects, pinned, wall clock', true],
      ['lag at 20 updates/s, pinned', false],
    ],
  );
  assert.match(t[0]!.measured, /^1\.25× \(50\.00 against 40\.00 CPU-ms\)$/);
  const md = perObjectTable({ rows }).join('\n');
  assert.match(md, /\| unpinned \| convergence N = 1000 \| Operless \(10 invocations × 1 key\) \| 60\.00 \| 0\.75× \|/);
  assert.match(md, /CPUs allowed \(every thread, read back from \/proc\/<pid>\/task\/\*\/status\), pinned: etcd 0\./);
});

test('the full run measures convergence at 1000 and 5000, 10 and 20 updates/s and a resync of 1000; the quick one is small', () => {
  assert.deepEqual([FULL.perObjectSizes, FULL.perObjectRates, FULL.perObjectResync], [[1000, 5000], [10, 20], 1000]);
  assert.ok(QUICK.perObjectSizes.every((n) => n <= 100) && QUICK.perObjectResync <= 100);
});

test('a run that did not complete is named in the table, not left out silently', () => {
  const md = perObjectTable({ rows: [], failed: ['convergence N = 5000, pinned, Operless: 12 of 5000 objects not Available after 900000 ms'] }).join('\n');
  assert.match(md, /Did not complete: convergence N = 5000, pinned, Operless: 12 of 5000 objects not Available after 900000 ms\./);
});
