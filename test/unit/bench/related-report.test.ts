/**
 * The related-objects scenario's tables in the benchmark report (bench/report.ts): one row per
 * ConfigMap change with its lag, reconciles of the referring objects and of the others, and
 * API requests, and the operator's own cost of one change. Pure rendering; no timings judged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QUICK } from '../../../bench/run.ts';
import { toMarkdown } from '../../../bench/report.ts';
import type { BenchResult } from '../../../bench/result.ts';

const update = {
  p50: 400,
  p95: 900,
  max: 900,
  lost: 0,
  referringReconciles: 30,
  referringByReason: { Related: 10, Owned: 20 },
  otherReconciles: 0,
  apiRequests: 420,
  apiByVerb: { 'GET configmaps': 30, 'PATCH configmaps': 1 },
};
const result: BenchResult = {
  date: '2026-12-02T00-00-00Z',
  mode: 'quick',
  repeat: 1,
  machine: { cpus: 2, cpuModel: 'cpu', memoryGiB: 24, node: '24' },
  settings: QUICK,
  convergence: [],
  lag: [],
  targets: [],
  related: {
    objects: 30,
    referring: 10,
    updates: [update, { ...update, p50: 200 }],
    machineBusy: 0.5,
    lag: { p50: 300, p95: 900, max: 900 },
    operator: {
      apiRequests: 125,
      perReferring: 12.5,
      byVerb: { 'GET configmaps': 25 },
      referringReconciles: 25,
      referringByReason: { Related: 10, Owned: 10, Retry: 5 },
      otherReconciles: 0,
    },
  },
};

test("the report has a Related objects table: one row per change, the total, and the operator's own cost", () => {
  const md = toMarkdown(result);
  assert.match(md, /### Related objects: a ConfigMap change referred to by 10 of 30 Memcacheds/);
  assert.match(md, /\| 1 \| 400 \| 900 \| 900 \| 0 \| 30 \| Owned 20, Related 10 \| 0 \| 420 \| GET configmaps 30, PATCH configmaps 1 \|/);
  assert.match(md, /\| 2 \| 200 \|/);
  assert.match(md, /\| all \| 300 \| 900 \| 900 \|.*machine CPU busy 50 % \|/);
  assert.match(
    md,
    /125 requests for one change, 12\.5 per referring object \(GET configmaps 25\); 25 reconciles of the referring objects \(messages: Owned 10, Related 10, Retry 5\), 0 of the others/,
  );
});

test('without the scenario the report has no Related objects table', () => {
  const { related: _, ...rest } = result;
  assert.doesNotMatch(toMarkdown(rest), /Related objects/);
});
