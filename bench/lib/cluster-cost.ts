/**
 * What a run cost the cluster (issue 33): kube-apiserver's and etcd's CPU seconds (user + system
 * of their own processes, `/proc/<pid>/stat`, found by the control plane's data dir — not every
 * process of that name, since other control planes may share the machine) and the API server's
 * requests by `VERB resource` (`apiserver_request_total`, watches and non-resource requests
 * such as /metrics scrapes left out), between two snapshots; and the same divided by the objects
 * that converged and by the reconciles that ran. With each cost the machine's load average, since
 * a run on a shared machine may have neighbours. Pure but for `clusterSnapshot`.
 */
import { loadavg } from 'node:os';
import type { RequestCounts } from './apiserver-metrics.ts';
import { requestDelta } from './apiserver-metrics.ts';

export interface ClusterSnapshot {
  readonly at: number;
  readonly requests: RequestCounts;
  readonly apiServerCpuSeconds: number;
  readonly etcdCpuSeconds: number;
}

export interface ClusterCost {
  readonly seconds: number;
  readonly apiServerCpuSeconds: number;
  readonly etcdCpuSeconds: number;
  /** Requests answered (no watches, no non-resource requests). */
  readonly requests: number;
  /** The same by `VERB resource[/subresource]`. */
  readonly byRequest: Readonly<Record<string, number>>;
  /** The machine's 1-, 5- and 15-minute load averages when the window ended. */
  readonly loadavg: readonly [number, number, number];
}

/** A cost divided by a count (objects converged, reconciles): CPU in ms, requests. */
export interface PerUnit {
  readonly apiServerCpuMs: number;
  readonly etcdCpuMs: number;
  readonly requests: number;
}

/** The cost between two snapshots. Pure. */
export function clusterCost(before: ClusterSnapshot, after: ClusterSnapshot, load: readonly number[]): ClusterCost {
  const byRequest = requestDelta(before.requests, after.requests);
  // Non-resource requests (`GET ` — /metrics, /healthz, /readyz) are the harness's and the
  // components' probes, not work on objects.
  for (const key of Object.keys(byRequest)) if (key.endsWith(' ')) delete byRequest[key];
  return {
    seconds: (after.at - before.at) / 1000,
    apiServerCpuSeconds: after.apiServerCpuSeconds - before.apiServerCpuSeconds,
    etcdCpuSeconds: after.etcdCpuSeconds - before.etcdCpuSeconds,
    requests: Object.values(byRequest).reduce((a, b) => a + b, 0),
    byRequest,
    loadavg: [load[0] ?? Number.NaN, load[1] ?? Number.NaN, load[2] ?? Number.NaN],
  };
}

/** `cost` divided by `count` (NaN for a count of 0). Pure. */
export function perUnit(cost: Pick<ClusterCost, 'apiServerCpuSeconds' | 'etcdCpuSeconds' | 'requests'>, count: number): PerUnit {
  if (!(count > 0)) return { apiServerCpuMs: Number.NaN, etcdCpuMs: Number.NaN, requests: Number.NaN };
  return { apiServerCpuMs: (cost.apiServerCpuSeconds * 1000) / count, etcdCpuMs: (cost.etcdCpuSeconds * 1000) / count, requests: cost.requests / count };
}

/** The end of a window: its cost, with the machine's load now. */
export function costSince(before: ClusterSnapshot, after: ClusterSnapshot): ClusterCost {
  return clusterCost(before, after, loadavg());
}
