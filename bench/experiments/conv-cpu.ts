// Ad-hoc: where the machine's CPU goes during a convergence of N (default 1000) Memcacheds,
// baseline, controller-runtime itself (the Go operator, 10 workers) and Operless (10 × 1, batch
// 10), each on a fresh control plane: wall time,
// reconciles, and CPU seconds per process (kube-apiserver, etcd, kube-controller-manager, this
// bench process — which hosts the system under test, and for Operless also the embedded queue,
// the counting proxy and the Lambda runner; controller-runtime runs as its own process) from
// /proc, with the machine's busy share, and the API server's requests by verb and resource. ONLY=baseline|controller-runtime|operless (comma-separated).
import { readFileSync } from 'node:fs';
import { requestDelta } from '../lib/apiserver-metrics.ts';
import { startControllerRuntime } from '../lib/controller-runtime.ts';
import { busyShare, cpuSnapshot, processCpuSnapshot } from '../lib/machine.ts';
import { startBenchEnv, startBaseline, startOperless, type BenchEnv, type SystemUnderTest } from '../lib/systems.ts';
import { measureConvergence } from '../scenarios/convergence.ts';

const N = Number(process.env.N ?? 1000);
const TICK = 100; // USER_HZ

/** CPU seconds of one process so far (utime + stime), undefined when gone. */
function cpuOfPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICK;
  } catch {
    return undefined;
  }
}

/** The system with its own process's CPU seconds read just before it stops (it exits then). */
function withOwnCpu(system: SystemUnderTest & { readonly pid?: number }, into: { seconds?: number }): SystemUnderTest {
  const pid = system.pid;
  if (pid === undefined) return system;
  return {
    ...system,
    stop: async () => {
      into.seconds = cpuOfPid(pid);
      await system.stop();
    },
  };
}

async function once(label: string, start: (env: BenchEnv, namespace: string) => Promise<SystemUnderTest> | SystemUnderTest): Promise<void> {
  const env = await startBenchEnv();
  try {
    const requestsBefore = await env.apiRequests();
    const before = processCpuSnapshot()?.seconds ?? new Map<string, number>();
    const m0 = cpuSnapshot();
    const t0 = Date.now();
    const own: { seconds?: number } = {};
    const r = await measureConvergence(env, 'cpu', async (ns) => withOwnCpu(await start(env, ns), own), N, 1, 900_000);
    const seconds = (Date.now() - t0) / 1000;
    const after = processCpuSnapshot()?.seconds ?? new Map<string, number>();
    const requests = requestDelta(requestsBefore, await env.apiRequests());
    const m1 = cpuSnapshot();
    const rows = [...after]
      .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
      .filter(([, v]) => v >= 0.5)
      .sort((a, b) => b[1] - a[1]);
    console.log(
      `${label}: converged in ${r.seconds.toFixed(1)} s, ${r.reconciles} reconciles; machine busy ${((busyShare(m0, m1) ?? Number.NaN) * 100).toFixed(0)} % over ${seconds.toFixed(0)} s`,
    );
    console.log(
      `  CPU seconds: ${rows.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}${own.seconds !== undefined ? `, the system's own process ${own.seconds.toFixed(1)}` : ''}`,
    );
    const top = Object.entries(requests).sort((a, b) => b[1] - a[1]);
    console.log(
      `  API requests (whole cluster, no WATCH): ${top.reduce((a, [, v]) => a + v, 0)}; ${top
        .slice(0, 12)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
  } finally {
    await env.stop();
  }
}

const only = (process.env.ONLY ?? 'baseline,controller-runtime,operless').split(',');
if (only.includes('baseline')) await once('baseline', (env, namespace) => startBaseline(env, { namespace, workers: 10 }));
if (only.includes('controller-runtime')) await once('controller-runtime', (env, namespace) => startControllerRuntime(env, { namespace, workers: 10 }));
if (only.includes('operless')) await once('Operless', (env, namespace) => startOperless(env, { namespace, maxConcurrency: 10, keysPerInvocation: 1 }));
