// Ad-hoc: how long one reconcile takes in each system under the same lag load (POOL objects,
// RATE updates/s for SECONDS, each system on a fresh control plane): the baseline's reconcile
// durations against the Operless handler's per record (BATCH 1 by default, so one record per
// invocation and the handler time is one reconcile's).
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { busyShare, cpuSnapshot } from '../lib/machine.ts';
import { startBenchEnv, startBaseline, startOperless, type BenchEnv, type SystemUnderTest } from '../lib/systems.ts';
import { requestDelta, type RequestCounts } from '../lib/apiserver-metrics.ts';
import { measureLag } from '../scenarios/lag.ts';

const load = { pool: Number(process.env.POOL ?? 50), rate: Number(process.env.RATE ?? 20), seconds: Number(process.env.SECONDS ?? 60) };
const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

// Every HTTP request of this process to the API server (both systems' reconciles), timed from
// its start to the end of its response.
const started = new WeakMap<ClientRequest, number>();
let requestMs: number[] = [];
let apiHost = '';
subscribe('http.client.request.start', (m) => started.set((m as { request: ClientRequest }).request, performance.now()));
subscribe('http.client.response.finish', (m) => {
  const { request } = m as { request: ClientRequest };
  const t = started.get(request);
  if (t !== undefined && request.getHeader('host') === apiHost && !request.path.includes('watch=true')) requestMs.push(performance.now() - t);
});
async function once(
  label: string,
  start: (env: BenchEnv, namespace: string, durations: number[]) => Promise<SystemUnderTest> | SystemUnderTest,
): Promise<void> {
  const env = await startBenchEnv();
  const durations: number[] = [];
  apiHost = new URL(env.cp.server).host;
  try {
    let machine = cpuSnapshot();
    const loop = monitorEventLoopDelay({ resolution: 10 });
    let cpu = process.cpuUsage();
    let t = Date.now();
    let before: Promise<RequestCounts> | undefined;
    const r = await measureLag(env, 'rt', (namespace) => start(env, namespace, durations), {
      ...load,
      // The first sample marks the start of the update stream: measure the process from there.
      onSample: () => {
        if (!loop.count) {
          loop.enable();
          cpu = process.cpuUsage();
          t = Date.now();
          before = env.apiRequests();
          machine = cpuSnapshot();
          requestMs = [];
        }
      },
    });
    const requests = requestDelta(await before!, await env.apiRequests());
    loop.disable();
    const used = process.cpuUsage(cpu);
    const machineBusy = busyShare(machine, cpuSnapshot()) ?? Number.NaN;
    console.log(
      `${label}: lag p50 ${r.p50} p99 ${r.p99}; ${r.reconciles} reconciles (${(r.reconciles / r.updates).toFixed(2)}/update); reconcile ms p50 ${q(durations, 50)} p90 ${q(durations, 90)} p99 ${q(durations, 99)} (n ${durations.length})`,
    );
    const per = Object.entries(requests)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([k, v]) => `${k} ${(v / r.updates).toFixed(2)}`);
    console.log(`  API requests per update (whole cluster): ${(Object.values(requests).reduce((a, b) => a + b, 0) / r.updates).toFixed(2)}: ${per.join(', ')}`);
    console.log(
      `  machine busy ${(machineBusy * 100).toFixed(0)} %; API request ms (this process, not watches) p50 ${q(requestMs, 50)?.toFixed(1)} p90 ${q(requestMs, 90)?.toFixed(1)} p99 ${q(requestMs, 99)?.toFixed(1)} (n ${requestMs.length})`,
    );
    console.log(
      `  bench process: ${(((used.user + used.system) / 1000 / (Date.now() - t)) * 100).toFixed(0)} % of a core; event-loop delay p50 ${(loop.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`,
    );
  } finally {
    await env.stop();
  }
}

await once('baseline', (env, namespace, d) => startBaseline(env, { namespace, workers: 10, onReconcile: (x) => d.push(x.durationMs) }));
await once('Operless', (env, namespace, d) =>
  startOperless(env, {
    namespace,
    maxConcurrency: 10,
    keysPerInvocation: 1,
    batchSize: Number(process.env.BATCH ?? 1),
    observe: (event, startedAt, doneAt) => {
      if (event.Records.length === 1) d.push(doneAt - startedAt);
    },
  }),
);
