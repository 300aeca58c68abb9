/**
 * Bounded soak: continuous churn — Memcached objects created, updated (size and an
 * annotation) and deleted at a steady rate — through the forwarder bundle as its own process
 * (shipped config, its ServiceAccount), the Memcached function in a Lambda-like runner
 * process, a real kube-apiserver and ElasticMQ (test/security/pipeline.ts).
 *
 * The churn is a fixed number of operations (`OPERLESS_SOAK_SECONDS` × `OPERLESS_SOAK_RATE`),
 * paced at the rate. Every `5 × rate` operations the forwarder's resident memory (VmRSS in
 * /proc/<pid>/status) and open file descriptors (/proc/<pid>/fd) are sampled, so the number
 * of samples follows from the configuration, not from how fast the machine is. Each change's
 * end-to-end lag (from the write to the status showing that generation reconciled, or the
 * object gone) is measured and printed. Asserted (generous margins; growth, not speed):
 * - memory: the median of the last third of the samples is at most 1.5 × the first third's
 *   + 32 MiB; open descriptors: the last third's maximum at most the first third's + 16;
 * - nothing is lost: every change converges (waited for, however long the machine takes);
 * - the churn was churn: creates, updates and deletes all happened.
 * How fast changes converge is speed, not growth: printed here, measured in bench/.
 * The memory and descriptor curve is printed as a text chart.
 *
 * `OPERLESS_SOAK_SECONDS` sets the churn's length at the rate (default 150 s in CI; longer for
 * a real soak; at least 30, for six samples), `OPERLESS_SOAK_RATE` the operations per second
 * (default 4). Values that are not positive integers are refused, naming the variable.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startPipeline, until, type Pipeline } from '../security/pipeline.ts';

/** A positive integer knob from the environment, or the fallback; anything else is refused. */
function knob(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined) return fallback;
  const value = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min)
    throw new Error(`${name}=${JSON.stringify(raw)} is refused: it must be an integer of at least ${min}. Unset it for the default (${fallback}).`);
  return value;
}
const SECONDS = knob('OPERLESS_SOAK_SECONDS', 150, 30);
const RATE = knob('OPERLESS_SOAK_RATE', 4, 1);
const OPERATIONS = SECONDS * RATE;
/** A sample every this many operations (every 5 s at the rate). */
const SAMPLE_EVERY = 5 * RATE;
const NAMES = 30;
const NS = 'soak';
const GROUP = { group: 'cache.example.com', version: 'v1alpha1', namespace: NS, plural: 'memcacheds' };

