// Ad-hoc: how long a read "not older than resourceVersion R" waits in the API server's watch
// cache, per kind, under a steady trickle of writes to one kind (issue 21: the reverted
// watch-cache reads, docs/benchmarks.md). RATE writes per second (default 10) for SECONDS
// (default 30) change the spec of one of N Memcacheds (each with its Deployment, pods by the
// controller manager and the simulated kubelet); right after each write, with its
// resourceVersion R, five reads run side by side: GET the Memcached at R (the written kind),
// GET its Deployment at R (another kind, quiet), LIST its pods at R (NotOlderThan), GET the
// Deployment at resourceVersion=0 (cache, any age) and GET it live (quorum). Prints each read's
// latency percentiles and the API server's watch-cache wait metrics before and after.
//
//   RATE=10 SECONDS=30 N=50 node bench/experiments/bounded-read-wait.ts
import { scrapeMetrics } from '../lib/apiserver-metrics.ts';
import { createMemcachedsWithDeployments, sleep } from '../lib/objects.ts';
import { percentile } from '../lib/stats.ts';
import { MEMCACHED_KIND, startBenchEnv } from '../lib/systems.ts';

const N = Number(process.env.N ?? 50);
const RATE = Number(process.env.RATE ?? 10);
const SECONDS = Number(process.env.SECONDS ?? 30);

const env = await startBenchEnv();
const metrics = async () =>
  (await scrapeMetrics(env.cp.server, env.cp.admin.token!, env.cp.caPem))
    .split('\n')
    .filter(
      (l) => /^apiserver_watch_cache_(read_wait|consistent_read|resource_version|events_received_total)|^etcd_bookmark/.test(l) && !l.includes('_bucket'),
    );
try {
  const ns = await env.namespace('waits');
  await createMemcachedsWithDeployments(env.admin, ns, 0, N);
  await sleep(5000);
  const before = await metrics();
  const name = (i: number) => `mc-${String(i % N).padStart(6, '0')}`;
  const mcPath = (n: string) => `/apis/${MEMCACHED_KIND.apiVersion}/namespaces/${ns}/${MEMCACHED_KIND.plural}/${n}`;
  const deployPath = (n: string) => `/apis/apps/v1/namespaces/${ns}/deployments/${n}`;
  const latencies = new Map<string, number[]>();
  const failures = new Map<string, number>();
  const timed = async (label: string, read: () => Promise<unknown>) => {
    const t0 = performance.now();
    try {
      await read();
      (latencies.get(label) ?? latencies.set(label, []).get(label)!).push(performance.now() - t0);
    } catch (err) {
      failures.set(label, (failures.get(label) ?? 0) + 1);
      if ((failures.get(label) ?? 0) <= 3) console.log(`${label}: ${(err as Error).message}`);
    }
  };
  const pending: Promise<unknown>[] = [];
  const t0 = Date.now();
  for (let i = 0; i < RATE * SECONDS; i++) {
    await sleep(Math.max(0, t0 + (i * 1000) / RATE - Date.now()));
    const n = name(i);
    pending.push(
      (async () => {
        const res = await env.admin.transport.request({
          method: 'PATCH',
          path: mcPath(n),
          contentType: 'application/merge-patch+json',
          body: { spec: { size: 1 + (i % 3) } },
        });
        const rv = (res.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
        const t = env.admin.transport;
        await Promise.all([
          timed('GET Memcached rv=R (written kind)', () => t.request({ method: 'GET', path: mcPath(n), query: { resourceVersion: rv } })),
          timed('GET Deployment rv=R (other kind)', () => t.request({ method: 'GET', path: deployPath(n), query: { resourceVersion: rv } })),
          timed('LIST pods rv=R NotOlderThan', () =>
            t.request({
              method: 'GET',
              path: `/api/v1/namespaces/${ns}/pods`,
              query: { labelSelector: `app.kubernetes.io/instance=${n}`, resourceVersion: rv, resourceVersionMatch: 'NotOlderThan' },
            }),
          ),
          timed('GET Deployment rv=0 (any age)', () => t.request({ method: 'GET', path: deployPath(n), query: { resourceVersion: '0' } })),
          timed('GET Deployment live (quorum)', () => t.request({ method: 'GET', path: deployPath(n) })),
        ]);
      })(),
    );
  }
  await Promise.all(pending);
  for (const [label, v] of latencies) {
    console.log(
      `${label.padEnd(36)} n=${v.length} p50 ${percentile(v, 50).toFixed(1)} p95 ${percentile(v, 95).toFixed(1)} p99 ${percentile(v, 99).toFixed(1)} max ${Math.max(...v).toFixed(1)} ms; failed ${failures.get(label) ?? 0}`,
    );
  }
  const after = await metrics();
  console.log('--- watch cache metrics before ---');
  for (const l of before) if (!after.includes(l)) console.log(l);
  console.log('--- after ---');
  for (const l of after) if (!before.includes(l)) console.log(l);
} finally {
  await env.stop();
}
