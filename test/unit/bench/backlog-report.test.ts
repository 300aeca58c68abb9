/**
 * The bulk-lane and failover scenarios' tables in the benchmark report (bench/report.ts): one row
 * per system with the machine's load average beside it. Pure rendering; no timings judged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QUICK } from '../../../bench/run.ts';
import { toMarkdown } from '../../../bench/report.ts';
import type { BenchResult } from '../../../bench/result.ts';

const result: BenchResult = {
  date: '2026-12-06T00-00-00Z',
  mode: 'quick',
  repeat: 1,
  machine: { cpus: 2, cpuModel: 'cpu', memoryGiB: 24, node: '24' },
  settings: QUICK,
  convergence: [],
  lag: [],
  targets: [],
  bulkLane: {
    resyncs: 10_000,
    pool: 100,
    updates: 10,
    rows: [
      { system: 'one queue', lagP50Ms: 57_673, lagMaxMs: 62_841, drainedSeconds: 71.7, loadavg: [3.52, 8.01] },
      { system: 'bulk queue', lagP50Ms: 241, lagMaxMs: 378, drainedSeconds: 60.3, loadavg: [8, 6.5] },
      {
        system: 'controller-runtime v0.22 (5 workers)',
        lagP50Ms: 12,
        lagMaxMs: 2100,
        drainedSeconds: 3.4,
        loadavg: [6, 6.1],
        reconcilesInWindow: 20_004,
        maxQueueDepth: 9_870,
      },
    ],
    controllerRuntime: { objects: 10_000, workers: 5, syncPeriodSeconds: 60 },
  },
  failover: {
    objects: 10_000,
    lease: '5/3/1 s',
    rows: [
      {
        mode: 'cold',
        followerVmRssMiB: 79,
        killToTakeoverSeconds: 5.78,
        takeoverToChangeSeconds: 0.74,
        killToChangeSeconds: 6.52,
        messagesAfterKill: 10_001,
        messagesAfterKillByReason: { Resync: 10_000, Added: 1 },
        listRequestsAfterKill: 21,
        loadavg: [2, 2.5],
      },
      {
        mode: 'warm',
        followerVmRssMiB: 87,
        killToTakeoverSeconds: 5.2,
        takeoverToChangeSeconds: 0.01,
        killToChangeSeconds: null,
        messagesAfterKill: 1,
        messagesAfterKillByReason: { Added: 1 },
        listRequestsAfterKill: 0,
        loadavg: [2.5, 2.4],
      },
    ],
  },
};

test('the report has the bulk-lane and failover tables, each row with its load average', () => {
  const md = toMarkdown(result);
  assert.match(md, /### A live change during a resync: 10000 Resyncs over 100 objects, 10 live changes one a second/);
  assert.match(md, /\| one queue \| 57673 ms \| 62841 ms \| 71\.7 s \| 3\.5 → 8\.0 \|/);
  assert.match(md, /\| bulk queue \| 241 ms \| 378 ms \| 60\.3 s \| 8\.0 → 6\.5 \|/);
  assert.match(md, /\| controller-runtime v0\.22 \(5 workers\) \| 12 ms \| 2100 ms \| 3\.4 s \| 6\.0 → 6\.1 \|/);
  assert.match(md, /periodic resync \(SyncPeriod 60 s\) of 10000 converged objects at spec\.size 0/);
  assert.match(md, /In its window: 20004 reconciles, work queue depth up to 9870/);
  assert.match(md, /### Failover at 10000 watched objects: cold vs warm standby \(lease 5\/3\/1 s\)/);
  assert.match(md, /\| cold \| 5\.78 s \| 0\.74 s \| 6\.52 s \| 10001 \(Resync 10000, Added 1\) \| 21 \| 79 MiB \| 2\.0 → 2\.5 \|/);
  assert.match(md, /\| warm \| 5\.2 s \| 0\.01 s \| n\/a \| 1 \(Added 1\) \| 0 \| 87 MiB \|/);
});

test('without controller-runtime the bulk-lane table has no note on its resync', () => {
  const { controllerRuntime: _c, ...bulk } = result.bulkLane!;
  const md = toMarkdown({ ...result, bulkLane: { ...bulk, rows: bulk.rows.slice(0, 2) } });
  assert.match(md, /\| bulk queue \| 241 ms/);
  assert.doesNotMatch(md, /SyncPeriod|In its window/);
});

test('without the scenarios the report has neither table', () => {
  const { bulkLane: _b, failover: _f, ...rest } = result;
  assert.doesNotMatch(toMarkdown(rest), /A live change during a resync|Failover at/);
});
