// Ad-hoc: which messages make the Operless reconciles in convergence N (default 1000) of
// Memcacheds of SIZE pods (default 1, as the bench).
import type { SQSEvent } from 'aws-lambda';
import { startBenchEnv, startOperless } from '../lib/systems.ts';
import { measureConvergence } from '../scenarios/convergence.ts';

const N = Number(process.env.N ?? 1000);
const env = await startBenchEnv();
const reasons = new Map<string, number>();
const perKey = new Map<string, number>();
let batches = 0;
let records = 0;
let groupedAway = 0;
const t0 = Date.now();
const timeline: [number, string][] = [];
/** Per key, when the changes behind its Owned messages were first seen (observedAt). */
const ownedAt = new Map<string, number[]>();
try {
  const r = await measureConvergence(
    env,
    'reasons',
    (namespace) =>
      startOperless(env, {
        namespace,
        maxConcurrency: 10,
        keysPerInvocation: 1,
        batchSize: Number(process.env.BATCH ?? 10),
        batchWindowSeconds: Number(process.env.WINDOW ?? 0),
        ...(process.env.COALESCE ? { coalesceWindowMs: Number(process.env.COALESCE) } : {}),
        ...(process.env.MAXW ? { coalesceMaxWindowMs: Number(process.env.MAXW) } : {}),
        observe: (event: SQSEvent) => {
          batches++;
          const keys = new Set<string>();
          for (const rec of event.Records) {
            records++;
            const body = JSON.parse(rec.body) as { reason: string; name: string; resourceVersion?: string; observedAt: number };
            if (body.reason === 'Owned') ownedAt.set(body.name, [...(ownedAt.get(body.name) ?? []), body.observedAt]);
            const tag = `${body.reason}${body.reason === 'Owned' ? (body.resourceVersion ? '+rv' : '-rv') : ''}`;
            reasons.set(tag, (reasons.get(tag) ?? 0) + 1);
            if (keys.has(body.name)) groupedAway++;
            keys.add(body.name);
            perKey.set(body.name, (perKey.get(body.name) ?? 0) + 1);
            timeline.push([Date.now() - t0, tag]);
          }
        },
      }),
    N,
    Number(process.env.SIZE ?? 1),
    900_000,
  );
  console.log(r);
  console.log('by reason', [...reasons]);
  console.log({ batches, records, groupedAway, keys: perKey.size });
  const hist = new Map<number, number>();
  for (const c of perKey.values()) hist.set(c, (hist.get(c) ?? 0) + 1);
  const spans = [...ownedAt.values()].map((ts) => Math.max(...ts) - Math.min(...ts)).sort((a, b) => a - b);
  const at = (p: number) => spans[Math.min(spans.length - 1, Math.floor((spans.length * p) / 100))];
  console.log(
    `Owned messages per key: ${[...ownedAt.values()].reduce((n, ts) => n + ts.length, 0) / Math.max(1, ownedAt.size)}; span from a key's first to its last Owned change, ms: p10 ${at(10)} p50 ${at(50)} p90 ${at(90)}`,
  );
  console.log(
    'records per key',
    [...hist].sort((a, b) => a[0] - b[0]),
  );
  const buckets = new Map<number, Map<string, number>>();
  for (const [t, tag] of timeline) {
    const b = Math.floor(t / 10000) * 10;
    const m = buckets.get(b) ?? new Map();
    m.set(tag, (m.get(tag) ?? 0) + 1);
    buckets.set(b, m);
  }
  for (const [b, m] of [...buckets].sort((a, b) => a[0] - b[0])) console.log(`${b}s`, Object.fromEntries(m));
} finally {
  await env.stop();
}
