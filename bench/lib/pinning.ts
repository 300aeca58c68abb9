/**
 * A fair split of the machine's CPUs between the control plane and the operator side (issue 33):
 * with pinning on, etcd, kube-apiserver, kube-controller-manager and the simulated kubelet run on
 * one CPU and the operator side (the bench process — the load generator, the tracker and, for
 * Operless, the embedded queue, the local Lambda runner, the functions and the in-process
 * forwarder — and every process it spawns later: controller-runtime's operator, the forwarder's
 * own process) on the other, so neither system's own work can take the API server's CPU.
 *
 * How: `taskset -a -p -c` (every thread of a process). The bench process pins itself to the
 * control plane's CPU while it starts the control plane, so its children inherit that CPU from
 * their first instruction (Go reads its CPU count at start), then moves itself to the operator's
 * CPU; a component started again later (the controller manager after a pause) is pinned again.
 * Guarantees: `verifyPins` reads back `Cpus_allowed_list` of every thread of every process and
 * says which do not match, so a run's output shows the split it measured; without `taskset`
 * pinning fails with a message saying so, never silently unpinned.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';

export type Pinning = 'pinned' | 'unpinned';
export const PINNINGS: readonly Pinning[] = ['pinned', 'unpinned'];

/** The CPU lists of the two sides when pinned. */
export const CONTROL_PLANE_CPUS = '0';
export const OPERATOR_CPUS = '1';

/** Every CPU of the machine as a list ("0,1" on two): what an unpinned process may use. */
export function allCpus(): string {
  return Array.from({ length: cpus().length }, (_, i) => i).join(',');
}

/** "0-2,5" → [0, 1, 2, 5] (sorted, distinct); throws on anything else. Pure. */
export function parseCpuList(text: string): number[] {
  const cpus = new Set<number>();
  for (const part of text.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`not a CPU list: "${text}"`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from) throw new Error(`not a CPU list: "${text}" (range ${part} runs backwards)`);
    for (let c = from; c <= to; c++) cpus.add(c);
  }
  return [...cpus].sort((a, b) => a - b);
}

/** `Cpus_allowed_list` of a `/proc/<pid>/status` text, or undefined. Pure. */
export function cpusAllowedOf(status: string): string | undefined {
  return /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1];
}

/**
 * One process's threads' allowed CPUs folded into one list: the list when every thread agrees,
 * else every distinct list joined by " | " (a thread left unpinned shows). Pure.
 */
export function foldThreadCpus(lists: readonly string[]): string {
  const distinct = [...new Set(lists.map((l) => parseCpuList(l).join(',')))];
  return distinct.length === 0 ? '?' : distinct.join(' | ');
}

/** The allowed CPUs of every thread of `pid`, folded (foldThreadCpus); undefined for a process that is gone. */
export function threadCpus(pid: number): string | undefined {
  try {
    const lists = readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
      try {
        const list = cpusAllowedOf(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'));
        return list ? [list] : [];
      } catch {
        return []; // the thread ended meanwhile
      }
    });
    return foldThreadCpus(lists);
  } catch {
    return undefined;
  }
}

let tasksetChecked = false;

/** Pins every thread of `pid` to `cpus` (taskset -a -p -c). */
export function pinProcess(pid: number, cpus: string): void {
  if (!tasksetChecked) {
    try {
      execFileSync('taskset', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error('pinning needs taskset (util-linux: apt-get install -y util-linux); run with --pinning unpinned to measure without it');
    }
    tasksetChecked = true;
  }
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** A process of the benchmark and the CPUs it should run on when pinned. */
export interface PinnedProcess {
  readonly name: string;
  readonly pid: number;
  readonly cpus: string;
}

/** What `verifyPins` read back: each process's allowed CPUs (every thread), and whether it matches. */
export interface PinReport {
  readonly name: string;
  readonly pid: number;
  readonly allowed: string;
  readonly want?: string;
  readonly ok: boolean;
}

/**
 * Reads back the allowed CPUs of each process; with `pinning` pinned, each must equal its own
 * `cpus`; unpinned, whatever they are is reported (ok). Pure but for the /proc reads.
 */
export function verifyPins(processes: readonly PinnedProcess[], pinning: Pinning): PinReport[] {
  return processes.map((p) => {
    const allowed = threadCpus(p.pid) ?? 'gone';
    if (pinning === 'unpinned') return { name: p.name, pid: p.pid, allowed, ok: true };
    return { name: p.name, pid: p.pid, allowed, want: p.cpus, ok: allowed === parseCpuList(p.cpus).join(',') };
  });
}

/** "etcd 0, kube-apiserver 0, … bench process 1" for the run's log. Pure. */
export function describePins(reports: readonly PinReport[]): string {
  return reports.map((r) => `${r.name} (pid ${r.pid}) CPUs ${r.allowed}${r.ok ? '' : ` — expected ${r.want}`}`).join('; ');
}

/** The process named `comm` whose command line mentions `marker` (a control plane's data dir), or undefined. */
export function findProcess(comm: string, marker: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The kernel keeps the first 15 characters of a name (kube-controller-manager → kube-controller).
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== comm.slice(0, 15)) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) return Number(entry);
    } catch {
      // exited meanwhile
    }
  }
  return undefined;
}
