/**
 * What the kernel says about a process of the benchmark (Linux `/proc`): its resident memory
 * (VmRSS, split into private RssAnon and file-backed RssFile, and the peak VmHWM), the CPU
 * seconds it used so far (user + system), a median of memory samples, and a bounded stop.
 * Readers return undefined / NaN for a process that is gone, never throw.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { median } from './stats.ts';

/** Memory of a process, MiB. */
export interface ProcessMemory {
  readonly rss: number;
  readonly anon: number;
  readonly file: number;
  /** Peak VmRSS over the process's life (VmHWM). */
  readonly peak: number;
}

/** The memory fields of a `/proc/<pid>/status` text, MiB (NaN when absent). Pure. */
export function parseStatusMemory(status: string): ProcessMemory {
  const mib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
  return { rss: mib('VmRSS'), anon: mib('RssAnon'), file: mib('RssFile'), peak: mib('VmHWM') };
}

export function processMemory(pid: number): ProcessMemory | undefined {
  try {
    return parseStatusMemory(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** utime + stime of a `/proc/<pid>/stat` line, in seconds (USER_HZ = 100). Pure. */
export function parseStatCpuSeconds(stat: string): number {
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function processCpuSeconds(pid: number): number {
  try {
    return parseStatCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return Number.NaN;
  }
}

/** The median of `count` memory samples `intervalMs` apart (peak: as it stands at the end). */
export async function sampleMemory(pid: number, count: number, intervalMs: number): Promise<ProcessMemory> {
  const samples: ProcessMemory[] = [];
  for (let i = 0; i < count; i++) {
    const m = processMemory(pid);
    if (m) samples.push(m);
    await sleep(intervalMs);
  }
  const last = processMemory(pid);
  if (!last || samples.length === 0) throw new Error(`process ${pid} exited while its memory was sampled`);
  const of = (k: keyof ProcessMemory) => median(samples.map((s) => s[k]));
  return { rss: of('rss'), anon: of('anon'), file: of('file'), peak: last.peak };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process exited. */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
