/**
 * Smoke test of the benchmark suite (bench/run.ts) on the real control plane and the
 * embedded queue, with tiny sizes: every part runs end to end and writes its JSON, markdown
 * and SVG. It checks the structure of the output, never timings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QUICK, runBench } from '../../bench/run.ts';

test('the quick benchmark runs convergence, lag and API cost on both systems, a related change and the webhooks on Operless, and writes json, markdown and svg', { timeout: 360_000 }, async () => {
  const outDir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  try {
    const { result, files } = await runBench({
      settings: { ...QUICK, sizes: [3], lagPool: 2, lagRate: 2, lagOverloadRate: 3, lagSeconds: 2, apiObjects: 3, convergenceTimeoutMs: 120_000, relatedObjects: 3, relatedReferring: 2, relatedUpdates: 1, webhookRequests: 2, webhookColdRequests: 1 },
      mode: 'custom',
      repeat: 1,
      only: ['convergence', 'lag', 'api', 'related', 'webhooks'],
      outDir,
      log: () => {},
    });
    assert.equal(result.convergence.length, 1);
    const rows = result.convergence[0]!.rows;
    assert.deepEqual(rows.map((r) => r.system.split(' ')[0]), ['baseline', 'Operless', 'Operless', 'Operless']);
    assert.match(rows[3]!.system, /per-key/, 'the per-key mode converges too');
    for (const row of rows) {
      assert.ok(Number.isFinite(row.seconds.median) && row.seconds.median > 0, `${row.system} converged`);
      assert.ok(row.reconciles >= 3, `${row.system} reconciled every object at least once (${row.reconciles})`);
    }
    assert.deepEqual(result.lag.map((r) => [r.system.split(' ')[0], r.rate]), [['baseline', 2], ['Operless', 2], ['baseline', 3], ['Operless', 3]]);
    for (const row of result.lag) {
      assert.equal(row.lost, 0, `${row.system}: every update's status was written`);
      assert.equal(row.samples.length, row.rate * 2);
      assert.ok(row.reconcilesPerUpdate.median > 0, `${row.system}: reconciles counted`);
    }
    assert.ok(result.targets.some((t) => t.figure.startsWith('added lag at 2 updates/s')), 'the targets are judged at the main rate');
    assert.ok(!result.targets.some((t) => t.figure.includes('at 3 updates/s')), 'not at the heavier one');
    // API cost runs on a fresh control plane after convergence, with the watches paused: its
    // objects converge only because the bench pokes them (Memcached does not poll).
    for (const side of [result.apiCost?.operless, result.apiCost?.baseline]) {
      assert.ok(side, 'both sides measured');
      for (const w of [side.first, side.noopEvent, side.noop]) assert.ok(w.perReconcile > 0, JSON.stringify(w));
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
    assert.ok(rel.operator.apiRequests > 0 && rel.updates[0]!.apiRequests > rel.operator.apiRequests, 'requests counted, the rollouts add to the operator\'s');
    // Webhooks: dry-run creates without webhooks, warm, and with a fresh function process per invocation.
    const hooks = result.webhooks;
    assert.ok(hooks, 'the webhooks scenario ran');
    assert.deepEqual(hooks.rows.map((row) => [row.mode, row.requests]), [['none', 2], ['warm', 2], ['cold', 1]]);
    for (const row of hooks.rows) assert.ok(row.p50 > 0 && row.p99 >= row.p50, JSON.stringify(row));
    assert.ok(hooks.cold.importMs > 0 && hooks.cold.callMs > 0, `the cold invocations ran in fresh processes: ${JSON.stringify(hooks.cold)}`);
    assert.ok(result.targets.some((t) => t.figure.startsWith('admission through both webhooks')));
    assert.ok(result.cost, 'a cost model was computed from the Operless runs');
    assert.ok(result.cost.perMillion.total > 0);
    assert.ok(result.targets.some((t) => t.figure.startsWith('convergence')));

    const [jsonFile, mdFile, svgFile] = files;
    assert.deepEqual(JSON.parse(readFileSync(jsonFile!, 'utf8')).convergence[0].n, 3);
    const md = readFileSync(mdFile!, 'utf8');
    assert.match(md, /### Convergence/);
    assert.match(md, /### Lag .* 2\/s for 2 s/);
    assert.match(md, /### Lag .* 3\/s for 2 s .*heavier load/);
    assert.match(md, /\| 3 \| baseline \(10 workers\) \|/);
    assert.match(md, /### Related objects: a ConfigMap change referred to by 2 of 3 Memcacheds/);
    assert.match(md, /### Webhooks: admission latency/);
    assert.match(md, /\| both webhooks, each invocation a fresh function process \| 1 \|/);
    assert.match(readFileSync(svgFile!, 'utf8'), /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
