/**
 * The bulk-lane and failover scenarios of `npm run bench` at tiny sizes: they run, every row has
 * its figures and the machine's load average (controller-runtime's bulk-lane row too, with its
 * reconciles in the window), and the report has their tables. Structure only,
 * never timings (speed is measured in bench/, not asserted in tests): what the bulk queue and the
 * warm standby guarantee is tested in bulk-lane.test.ts and forwarder-standby.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QUICK, runBench } from '../../bench/run.ts';

test('bulk-lane and failover run at tiny sizes and land in the results and the report', { timeout: 900_000 }, async () => {
  const outDir = mkdtempSync(join(tmpdir(), 'bench-backlog-smoke-'));
  try {
    const { result, files } = await runBench({
      settings: { ...QUICK, bulkLane: { ...QUICK.bulkLane, resyncs: 30, pool: 3, updates: 2 }, failoverObjects: 20 },
      mode: 'custom',
      repeat: 1,
      only: ['bulk-lane', 'failover'],
      controllerRuntime: true,
      outDir,
      log: () => {},
    });
    const bulk = result.bulkLane;
    assert.ok(bulk, 'the bulk-lane scenario ran');
    assert.equal(bulk.rows.length, 3, 'one queue, the bulk queue, then controller-runtime');
    assert.deepEqual(bulk.controllerRuntime, { objects: 30, workers: QUICK.bulkLane.crWorkers, syncPeriodSeconds: QUICK.bulkLane.crSyncPeriodSeconds });
    const cr = bulk.rows[2]!;
    assert.ok((cr.reconcilesInWindow ?? 0) >= 30, `controller-runtime's resync reconciled every object in the window: ${JSON.stringify(cr)}`);
    for (const row of bulk.rows) {
      assert.ok(row.lagP50Ms > 0 && row.lagMaxMs >= row.lagP50Ms && row.drainedSeconds > 0, JSON.stringify(row));
      assert.equal(row.lagsMs?.length, 2, 'every live change has its lag');
      assert.ok(
        row.loadavg.every((x) => Number.isFinite(x)),
        'the load average is kept with the row',
      );
    }
    const failover = result.failover;
    assert.ok(failover, 'the failover scenario ran');
    assert.deepEqual(
      failover.rows.map((r) => r.mode),
      ['cold', 'warm'],
    );
    for (const row of failover.rows) {
      assert.ok(
        row.killToTakeoverSeconds !== null && row.killToChangeSeconds !== null,
        `the follower took over and forwarded the change: ${JSON.stringify(row)}`,
      );
      assert.ok(row.messagesAfterKill >= 1 && row.followerVmRssMiB > 0, JSON.stringify(row));
    }
    const md = readFileSync(files[1]!, 'utf8');
    assert.match(md, /### A live change during a resync: 30 Resyncs over 3 objects/);
    assert.match(md, /\| controller-runtime v0\.22 \(5 workers\): its cache's periodic resync of 30 objects \|/);
    assert.match(md, /### Failover at 20 watched objects: cold vs warm standby/);
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
