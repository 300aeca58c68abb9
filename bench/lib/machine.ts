/**
 * How busy the whole machine's CPUs were between two snapshots (`/proc/stat`), to tell a run
 * that measured the systems from one that measured a saturated machine. Linux only: elsewhere
 * the snapshot is undefined and so is the share.
 */
import { readFileSync } from 'node:fs';

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