let work: string;
let p: Pipeline;
before(async () => {
  work = mkdtempSync(join(tmpdir(), 'operless-soak-'));
  p = await startPipeline({ work, logLevel: 'info' });
  // The test keeps every log line in memory; cap it so the test process itself stays flat.
  setInterval(() => {
    for (const l of [p.forwarderLines, p.functionLines]) if (l.length > 20_000) l.splice(0, l.length - 10_000);
  }, 5000).unref();
});
after(async () => {
  await p?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Sample {
  t: number;
  rssKiB: number;
  fds: number;
  fnRssKiB: number;
}
function sample(pid: number): { rssKiB: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return { rssKiB, fds: readdirSync(`/proc/${pid}/fd`).length };
}

interface Obj {
  metadata: { name: string; generation: number; deletionTimestamp?: string };
  status?: { observedGeneration?: number };
}
/** Per name: the change waiting to be seen reconciled (generation, or gone) and since when. */
interface Pending {
  since: number;
  generation?: number;
  gone?: boolean;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

function chart(samples: Sample[]): string {
  const max = Math.max(...samples.map((s) => s.rssKiB));
  const rows = samples.map((s) => {
    const bar = '#'.repeat(Math.round((s.rssKiB / max) * 40));
    return `${String(Math.round(s.t / 1000)).padStart(5)} s ${(s.rssKiB / 1024).toFixed(1).padStart(7)} MiB ${String(s.fds).padStart(4)} fds  ${bar}`;
  });
  return `forwarder memory (VmRSS) and open fds over time:\n${rows.join('\n')}`;
}

test(`soak: ${OPERATIONS} operations of churn at ${RATE} ops/s — forwarder memory and fds flat, every change converges`, async () => {
  const api = p.cp.kubeConfig.makeApiClient(CustomObjectsApi);
  const ns = await p.cp.kubectl(['create', 'namespace', NS]);
  assert.equal(ns.code, 0, ns.stderr);
  const pid = p.forwarder.pid!;
  const start = Date.now();
  const samples: Sample[] = [];
  const pending = new Map<string, Pending>();
  const lags: number[] = [];
  const counts = { create: 0, update: 0, delete: 0, refused: 0 };
  const live = new Set<string>();

  const take = () => {
    const f = sample(pid);
    const fn = sample(p.runner.pid!);
    samples.push({ t: Date.now() - start, ...f, fnRssKiB: fn.rssKiB });
  };
  take();

  const poll = async () => {
    const list = (await api.listNamespacedCustomObject(GROUP)) as { items: Obj[] };
    const byName = new Map(list.items.map((o) => [o.metadata.name, o]));
    const now = Date.now();
    for (const [name, want] of pending) {
      const o = byName.get(name);
      const done = want.gone ? !o : o !== undefined && !o.metadata.deletionTimestamp && (o.status?.observedGeneration ?? 0) >= (want.generation ?? Infinity);
      if (done) {
        lags.push(now - want.since);
        pending.delete(name);
      }
    }
  };
  const poller = setInterval(() => {
    void poll().catch(() => {});
  }, 1000);

  const rnd = (n: number) => Math.floor(Math.random() * n);
  try {
    for (let op = 1; op <= OPERATIONS; op++) {
      const name = `soak-${rnd(NAMES)}`;
      const t = Date.now();
      try {
        if (!live.has(name)) {
          const o = (await api.createNamespacedCustomObject({
            ...GROUP,
            body: { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name }, spec: { size: 1 + rnd(3) } },
          })) as Obj;
          live.add(name);
          counts.create++;
          if (!pending.has(name)) pending.set(name, { since: t, generation: o.metadata.generation });
          else pending.set(name, { since: pending.get(name)!.since, generation: o.metadata.generation });
        } else if (Math.random() < 0.8) {
          const o = (await api.patchNamespacedCustomObject(
            { ...GROUP, name, body: { metadata: { annotations: { 'soak/at': String(t) } }, spec: { size: 1 + rnd(5) } } },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          )) as Obj;
          counts.update++;
          const since = pending.get(name)?.since ?? t;
          pending.set(name, { since, generation: o.metadata.generation });
        } else {
          await api.deleteNamespacedCustomObject({ ...GROUP, name });
          live.delete(name);
          counts.delete++;
          pending.set(name, { since: pending.get(name)?.since ?? t, gone: true });
        }
      } catch {
        // e.g. re-creating a name whose finalizer is still being removed: skip this tick.
        counts.refused++;
      }
      if (op % SAMPLE_EVERY === 0) take();
      // Pacing at the rate (not a synchronisation: nothing waits for anything here).
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 / RATE - (Date.now() - t))));
    }
    try {
      await until(
        'every change converged',
        async () => {
          await poll();
          return pending.size === 0;
        },
        120_000,
        1000,
      );
    } catch (err) {
      const list = (await api.listNamespacedCustomObject(GROUP)) as { items: Obj[] };
      const state = [...pending].map(([name, want]) => {
        const o = list.items.find((x) => x.metadata.name === name);
        return `${name}: want ${want.gone ? 'gone' : `generation ${want.generation}`} since ${Date.now() - want.since} ms; is ${o ? `generation ${o.metadata.generation}, observed ${o.status?.observedGeneration}${o.metadata.deletionTimestamp ? ', deleting' : ''}` : 'absent'}`;
      });
      throw new Error(
        `${(err as Error).message}: ${pending.size} pending\n${state.join('\n')}\nfunction warnings and errors:\n${p.functionLines
          .filter((l) => /"level":"(warn|error)"/.test(l))
          .slice(-15)
          .join('\n')}\nfunction lines about ${[...pending.keys()][0]}:\n${p.functionLines
          .filter((l) => l.includes(`${[...pending.keys()][0]}"`) || l.includes(`${[...pending.keys()][0]}\\"`))
          .slice(-12)
          .join('\n')}\nforwarder log tail:\n${p.forwarderLines.slice(-10).join('\n')}`,
      );
    }
  } finally {
    clearInterval(poller);
  }
  take();

  console.log(`\n${chart(samples)}`);
  const third = Math.max(1, Math.floor(samples.length / 3));
  const first = samples.slice(0, third);
  const last = samples.slice(-third);
  const rssFirst = median(first.map((s) => s.rssKiB));
  const rssLast = median(last.map((s) => s.rssKiB));
  const fdFirst = Math.max(...first.map((s) => s.fds));
  const fdLast = Math.max(...last.map((s) => s.fds));
  lags.sort((a, b) => a - b);
  const pct = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? NaN;
  console.log(
    [
      `operations: ${counts.create} creates, ${counts.update} updates, ${counts.delete} deletes (${counts.refused} refused by the API server) in ${((Date.now() - start) / 1000).toFixed(0)} s (${OPERATIONS} paced at ${RATE}/s)`,
      `forwarder RSS median: first third ${(rssFirst / 1024).toFixed(1)} MiB, last third ${(rssLast / 1024).toFixed(1)} MiB; fds max: ${fdFirst} → ${fdLast}`,
      `function runner RSS: ${(samples[0]!.fnRssKiB / 1024).toFixed(1)} → ${(samples.at(-1)!.fnRssKiB / 1024).toFixed(1)} MiB`,
      `end-to-end lag (write → reconciled status or gone, 1 s polling): ${lags.length} changes, p50 ${(pct(0.5) / 1000).toFixed(1)} s, p99 ${(pct(0.99) / 1000).toFixed(1)} s, max ${((lags.at(-1) ?? NaN) / 1000).toFixed(1)} s`,
    ].join('\n'),
  );

  assert.equal(samples.length, 2 + Math.floor(OPERATIONS / SAMPLE_EVERY), 'a sample at the start, every SAMPLE_EVERY operations, and at the end');
  assert.ok(counts.create > 0 && counts.update > 0 && counts.delete > 0, `the churn created, updated and deleted: ${JSON.stringify(counts)}`);
  assert.ok(rssLast <= rssFirst * 1.5 + 32 * 1024, `forwarder memory grew: ${rssFirst} KiB → ${rssLast} KiB`);
  assert.ok(fdLast <= fdFirst + 16, `forwarder open fds grew: ${fdFirst} → ${fdLast}`);
  assert.equal(p.forwarder.exitCode, null, 'the forwarder is still running');
});
