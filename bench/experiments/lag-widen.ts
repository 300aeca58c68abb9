// Ad-hoc: lag with and without the backlog widening of the coalescing window, interleaved.
import { startBenchEnv, startOperless } from '../lib/systems.ts';
import { measureLag } from '../scenarios/lag.ts';

const env = await startBenchEnv();
let n = 0;
const on = (ns: string) => startOperless(env, { namespace: ns, maxConcurrency: 10, keysPerInvocation: 1 });
const off = (ns: string) => startOperless(env, { namespace: ns, maxConcurrency: 10, keysPerInvocation: 1, coalesceMaxWindowMs: 500 });
try {
  for (const [label, start] of [
    ['widening on', on],
    ['widening off', off],
    ['widening on', on],
    ['widening off', off],
  ] as const) {
    let sys: Awaited<ReturnType<typeof on>> | undefined;
    const r = await measureLag(env, `lagw-${++n}`, async (ns) => (sys = await start(ns)), { pool: 50, rate: 20, seconds: 60 });
    console.log(`${label}: p50 ${r.p50} p95 ${r.p95} p99 ${r.p99} lost ${r.lost}/${r.updates} records ${sys?.reconciles()}`);
  }
} finally {
  await env.stop();
}
