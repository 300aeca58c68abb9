// Ad-hoc: does the order (baseline first in the same control plane) change the lag?
import { startBaseline, startBenchEnv, startOperless } from '../lib/systems.ts';
import { measureLag } from '../scenarios/lag.ts';

const env = await startBenchEnv();
let n = 0;
const op = (ns: string) => startOperless(env, { namespace: ns, maxConcurrency: 10, keysPerInvocation: 1 });
const bl = (ns: string) => startBaseline(env, { namespace: ns, workers: 10 });
try {
  for (const [label, start] of [
    ['operless', op],
    ['baseline', bl],
    ['operless', op],
    ['baseline', bl],
  ] as const) {
    const r = await measureLag(env, `lago-${++n}`, start, { pool: 50, rate: 20, seconds: 60 });
    console.log(`${label}: p50 ${r.p50} p95 ${r.p95} p99 ${r.p99} lost ${r.lost}/${r.updates}`);
  }
} finally {
  await env.stop();
}
