/**
 * Helpers for end-to-end tests that run a long-lived command (`operless dev`, a generated
 * project's `npm start`) as a child process: wait until its output shows something (failing
 * at once, with the output, if it exits first or the time runs out), and check that no
 * process of its tree survives it.
 *
 * Processes are told apart by pid and start time (from /proc), so a pid reused by an
 * unrelated process after the tree exited is never mistaken for a survivor.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessId {
  readonly pid: number;
  /** Start time in clock ticks since boot (field 22 of /proc/<pid>/stat): tells a reused pid apart. */
  readonly start: string;
  readonly command: string;
}

function stat(pid: number): { ppid: number; state: string; start: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, ppid: Number(fields[1]), start: fields[19]! };
  } catch {
    return undefined;
  }
}

/** Every descendant of `root` (and root itself), from /proc. */
export function processTree(root: number): ProcessId[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = stat(Number(entry));
    if (s) children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(entry)]);
  }
  const out: ProcessId[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const s = stat(pid);
    if (!s) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().slice(0, 160);
    } catch {
      /* gone meanwhile */
    }
    out.push({ pid, start: s.start, command });
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** True when that very process (same pid and start time) still runs; zombies have exited. */
export function survives(p: ProcessId): boolean {
  const s = stat(p.pid);
  return s !== undefined && s.start === p.start && s.state !== 'Z' && s.state !== 'X';
}

/**
 * The processes of `tree` still running after giving reparented wrappers up to `graceMs` to
 * finish exiting, as `pid command` lines (empty when none survived).
 */
export async function survivors(tree: readonly ProcessId[], graceMs = 5_000): Promise<string[]> {
  let left = tree.filter(survives);
  for (let waited = 0; waited < graceMs && left.length > 0; waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
    left = tree.filter(survives);
  }
  return left.map((p) => `${p.pid} ${p.command}`);
}

export interface WatchedProcess {
  readonly child: ChildProcess;
  /** Everything it wrote so far (stdout and stderr, interleaved as received). */
  output(): string;
  /** Resolves once the output matches; rejects with the output if it exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, what: string, timeoutMs?: number): Promise<void>;
  /** Its exit. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Collects a child's output (spawned with stdout and stderr piped) so tests can wait on it. */
export function watchProcess(child: ChildProcess, name: string): WatchedProcess {
  let output = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const w of [...waiters]) {
      if (w.pattern.test(output)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const waitFor = (pattern: RegExp, what: string, timeoutMs = 180_000) => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      new Promise<void>((resolve) => {
        if (pattern.test(output)) resolve();
        else waiters.push({ pattern, resolve });
      }),
      exited.then(({ code, signal }) => {
        throw new Error(`${name} exited (code ${code}, signal ${signal}) before ${what}:\n${output}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name} did not report that ${what} within ${timeoutMs / 1000} s:\n${output}`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  };
  return { child, output: () => output, waitFor, exited };
}
