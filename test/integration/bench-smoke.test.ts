/**
 * Smoke test of the benchmark suite (bench/run.ts) on the real control plane and the
 * embedded queue, with tiny sizes: every part runs end to end, Operless next to
 * controller-runtime's operator (bench/controller-runtime, built by the provisioner into the
 * shared cache on first use), and writes its JSON, markdown and SVG. It checks the structure of
 * the output, never timings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QUICK, runBench } from '../../bench/run.ts';

test('the quick benchmark runs convergence, lag, API cost, always-on CPU and memory with controller-runtime beside Operless, a related change and the webhooks on Operless, and writes json, markdown and svg', {
  timeout: 600_000,
}, async () => {
  const outDir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  try {
    const { result, files } = await runBench({
      settings: {
        ...QUICK,
        sizes: [3],
        lagPool: 2,
        lagRate: 2,
        lagOverloadRate: 3,
        lagSeconds: 2,
        apiObjects: 3,
        convergenceTimeoutMs: 120_000,
        relatedObjects: 3,
        relatedReferring: 2,
        relatedUpdates: 1,
        webhookRequests: 2,
        webhookColdRequests: 1,
        cpuObjects: 3,
        memorySizes: [20, 40],
        memorySettleMs: 200,
        memorySamples: 2,
        apiSyncPeriodSeconds: 3,
      },
      mode: 'custom',
      repeat: 1,
      only: ['convergence', 'lag', 'api', 'related', 'webhooks', 'cpu', 'memory'],
      controllerRuntime: true,
      outDir,
      log: () => {},
    });
    assert.equal(result.convergence.length, 1);
    const rows = result.convergence[0]!.rows;
    // The imitation baseline is opt-in (--baseline): controller-runtime is the anchor.
    assert.deepEqual(
      rows.map((r) => r.system.split(' ')[0]),
      ['controller-runtime', 'Operless', 'Operless', 'Operless'],
    );
    assert.match(rows[3]!.system, /per-key/, 'the per-key mode converges too');
    for (const row of rows) {
      assert.ok(Number.isFinite(row.seconds.median) && row.seconds.median > 0, `${row.system} converged`);
      assert.ok(row.reconciles >= 3, `${row.system} reconciled every object at least once (${row.reconciles})`);
      // At least the 3 creates and the controller manager's work: the API server's counter was read.
      assert.ok(
        (row.apiRequests ?? 0) >= 3 && (row.conflicts ?? -1) >= (row.operatorConflicts ?? -1) && (row.operatorConflicts ?? -1) >= 0,
        `${row.system}: API requests and 409s counted (${row.apiRequests}, ${row.conflicts})`,
      );
      const operless = row.system.startsWith('Operless');
      assert.ok(Object.keys(row.processCores ?? {}).length > 0, `${row.system}: where the CPU went (${JSON.stringify(row.processCores)})`);
      assert.equal(
        row.sqsRequestsPerReconcile !== undefined && row.sqsRequestsPerReconcile > 0,
        operless,
        `${row.system}: SQS requests per reconcile for Operless rows only (${row.sqsRequestsPerReconcile})`,
      );
    }
    // Per-key ordering beside the default in the lag rows too (issue 15).
    assert.deepEqual(
      result.lag.map((r) => [r.system.split(' ')[0], r.rate, /per-key/.test(r.system)]),
      [
        ['controller-runtime', 2, false],
        ['Operless', 2, false],
        ['Operless', 2, true],
        ['controller-runtime', 3, false],
        ['Operless', 3, false],
        ['Operless', 3, true],
      ],
    );
    for (const row of result.lag) {
      assert.equal(row.lost, 0, `${row.system}: every update's status was written`);
      assert.equal(row.samples.length, row.rate * 2);
      assert.ok(row.reconcilesPerUpdate.median > 0, `${row.system}: reconciles counted`);
      assert.ok(Object.keys(row.processCores ?? {}).length > 0, `${row.system}: where the CPU went (${JSON.stringify(row.processCores)})`);
    }
    assert.ok(
      result.targets.some((t) => t.figure.startsWith('added lag at 2 updates/s') && t.target.endsWith('above controller-runtime')),
      'the targets are judged at the main rate against controller-runtime',
    );
    assert.ok(
      result.targets.some((t) => t.figure.startsWith('lag at 3 updates/s') && t.target === 'p50 and p99 lower than controller-runtime'),
      'and at the heavier one: lower than controller-runtime',
    );
    assert.ok(!result.targets.some((t) => /baseline/.test(`${t.figure} ${t.target}`)), 'no target names the baseline that did not run');
    // API cost runs on a fresh control plane after convergence, with the watches (controller-runtime:
    // its informers' events) paused: its objects converge only because the bench pokes them.
    const api = result.apiCost;
    assert.ok(api?.operless && api.controllerRuntime && !api.baseline, 'Operless and controller-runtime measured, not the baseline');
    for (const w of [api.operless.first, api.operless.noopEvent, api.operless.noop, api.controllerRuntime.first])
      assert.ok(w.perReconcile > 0 && (w.reconciles ?? 0) >= 3, JSON.stringify(w));
    // A cached controller's no-op reads from its cache, not the API server (its resync is its cache's
    // own): fewer requests than Operless's, which reads the live object and its children.
    for (const [w, o] of [
      [api.controllerRuntime.noopEvent, api.operless.noopEvent],
      [api.controllerRuntime.noop, api.operless.noop],
    ] as const) {
      assert.ok((w.reconciles ?? 0) >= 3 && w.perReconcile < o.perReconcile, `${JSON.stringify(w)} against Operless ${JSON.stringify(o)}`);
    }
    // Related: 2 of 3 Memcacheds refer to the changed ConfigMap, the third to another one.
    const rel = result.related;
    assert.ok(rel, 'the related scenario ran');
    assert.equal(rel.updates.length, 1);
    assert.equal(rel.updates[0]!.lost, 0, 'both referring Deployments carry the new settings hash');
    assert.ok(rel.updates[0]!.referringReconciles >= 2, JSON.stringify(rel.updates[0]));
    assert.ok((rel.updates[0]!.referringByReason.Related ?? 0) >= 2, 'a Related message per referring object');
    assert.equal(rel.updates[0]!.otherReconciles, 0, 'the object referring to another ConfigMap is not reconciled');
    assert.equal(rel.operator.otherReconciles, 0);
    assert.ok(rel.operator.apiRequests > 0 && rel.updates[0]!.apiRequests > rel.operator.apiRequests, "requests counted, the rollouts add to the operator's");
    // Webhooks: dry-run creates without webhooks, warm, and with a fresh function process per invocation.
    const hooks = result.webhooks;
    assert.ok(hooks, 'the webhooks scenario ran');
    assert.deepEqual(
      hooks.rows.map((row) => [row.mode, row.requests]),
      [
        ['none', 2],
        ['warm', 2],
        ['cold', 1],
      ],
    );
    for (const row of hooks.rows) assert.ok(row.p50 > 0 && row.p99 >= row.p50, JSON.stringify(row));
    assert.ok(hooks.cold.importMs > 0 && hooks.cold.callMs > 0, `the cold invocations ran in fresh processes: ${JSON.stringify(hooks.cold)}`);
    assert.ok(result.targets.some((t) => t.figure.startsWith('admission through both webhooks')));
    // Always-on CPU: controller-runtime's process and the forwarder's, each over a convergence of 3.
    assert.deepEqual(
      result.cpu?.map((c) => c.system.split(' ')[0]),
      ['controller-runtime', 'Operless'],
    );
    // (Reconciles are counted as the runner deletes records: the last ones may land after the status was seen.)
    for (const c of result.cpu!) assert.ok(c.reconciles > 0 && c.cpuSeconds > 0 && Number.isFinite(c.perThousandReconciles), JSON.stringify(c));
    // Always-on memory: both processes held 20, then 40 objects; the forwarder relisted the 20 primaries once each.
    const mem = result.memory;
    assert.ok(mem, 'the memory scenario ran');
    assert.deepEqual(
      mem.rows.map((r) => r.objects),
      [20, 40],
    );
    for (const r of mem.rows) assert.ok(r.forwarder.rss > 0 && r.forwarder.peak >= r.forwarder.rss && (r.controllerRuntime?.rss ?? 0) > 0, JSON.stringify(r));
    assert.deepEqual([mem.relist.primaries, mem.relist.keys, mem.relist.messages, mem.relist.maxMessagesPerKey, mem.relist.dropped], [20, 20, 20, 1, 0]);
    assert.ok(
      result.targets.some((t) => t.figure.startsWith('forwarder memory, 40 watched objects') && t.met === undefined),
      'memory shown, not judged below 10,000 objects',
    );
    assert.ok(result.targets.some((t) => t.figure === 'relist of 20 primaries on one queue' && t.met === true));
    assert.ok(result.cost, 'a cost model was computed from the Operless runs');
    assert.ok(result.cost.perMillion.total > 0);
    assert.doesNotMatch(result.cost.from, /per-key/, "the default cost is the unordered mode's");
    assert.ok(result.costPerKey, 'and one from the per-key runs');
    assert.match(result.costPerKey.from, /^Operless per-key \(10 invocations × 1 key\), N = 3$/, 'like for like: the equal-concurrency runs at the same size');
    assert.match(result.cost.from, /^Operless \(10 invocations × 1 key\), N = 3$/);
    assert.ok(result.costPerKey.perMillion.sqsRequestsPerReconcile > 0);
    assert.ok(result.targets.some((t) => t.figure.startsWith('convergence') && t.target === '≤ 1.0× controller-runtime'));

    const [jsonFile, mdFile, svgFile] = files;
    assert.deepEqual(JSON.parse(readFileSync(jsonFile!, 'utf8')).convergence[0].n, 3);
    const md = readFileSync(mdFile!, 'utf8');
    assert.match(md, /### Convergence/);
    assert.match(
      md,
      /\| N \| system \| seconds \| reconciles \| ratio to controller-runtime \| API requests \(cluster\) \| of which 409 \| 409 on the operator's writes \| SQS requests per reconcile \|\n/,
    );
    assert.match(md, /### Cost per million reconciles at list price, unordered, the default/);
    assert.match(md, /### Cost per million reconciles at list price, per-key ordering/);
    assert.match(md, /### Lag .* 2\/s for 2 s/);
    assert.match(md, /### Lag .* 3\/s for 2 s .*heavier load/);
    assert.match(md, /p50 above controller-runtime/);
    assert.match(md, /Where the CPU went during the updates \(cores kept busy per process/);
    assert.match(md, /Where the CPU went at N = 3 \(cores kept busy per process/);
    assert.match(md, /\| 3 \| controller-runtime \(10 workers\) \|/);
    assert.match(md, /\| reconcile \| Operless \| controller-runtime \| Operless by verb and resource \| controller-runtime by verb and resource \|/);
    assert.match(md, /\| no-op, periodic resync \|/);
    assert.match(md, /### CPU of the always-on side in the cluster, convergence of 3 new objects/);
    assert.match(md, /\| 40 \| [\d.]+ MiB \([\d.]+ MiB\) \|/);
    assert.match(md, /### The forwarder's relist of 20 primaries on one queue/);
    assert.match(md, /### Related objects: a ConfigMap change referred to by 2 of 3 Memcacheds/);
    assert.doesNotMatch(md, /baseline/);
    assert.match(md, /### Webhooks: admission latency/);
    assert.match(md, /\| both webhooks, each invocation a fresh function process \| 1 \|/);
    assert.match(readFileSync(svgFile!, 'utf8'), /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
