// Ad-hoc: where the Operless lag goes, per update. Runs the lag load (RUNS times, each on a
// fresh control plane, POOL objects, RATE updates/s for SECONDS; INVOCATIONS × KEYS per
// invocation, BATCH records per invocation, MAXW the forwarder's coalesceMaxWindowMs) and attributes every update
// to the invocation record that reconciled it: the first record of that object whose handler
// started after the update was sent and finished before its status was seen. Then prints each
// hop's median for all updates and for the slowest 5 %:
//   pre      update sent → its message entered the queue (watch delivery, coalescing hold, send);
//            negative when an older message of that object (sent before the update) carried it
//   queue    entered the queue (or the update, if later) → received by a poller
//   runner   received → handler started (batch assembly, concurrency slot)
//   handler  the invocation's handler (all records of its batch)
//   after    handler done → the tracker saw the status (the status write's watch delivery)
// and which message reasons carried the slowest updates, with their coalescing holds. The
// handler time is the whole invocation's: with several keys per batch an update's record often
// ends after its status was seen and is not attributed (the attributed count is printed).
import type { SQSEvent } from 'aws-lambda';
import { startBenchEnv, startOperless } from '../lib/systems.ts';
import { measureLag } from '../scenarios/lag.ts';

interface Record {
  name: string;
  reason: string;
  observedAt: number;
  sentTs: number;
  recvTs: number;
  start: number;
  done: number;
}
interface Sample {
  name: string;
  generation: number;
  sent: number;
  seen: number;
}

const RUNS = Number(process.env.RUNS ?? 3);
const load = { pool: Number(process.env.POOL ?? 50), rate: Number(process.env.RATE ?? 20), seconds: Number(process.env.SECONDS ?? 60) };
const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))]! : Number.NaN;
};

for (let run = 1; run <= RUNS; run++) {
  const env = await startBenchEnv();
  const records: Record[] = [];
  const samples: Sample[] = [];
  try {
    const r = await measureLag(
      env,
      `hops-${run}`,
      (namespace) =>
        startOperless(env, {
          namespace,
          maxConcurrency: Number(process.env.INVOCATIONS ?? 10),
          keysPerInvocation: Number(process.env.KEYS ?? 1),
          batchSize: Number(process.env.BATCH ?? 10),
          ...(process.env.MAXW ? { coalesceMaxWindowMs: Number(process.env.MAXW) } : {}),
          observe: (event: SQSEvent, start, done) => {
            for (const rec of event.Records) {
              const body = JSON.parse(rec.body) as { name: string; reason: string; observedAt: number };
              records.push({
                name: body.name,
                reason: body.reason,
                observedAt: body.observedAt,
                sentTs: Number(rec.attributes.SentTimestamp),
                recvTs: Number(rec.attributes.ApproximateFirstReceiveTimestamp),
                start,
                done,
              });
            }
          },
        }),
      { ...load, onSample: (s) => samples.push(s) },
    );
    const byName = new Map<string, Record[]>();
    for (const rec of records) byName.set(rec.name, [...(byName.get(rec.name) ?? []), rec]);
    const rows = samples.flatMap((s) => {
      const rec = (byName.get(s.name) ?? []).filter((x) => x.start >= s.sent && x.done <= s.seen + 5).sort((a, b) => a.start - b.start)[0];
      if (!rec) return [];
      const hold = (byName.get(s.name) ?? []).find((x) => x.reason === 'Modified' && x.observedAt >= s.sent && x.observedAt <= s.seen);
      return [
        {
          lag: s.seen - s.sent,
          reason: rec.reason,
          pre: rec.sentTs - s.sent,
          queue: rec.recvTs - Math.max(rec.sentTs, s.sent),
          runner: rec.start - rec.recvTs,
          handler: rec.done - rec.start,
          after: s.seen - rec.done,
          hold: hold ? hold.sentTs - hold.observedAt : Number.NaN,
        },
      ];
    });
    const cut = q(
      rows.map((x) => x.lag),
      95,
    );
    const tail = rows.filter((x) => x.lag >= cut);
    console.log(
      `run ${run}: lag p50 ${r.p50} p95 ${r.p95} p99 ${r.p99} ms; ${r.updates} updates, ${r.lost} lost, ${rows.length} attributed, ${records.length} records`,
    );
    const reasons = (xs: typeof rows) =>
      JSON.stringify(Object.fromEntries([...new Set(xs.map((x) => x.reason))].map((k) => [k, xs.filter((x) => x.reason === k).length])));
    for (const [label, xs] of [
      ['all', rows],
      [`slowest 5 % (lag ≥ ${cut} ms)`, tail],
    ] as const) {
      const med = (k: 'lag' | 'pre' | 'queue' | 'runner' | 'handler' | 'after' | 'hold') =>
        q(
          xs.map((x) => x[k]).filter((v) => !Number.isNaN(v)),
          50,
        );
      console.log(
        `  ${label}: medians lag ${med('lag')} = pre ${med('pre')} + queue ${med('queue')} + runner ${med('runner')} + handler ${med('handler')} + after ${med('after')}; Modified hold ${med('hold')}; carried by ${reasons(xs)}`,
      );
    }
    console.log(
      `  by reason, all records: ${JSON.stringify(Object.fromEntries([...new Set(records.map((x) => x.reason))].map((k) => [k, records.filter((x) => x.reason === k).length])))}`,
    );
  } finally {
    await env.stop();
  }
}
