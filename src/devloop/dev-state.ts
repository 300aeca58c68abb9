/**
 * The state file of a running `operless dev` (`.operless/dev.json` in the project): where its
 * API server, queues and forwarder are, so that commands in a second terminal (`operless
 * status`, `dlq`, `enqueue`) find the local loop by themselves (src/cli/target.ts reads it).
 *
 * Guarantees: `readDevState` returns a state only while the process that wrote it is alive;
 * a missing, unreadable or stale file reads as "no loop running here".
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The queues of one reconcile function of a running `operless dev`, and the kinds it reconciles. */
export interface DevFunctionState {
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Unordered: the bulk queue of its resyncs and relists (absent in state files of older versions). */
  readonly bulkQueueUrl?: string;
  readonly kinds: readonly string[];
}

export interface DevState {
  readonly pid: number;
  readonly kubeconfigPath: string;
  readonly sqsEndpoint: string;
  readonly region: string;
  /** The first function's queues: the default target of queue commands. */
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Every function's queues by function name (absent in state files of older versions). */
  readonly functions?: Readonly<Record<string, DevFunctionState>>;
  readonly cluster: string;
  readonly forwarderUrl?: string;
}

export const DEV_STATE_FILE = join('.operless', 'dev.json');

export function writeDevState(state: DevState, cwd = process.cwd()): string {
  const path = resolve(cwd, DEV_STATE_FILE);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(state, null, 2)}\n`);
  return path;
}

export function removeDevState(cwd = process.cwd()): void {
  rmSync(resolve(cwd, DEV_STATE_FILE), { force: true });
}

/** The state of a running `operless dev`, or undefined when none runs here. */
export function readDevState(cwd = process.cwd()): DevState | undefined {
  const path = resolve(cwd, DEV_STATE_FILE);
  if (!existsSync(path)) return undefined;
  try {
    const state = JSON.parse(readFileSync(path, 'utf8')) as DevState;
    process.kill(state.pid, 0); // throws when that process is gone
    return state;
  } catch {
    return undefined;
  }
}
