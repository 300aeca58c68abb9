/**
 * How busy the whole machine's CPUs were between two snapshots (`/proc/stat`), to tell a run
 * that measured the systems from one that measured a saturated machine, and which processes
 * kept it busy (`/proc/<pid>/stat`, summed by process name; the bench's own process — which
 * hosts Operless's stand-ins for SQS and Lambda — under its own label). Linux only: elsewhere
 * the snapshots are undefined and so are the shares.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface CpuSnapshot {
  readonly busy: number;
  readonly total: number;
}

export function cpuSnapshot(): CpuSnapshot | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((a, b) => a + b, 0);
    return { busy: total - fields[3]! - (fields[4] ?? 0), total };
  } catch {
    return undefined;
  }
}

/** Busy share (0..1) of all CPUs between two snapshots; undefined without both. Pure. */
export function busyShare(before: CpuSnapshot | undefined, after: CpuSnapshot | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  return (after.busy - before.busy) / (after.total - before.total);
}

/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** The label of the bench process itself in `processCpu`. */
export const BENCH_PROCESS = "bench process (Operless's stand-ins for SQS and Lambda, when it runs)";

/** The kernel's worker threads (`kworker/…`, named by their current work) under one label. */
export const KERNEL_WORKERS = 'kernel workers';

export interface ProcessCpuSnapshot {
  readonly at: number;
  /** CPU seconds (user + system) so far, by process name. */
  readonly seconds: ReadonlyMap<string, number>;
}

/** CPU seconds of every process so far, summed by name; undefined without /proc. */
export function processCpuSnapshot(): ProcessCpuSnapshot | undefined {
  const seconds = new Map<string, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const name = Number(pid) === process.pid ? BENCH_PROCESS : comm.startsWith('kworker/') ? KERNEL_WORKERS : comm;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      seconds.set(name, (seconds.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND);
    } catch {
      // exited meanwhile
    }
  }
  return { at: Date.now(), seconds };
}

/**
 * Cores each process kept busy between two snapshots (CPU seconds ÷ wall seconds; 1 = one
 * core, to 0.001), those that used any CPU and at least `min` cores, busiest first. A process
 * that exited in between is left out. Pure.
 */
export function processCpuShares(before: ProcessCpuSnapshot | undefined, after: ProcessCpuSnapshot | undefined, min = 0.05): Record<string, number> {
  if (!before || !after || after.at <= before.at) return {};
  const wall = (after.at - before.at) / 1000;
  const rows = [...after.seconds]
    .map(([name, s]) => [name, (s - (before.seconds.get(name) ?? 0)) / wall] as const)
    .filter(([, cores]) => cores > 0 && cores >= min);
  rows.sort((a, b) => b[1] - a[1]);
  return Object.fromEntries(rows.map(([name, cores]) => [name, Math.round(cores * 1000) / 1000]));
}

/** The processes a report shows: those that kept at least `min` cores busy (default 0.05), in the given order. Pure. */
export function busyProcesses(cores: Readonly<Record<string, number>> | undefined, min = 0.05): [string, number][] {
  return Object.entries(cores ?? {}).filter(([, c]) => c >= min);
}
