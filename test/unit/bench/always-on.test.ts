/**
 * Issue 21's rows in the benchmark, judged against controller-runtime: the always-on side's CPU
 * per 1000 reconciles and memory holding N objects (with the relist), the API-cost table with
 * controller-runtime beside Operless, and the targets — convergence at N = 1000, lag at the main
 * and the heavier rate, memory at 10,000 and 100,000 objects — with the imitation baseline only
 * when it ran. Pure: the /proc parsers, `cpuRow`, `targets`/`memoryTargets` and the markdown.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FULL, QUICK, targets, memoryTargets } from '../../../bench/run.ts';
import { toMarkdown } from '../../../bench/report.ts';
import type { BenchResult, LagRow } from '../../../bench/result.ts';
import { parseStatCpuSeconds, parseStatusMemory } from '../../../bench/lib/process.ts';
import { cpuRow } from '../../../bench/scenarios/cpu.ts';
import type { MemoryResult } from '../../../bench/scenarios/memory.ts';
import { spread } from '../../../bench/lib/stats.ts';

const held = (rss: number, sync = 2) => ({ rss, anon: rss - 40, file: 40, peak: rss + 5, syncSeconds: sync });
const memory = (objects: [number, number]): MemoryResult => ({
  bareNode: { rss: 42, anon: 8, file: 34, peak: 42 },
  rows: [
    { objects: objects[0], forwarder: held(60), controllerRuntime: held(300) },
    { objects: objects[1], forwarder: held(120), controllerRuntime: held(900) },
  ],
  relist: {
    primaries: objects[1] / 2,
    seconds: 21.5,
    messages: objects[1] / 2,
    keys: objects[1] / 2,
    maxMessagesPerKey: 1,
    dropped: 0,
    resyncs: 1,
    rssMiB: 150,
    peakMiB: 160,
  },
  settleMs: 5000,
  samples: 20,
});

const lag = (system: string, rate: number, p50: number, p99: number): LagRow => ({
  system,
  rate,
  p50: spread([p50]),
  p95: spread([p99]),
  p99: spread([p99]),
  lost: 0,
  reconcilesPerUpdate: spread([1]),
  machineBusy: spread([0.5]),
  samples: [],
});

function result(extra: Partial<BenchResult>): BenchResult {
  return {
    date: '2026-12-02T00-00-00Z',
    mode: 'full',
    repeat: 1,
    machine: { cpus: 2, cpuModel: 'cpu', memoryGiB: 24, node: '24' },
    settings: FULL,
    convergence: [],
    lag: [],
    targets: [],
    ...extra,
  };
}

test('/proc parsers: VmRSS, RssAnon, RssFile and VmHWM in MiB; utime + stime in seconds, a command name with spaces and parentheses', () => {
  const status = 'Name:\tnode\nVmHWM:\t  102400 kB\nVmRSS:\t   81920 kB\nRssAnon:\t   40960 kB\nRssFile:\t   40960 kB\n';
  assert.deepEqual(parseStatusMemory(status), { rss: 80, anon: 40, file: 40, peak: 100 });
  assert.ok(Number.isNaN(parseStatusMemory('Name:\tx\n').rss));
  const stat = '4242 (memcached (op) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 12 0 100 0 0';
  assert.equal(parseStatCpuSeconds(stat), 3.8);
});

test('CPU rows: per 1000 reconciles and per 1000 objects; NaN without reconciles', () => {
  assert.deepEqual(cpuRow('controller-runtime (10 workers)', 'the operator', 1000, { seconds: 40, reconciles: 6000, cpuSeconds: 12 }), {
    system: 'controller-runtime (10 workers)',
    process: 'the operator',
    objects: 1000,
    seconds: 40,
    reconciles: 6000,
    cpuSeconds: 12,
    perThousandReconciles: 2,
    perThousandObjects: 12,
  });
  assert.ok(Number.isNaN(cpuRow('x', 'y', 10, { seconds: 1, reconciles: 0, cpuSeconds: 1 }).perThousandReconciles));
});

test('memory targets: ≤ 64 MiB at 10,000 and ≤ 96 MiB at 100,000, ≤ 0.25× controller-runtime at 10,000, the relist once per primary', () => {
  const t = memoryTargets(memory([10_000, 100_000]));
  assert.deepEqual(
    t.map((x) => [x.figure, x.target, x.met]),
    [
      ['forwarder memory, 10000 watched objects (primaries + children)', '≤ 64 MiB resident', true],
      ['forwarder memory, 100000 watched objects (primaries + children)', '≤ 96 MiB resident', false],
      ['always-on memory, 10000 watched objects: forwarder against controller-runtime', '≤ 0.25×', true],
      ['relist of 50000 primaries on one queue', 'every primary exactly once, none dropped', true],
    ],
  );
  assert.match(t[2]!.measured, /^0\.20× \(60\.0 MiB against 300\.0 MiB\)$/);
  // A quick run's sizes are shown, not judged; a relist that sent a key twice or dropped one fails.
  const quick = memory([200, 1000]);
  assert.deepEqual(
    memoryTargets(quick)
      .slice(0, 3)
      .map((x) => x.met),
    [undefined, undefined, undefined],
  );
  const twice = { ...quick, relist: { ...quick.relist, messages: 501, maxMessagesPerKey: 2 } };
  assert.equal(memoryTargets(twice).at(-1)!.met, false);
});

test('targets are judged against controller-runtime: convergence at N = 1000 (not the largest N), lag at the main rate, lower at the heavier one; no baseline row without the baseline', () => {
  const eq = `Operless (${FULL.equalInvocations} invocations × 1 key)`;
  const r = result({
    convergence: [1000, 5000].map((n) => ({
      n,
      rows: [
        { system: 'controller-runtime (10 workers)', seconds: spread([n === 1000 ? 40 : 100]), reconciles: 6 * n },
        { system: eq, seconds: spread([n === 1000 ? 38 : 300]), reconciles: 4 * n },
      ],
    })),
    lag: [
      lag('controller-runtime (10 workers)', 10, 100, 400),
      lag(`${eq}, coalescing 500 ms (default)`, 10, 140, 950),
      lag('controller-runtime (10 workers)', 20, 500, 2000),
      lag(`${eq}, coalescing 500 ms (default)`, 20, 450, 2500),
    ],
    memory: memory([10_000, 100_000]),
  });
  const t = targets(r);
  const conv = t.find((x) => x.target === '≤ 1.0× controller-runtime')!;
  assert.deepEqual(
    [conv.figure, conv.measured, conv.met],
    ['convergence of 1000 new objects, equal concurrency, against controller-runtime itself', '0.95×', true],
  );
  const main = t.find((x) => x.figure.startsWith('added lag at 10 updates/s'))!;
  assert.deepEqual([main.target, main.measured, main.met], ['p50 ≤ 50 ms, p99 ≤ 500 ms above controller-runtime', 'p50 +40 ms, p99 +550 ms', false]);
  const heavy = t.find((x) => x.figure.startsWith('lag at 20 updates/s'))!;
  assert.deepEqual([heavy.measured, heavy.met], ['p50 −50 ms, p99 +500 ms', false]);
  assert.ok(t.some((x) => x.figure.startsWith('relist of 50000 primaries')));
  assert.ok(!t.some((x) => /baseline/.test(`${x.figure} ${x.target}`)));
  // With the baseline (--baseline) its rows come back, after controller-runtime's.
  const withBase = targets(
    result({
      convergence: [
        {
          n: 100,
          rows: [
            { system: 'baseline (10 workers)', seconds: spread([50]), reconciles: 200 },
            { system: eq, seconds: spread([40]), reconciles: 400 },
          ],
        },
      ],
    }),
  );
  assert.deepEqual(
    withBase.map((x) => x.target),
    ['≤ 1.0× baseline'],
  );
});

test('the report: API requests with controller-runtime beside Operless, the CPU table, memory and relist tables; no baseline column when it did not run', () => {
  const api = (first: number, noop: number, byVerb: Record<string, number>) => ({
    objects: 20,
    first: { perReconcile: first, reconciles: 20, byVerb },
    noopEvent: { perReconcile: noop, reconciles: 20, byVerb: noop ? byVerb : {} },
    noop: { perReconcile: noop, reconciles: 40, byVerb: noop ? byVerb : {} },
  });
  const md = toMarkdown(
    result({
      settings: QUICK,
      convergence: [
        {
          n: 20,
          rows: [
            { system: 'controller-runtime (10 workers)', seconds: spread([4]), reconciles: 120 },
            { system: 'Operless (10 invocations × 1 key)', seconds: spread([6]), reconciles: 70 },
          ],
        },
      ],
      apiCost: { operless: api(8, 4, { 'GET memcacheds': 1 }), controllerRuntime: api(5, 0, { 'POST deployments': 1 }) },
      cpu: [
        cpuRow('controller-runtime (10 workers)', 'the operator (Go, whole process)', 20, { seconds: 4, reconciles: 120, cpuSeconds: 0.6 }),
        cpuRow('Operless (10 invocations × 1 key)', 'the forwarder (its bundle as its own process)', 20, { seconds: 6, reconciles: 70, cpuSeconds: 0.35 }),
      ],
      memory: memory([200, 1000]),
    }),
  );
  assert.match(md, /\| N \| system \| seconds \| reconciles \| ratio to controller-runtime \|\n/);
  assert.match(md, /\| 20 \| Operless \(10 invocations × 1 key\) \| 6 \| 70 \| 1\.5× \|\n/);
  assert.match(md, /\| reconcile \| Operless \| controller-runtime \| Operless by verb and resource \| controller-runtime by verb and resource \|/);
  assert.match(md, /\| first \| 8 \| 5 \| GET memcacheds 1 \| POST deployments 1 \|/);
  assert.match(md, /\| no-op, periodic resync \| 4 \| 0 \| GET memcacheds 1 \| none \|/);
  assert.match(md, /\| controller-runtime \(10 workers\) \| the operator \(Go, whole process\) \| 4 \| 120 \| 0\.6 \| 5 \| 30 \|/);
  assert.match(md, /\| 1000 \| 120 MiB \(80 MiB\) \| 125 MiB \| 2 s \| 900 MiB \(860 MiB\) \| 905 MiB \| 2 s \| 0\.133× \|/);
  assert.match(md, /### The forwarder's relist of 500 primaries on one queue/);
  assert.match(md, /\| 21\.5 \| 500 \| 500 \| 1 \| 0 \| 1 \| 150 MiB \| 160 MiB \|/);
  assert.doesNotMatch(md, /baseline/);
});
