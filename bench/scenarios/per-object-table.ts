/**
 * The per-object cost as markdown (the first table of a run's report, README and
 * docs/benchmarks.md) and the targets of issue 33 judged on it. Pure.
 */
import { round } from '../lib/stats.ts';
import type { PerObjectResult, PerObjectRow } from './per-object.ts';
import { workloadName } from './per-object.ts';

const num = (x: number | undefined, digits = 2) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x >= 100 ? String(Math.round(x)) : x.toFixed(digits));

/** The controller-runtime row of the same split, workload and size as `row`, if any. */
export function anchorOf(rows: readonly PerObjectRow[], row: PerObjectRow): PerObjectRow | undefined {
  return rows.find((x) => x.system.startsWith('controller-runtime') && x.pinning === row.pinning && x.workload === row.workload && x.size === row.size);
}

/** `a ÷ b` as "1.23×", or n/a. Pure. */
export function ratio(a: number | undefined, b: number | undefined): string {
  return a !== undefined && b !== undefined && Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${round(a / b)}×` : 'n/a';
}

/** The requests of a row per object, biggest first, as "GET memcacheds 1.00, …" (at most `top`). Pure. */
export function requestsPerObject(row: PerObjectRow, top = 8): string {
  const entries = Object.entries(row.cluster.byRequest)
    .map(([key, n]) => [key, n / Math.max(1, row.objects)] as const)
    .sort((a, b) => b[1] - a[1]);
  const shown = entries.slice(0, top).map(([key, v]) => `${key} ${num(v)}`);
  return entries.length > top ? `${shown.join(', ')}, … (${entries.length - top} more)` : shown.join(', ');
}

export function perObjectTable(p: PerObjectResult): string[] {
  const out: string[] = [];
  out.push('### Cost to the cluster per converged object (pinned: control plane on CPU 0, operator side on CPU 1)');
  out.push('');
  out.push(
    '| split | workload | system | API server CPU-ms / object | × controller-runtime | etcd CPU-ms / object | requests / object | requests / reconcile | reconciles / object | wall s | lag p50 / p99 ms | load avg 1 min |',
  );
  out.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const row of p.rows) {
    const anchor = anchorOf(p.rows, row);
    out.push(
      `| ${row.pinning} | ${workloadName(row.workload, row.size)} | ${row.system} | ${num(row.perObject.apiServerCpuMs)} | ${row === anchor ? '1×' : ratio(row.perObject.apiServerCpuMs, anchor?.perObject.apiServerCpuMs)} | ${num(row.perObject.etcdCpuMs)} | ${num(row.perObject.requests)} | ${num(row.perReconcile.requests)} | ${num(row.reconciles / Math.max(1, row.objects))} | ${num(row.seconds, 1)} | ${row.lag ? `${row.lag.p50} / ${row.lag.p99}` : '—'} | ${num(row.cluster.loadavg[0])} |`,
    );
  }
  out.push('');
  for (const why of p.failed ?? []) out.push(`Did not complete: ${why}.`, '');
  out.push(
    "Whole cluster (the controller manager and the simulated kubelet count too; the no-op resync stops both), watches and non-resource requests left out. CPU: the API server's and etcd's own processes (`/proc/<pid>/stat`). The machine may be shared: the load average says how busy it was; wall-clock figures move with it, CPU per object and requests much less.",
  );
  out.push('');
  out.push('Requests per object by verb and resource:');
  out.push('');
  for (const row of p.rows) out.push(`- ${row.pinning}, ${workloadName(row.workload, row.size)}, ${row.system}: ${requestsPerObject(row)}`);
  out.push('');
  const splits = [...new Set(p.rows.map((r) => r.pinning))];
  for (const split of splits) {
    const seen = new Map<string, string>();
    for (const row of p.rows.filter((r) => r.pinning === split))
      for (const pin of row.pins) if (!seen.has(pin.name)) seen.set(pin.name, `${pin.allowed}${pin.ok ? '' : ` (expected ${pin.want})`}`);
    out.push(
      `CPUs allowed (every thread, read back from /proc/<pid>/task/*/status), ${split}: ${[...seen].map(([name, cpus]) => `${name} ${cpus}`).join(', ')}.`,
    );
  }
  out.push('');
  return out;
}

/** Issue 33's targets, judged on the pinned rows. */
export function perObjectTargets(p: PerObjectResult): { figure: string; target: string; measured: string; met?: boolean }[] {
  const t: { figure: string; target: string; measured: string; met?: boolean }[] = [];
  const pinned = p.rows.filter((r) => r.pinning === 'pinned' && r.system.startsWith('Operless'));
  for (const row of pinned) {
    const anchor = anchorOf(p.rows, row);
    if (!anchor) continue;
    if (row.workload === 'convergence') {
      const a = row.perObject.apiServerCpuMs;
      const b = anchor.perObject.apiServerCpuMs;
      t.push({
        figure: `API server CPU per converged object, convergence N = ${row.size}, pinned`,
        target: '≤ 1.0× controller-runtime',
        measured: `${ratio(a, b)} (${num(a)} against ${num(b)} CPU-ms)`,
        met: a / b <= 1.0,
      });
      if (row.size === 1000)
        t.push({
          figure: 'convergence of 1000 new objects, pinned, wall clock',
          target: '≤ 1.0× controller-runtime',
          measured: `${ratio(row.seconds, anchor.seconds)} (${num(row.seconds, 1)} against ${num(anchor.seconds, 1)} s)`,
          met: row.seconds / anchor.seconds <= 1.0,
        });
    }
    if (row.workload === 'steady' && row.lag && anchor.lag && row.size === 20) {
      t.push({
        figure: 'lag at 20 updates/s, pinned',
        target: 'p50 and p99 no worse than controller-runtime',
        measured: `p50 ${row.lag.p50} against ${anchor.lag.p50} ms, p99 ${row.lag.p99} against ${anchor.lag.p99} ms`,
        met: row.lag.p50 <= anchor.lag.p50 && row.lag.p99 <= anchor.lag.p99,
      });
    }
  }
  return t;
}
