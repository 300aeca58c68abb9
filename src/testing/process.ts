/**
 * A component process of the test environment (etcd, kube-apiserver, ElasticMQ, ...) that
 * cannot outlive the test process that started it.
 *
 * Guarantees:
 * - Each component runs in its own process group (`detached`), behind a tiny `sh` wrapper
 *   that also starts a watchdog. The watchdog checks every second that the wrapper's parent
 *   is still the test process; when the test process dies, even by SIGKILL, the wrapper is
 *   re-parented, and the watchdog terminates the group (TERM, then KILL) and removes the
 *   component's temporary folder.
 * - `stop()` sends TERM to the component (the wrapper forwards it and exits with it), KILLs
 *   the group after a grace period or once the component has exited, and resolves only when
 *   no process of the group is left, so a restart can bind the same port.
 * - While any component runs, the test process kills every group on `exit`, and on SIGINT /
 *   SIGTERM (then re-raises the signal, so the default exit behaviour is kept).
 * - Output goes to a log file (appended across restarts); `logTail()` quotes it in errors.
 * - The child is unref'd: a test that forgets `stop()` still exits, and the exit hook cleans up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessSpec {
  /** Component name for messages, e.g. `kube-apiserver`. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly logPath: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** A folder to delete if the test process dies without stopping this component. */
  readonly cleanupDir?: string;
}

export interface ManagedProcess {
  readonly name: string;
  /** Process group id (the wrapper's pid). */
  readonly pgid: number;
  readonly logPath: string;
  /** Resolves with the wrapper's exit code (the component's, unless it was signalled). */
  readonly exited: Promise<number | null>;
  isRunning(): boolean;
  /** TERM the group, KILL it after `graceMs`, resolve when no process of it is left. */
  stop(graceMs?: number): Promise<void>;
  logTail(lines?: number): string;
}

// $1: parent pid to watch, $2: folder to delete on orphaning ('' for none), rest: command.
// `$$` inside the ( ... ) subshell is the wrapper's pid; field 4 of /proc/PID/stat is its ppid.
const WRAPPER = `p=$1; d=$2; shift 2
"$@" &
c=$!
(
  trap '' TERM
  while kill -0 "$c" 2>/dev/null; do
    pp=$(cut -d' ' -f4 /proc/$$/stat 2>/dev/null) || exit 0
    if [ "$pp" != "$p" ]; then
      kill -TERM "$c" 2>/dev/null
      i=0; while kill -0 "$c" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
      kill -KILL "$c" 2>/dev/null
      [ -n "$d" ] && rm -rf "$d"
      kill -KILL $$ 2>/dev/null
      exit 0
    fi
    sleep 1
  done
) </dev/null >/dev/null 2>&1 &
trap 'kill -TERM "$c" 2>/dev/null' TERM
wait "$c"; rc=$?
while kill -0 "$c" 2>/dev/null; do wait "$c"; rc=$?; done
exit $rc`;

const live = new Set<LiveEntry>();
interface LiveEntry {
  readonly pgid: number;
  readonly cleanupDir?: string;
}

export function startProcess(spec: ProcessSpec): ManagedProcess {
  const fd = openSync(spec.logPath, 'a');
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', WRAPPER, 'operless-wrapper', String(process.pid), spec.cleanupDir ?? '', spec.command, ...spec.args], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: spec.env ?? process.env,
      cwd: spec.cwd,
    });
  } finally {
    closeSync(fd);
  }
  const pgid = child.pid;
  if (pgid === undefined) throw new Error(`could not start ${spec.name} (${spec.command}): spawn failed; is /bin/sh present?`);
  const entry: LiveEntry = spec.cleanupDir === undefined ? { pgid } : { pgid, cleanupDir: spec.cleanupDir };
  live.add(entry);
  installHooks();
  let running = true;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      running = false;
      resolve(code);
    });
  });
  child.unref();

  const groupAlive = () => isGroupAlive(pgid);
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pgid, signal);
    } catch {
      // already gone
    }
  };

  return {
    name: spec.name,
    pgid,
    logPath: spec.logPath,
    exited,
    isRunning: () => running && groupAlive(),
    async stop(graceMs = 10_000) {
      // The wrapper forwards TERM to the component and exits when it has; then nothing of
      // the group is needed any more (the watchdog), so KILL takes the rest at once.
      if (running) {
        try {
          process.kill(pgid, 'SIGTERM');
        } catch {
          // already gone
        }
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
        clearTimeout(timer);
      }
      signalGroup('SIGKILL');
      while (groupAlive()) await sleep(20);
      live.delete(entry);
    },
    logTail: (lines = 30) => tailFile(spec.logPath, lines),
  };
}

/**
 * Whether any process of the group still runs. Zombies do not count: after SIGKILL the
 * watchdog's zombies are re-parented to init, which may reap them only seconds later.
 * Reads /proc on Linux; elsewhere falls back to kill(-pgid, 0), which counts zombies.
 */
export function isGroupAlive(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // state ppid pgrp ...
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

/** The last `lines` lines of a file ('' if it cannot be read). */
export function tailFile(path: string, lines = 30): string {
  try {
    const size = statSync(path).size;
    const text = readFileSync(path, 'utf8').slice(Math.max(0, size - 64 * 1024));
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** `sleep(ms)`: Node's own promise timer (no hand-written sleep in src/testing or src/local). */
export { sleep };

/** Folders removed when the test process exits (temp dirs of components still running). */
const exitCleanup = new Set<string>();
export function removeOnExit(dir: string): () => void {
  exitCleanup.add(dir);
  installHooks();
  return () => exitCleanup.delete(dir);
}

let hooked = false;
function installHooks(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = () => {
      killAll();
      process.removeListener(signal, handler);
      // Re-raise so the process ends the way it would have without us, unless someone else handles it.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}

function killAll(): void {
  for (const entry of live) {
    try {
      process.kill(-entry.pgid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const entry of live) if (entry.cleanupDir) exitCleanup.add(entry.cleanupDir);
  live.clear();
  for (const dir of exitCleanup) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    } catch {
      // best effort: the watchdog also removes it
    }
  }
  exitCleanup.clear();
}
