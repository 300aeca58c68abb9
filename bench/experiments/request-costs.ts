// Ad-hoc: what a reconcile's requests cost the API server and etcd (CPU-ms per request, from
// /proc): reads three ways — a quorum GET (no resourceVersion: etcd), a GET not older than a
// known resourceVersion (served from the API server's watch cache once it has that revision),
// GET resourceVersion=0 — a label-selected LIST of pods (what the Memcached reconcile does when
// the Deployment moved) with and without resourceVersion=0, and a status write three ways
// (server-side apply, JSON merge patch, PUT), each changing the status.
// N Memcacheds (default 1000) and N pods in one namespace; K requests (default 10000), 10 at a time.
import { PODS } from '../../src/kube/kinds.ts';
import { MEMCACHED } from '../../src/memcached/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BENCH_PROCESS, processCpuSnapshot } from '../lib/machine.ts';
import { startBenchEnv } from '../lib/systems.ts';

const N = Number(process.env.N ?? 1000);
const K = Number(process.env.K ?? 10000);
const ONLY = process.env.ONLY?.split(',');

async function eachBounded<T>(items: readonly T[], parallel: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

const env = await startBenchEnv();
try {
  const ns = await env.namespace('cachebench');
  const names = Array.from({ length: N }, (_, i) => `mc-${i}`);
  const rvs = new Map<string, string>();
  await eachBounded(names, 10, async (name) => {
    const o = await env.admin.create(MEMCACHED, {
      apiVersion: MEMCACHED.apiVersion,
      kind: MEMCACHED.kind,
      metadata: { name, namespace: ns },
      spec: { size: 1 },
    });
    rvs.set(name, o.metadata.resourceVersion ?? '');
    await env.admin.create(PODS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${name}-pod`, namespace: ns, labels: { app: 'memcached', memcached_cr: name } },
      spec: { containers: [{ name: 'c', image: 'memcached' }] },
    });
  });
  const path = (name: string) => `/apis/${MEMCACHED.apiVersion}/namespaces/${ns}/${MEMCACHED.plural}/${name}`;
  const variants: Record<string, (i: number) => Promise<unknown>> = {
    'GET quorum (etcd)': (i) => env.admin.transport.request({ method: 'GET', path: path(names[i % N] as string) }),
    'GET resourceVersion=<rv> (cache, not older)': (i) => {
      const n = names[i % N] as string;
      return env.admin.transport.request({ method: 'GET', path: path(n), query: { resourceVersion: rvs.get(n) } });
    },
    'GET resourceVersion=0 (cache, any)': (i) =>
      env.admin.transport.request({ method: 'GET', path: path(names[i % N] as string), query: { resourceVersion: '0' } }),
    'LIST pods by label (consistent)': (i) =>
      env.admin.transport.request({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/pods`,
        query: { labelSelector: `app=memcached,memcached_cr=${names[i % N]}` },
      }),
    'LIST pods by label resourceVersion=0': (i) =>
      env.admin.transport.request({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/pods`,
        query: { labelSelector: `app=memcached,memcached_cr=${names[i % N]}`, resourceVersion: '0' },
      }),
  };
  /** Status PUTs the API server refused, by HTTP status: printed beside the figure, which counts them as requests. */
  const putFailures = new Map<string, number>();
  const statusPath = (name: string) => `${path(name)}/status`;
  const live = async (name: string) => (await env.admin.transport.request({ method: 'GET', path: path(name) })).body as KubeObject;
  variants['status server-side apply (force)'] = (i) => {
    const n = names[i % N] as string;
    return env.admin.transport.request({
      method: 'PATCH',
      path: statusPath(n),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'bench', force: true },
      body: {
        apiVersion: MEMCACHED.apiVersion,
        kind: MEMCACHED.kind,
        metadata: { name: n, namespace: ns },
        status: {
          readyReplicas: i,
          conditions: [{ type: 'Available', status: 'True', reason: 'R', message: `m${i}`, lastTransitionTime: '2026-01-01T00:00:00Z' }],
        },
      },
    });
  };
  variants['status JSON merge patch'] = (i) => {
    const n = names[i % N] as string;
    return env.admin.transport.request({
      method: 'PATCH',
      path: statusPath(n),
      contentType: 'application/merge-patch+json',
      body: {
        status: {
          readyReplicas: i + 1,
          conditions: [{ type: 'Available', status: 'True', reason: 'R', message: `m${i + 1}`, lastTransitionTime: '2026-01-01T00:00:00Z' }],
        },
      },
    });
  };
  variants['status PUT (after a GET, not counted apart)'] = async (i) => {
    const n = names[i % N] as string;
    const o = await live(n);
    return env.admin.transport
      .request({
        method: 'PUT',
        path: statusPath(n),
        body: {
          ...o,
          status: {
            readyReplicas: i + 2,
            conditions: [{ type: 'Available', status: 'True', reason: 'R', message: `m${i + 2}`, lastTransitionTime: '2026-01-01T00:00:00Z' }],
          },
        },
      })
      .catch((err: unknown) => {
        // Counted, not thrown: a PUT that lost a race is a request the API server still served.
        putFailures.set(String((err as { status?: unknown }).status ?? err), (putFailures.get(String((err as { status?: unknown }).status ?? err)) ?? 0) + 1);
      });
  };
  for (const round of [1, 2]) {
    for (const [label, read] of Object.entries(variants).filter(([l]) => !ONLY || ONLY.some((o) => l.includes(o)))) {
      const before = processCpuSnapshot()?.seconds ?? new Map<string, number>();
      const t0 = Date.now();
      await eachBounded(
        Array.from({ length: K }, (_, i) => i),
        10,
        async (i) => {
          await read(i);
        },
      );
      const ms = Date.now() - t0;
      const after = processCpuSnapshot()?.seconds ?? new Map<string, number>();
      const d = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
      console.log(
        `round ${round} ${label}: ${K} requests in ${(ms / 1000).toFixed(1)} s; CPU-ms per read: kube-apiserver ${((d('kube-apiserver') * 1000) / K).toFixed(3)}, etcd ${((d('etcd') * 1000) / K).toFixed(3)}, this process ${((d(BENCH_PROCESS) * 1000) / K).toFixed(3)}` +
          (label.startsWith('status PUT') && putFailures.size > 0 ? `; refused: ${[...putFailures].map(([k, v]) => `${v} × ${k}`).join(', ')}` : ''),
      );
      putFailures.clear();
    }
  }
} finally {
  await env.stop();
}
