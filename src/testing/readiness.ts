/**
 * Waiting for a just-started component of the test environment (etcd, kube-apiserver,
 * kube-controller-manager, ElasticMQ) to become ready: one loop for all of them.
 *
 * Guarantees:
 * - `waitComponentReady` polls the component's probe until it reports ready; it fails early,
 *   with `ComponentNotReadyError`, as soon as the process exits, and after `timeoutMs` stops
 *   the process and fails. Both messages name the component, quote its log tail and say what
 *   to do; an exit caused by a taken port says so.
 * - A probe that throws is retried (the component may simply not listen yet); its last error,
 *   or the last reason it gave for not being ready, is quoted on timeout.
 */
import { sleep } from './process.ts';
import type { ManagedProcess } from './process.ts';

export class ComponentNotReadyError extends Error {
  override readonly name = 'ComponentNotReadyError';
}

/** One readiness check: `true` when ready, else why not (`''` when there is nothing to say). */
export type ReadinessProbe = () => Promise<true | string>;

/** How to recognise, in a component's log, that it exited because a port was taken. */
export interface PortClash {
  readonly logPattern: RegExp;
  /** A sentence appended to the message, e.g. " Its port is in use by another process: ...". */
  readonly hint: string;
}

const LOG_TAIL_LINES = 40;
const PROBE_INTERVAL_MS = 100;

export async function waitComponentReady(proc: ManagedProcess, probe: ReadinessProbe, timeoutMs: number, clash: PortClash): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | undefined;
  void proc.exited.then((code) => (exitCode = code ?? -1));
  let last = '';
  // At least one probe, however short the timeout or late this loop starts: the message at the
  // deadline quotes what the component last said.
  for (;;) {
    if (exitCode !== undefined) {
      throw new ComponentNotReadyError(exitedBeforeReadyMessage(proc.name, exitCode, proc.logPath, proc.logTail(LOG_TAIL_LINES), clash));
    }
    try {
      const answer = await probe();
      if (answer === true) return;
      last = answer;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline) break;
    await sleep(PROBE_INTERVAL_MS);
  }
  await proc.stop();
  throw new ComponentNotReadyError(notReadyInTimeMessage(proc.name, timeoutMs, last, proc.logPath, proc.logTail(LOG_TAIL_LINES)));
}

/** A boolean readiness check as a probe (`false` gives no reason). */
export function booleanProbe(ready: () => Promise<boolean>): ReadinessProbe {
  return async () => (await ready()) || '';
}

/** The message for a component that exited before it became ready. Pure. */
export function exitedBeforeReadyMessage(name: string, exitCode: number, logPath: string, logTail: string, clash: PortClash): string {
  const hint = clash.logPattern.test(logTail) ? clash.hint : '';
  return `${name} exited (code ${exitCode}) before it became ready.${hint} Its log is ${logPath}; last lines:\n${logTail}`;
}

/** The message for a component still not ready at its deadline. Pure. */
export function notReadyInTimeMessage(name: string, timeoutMs: number, lastProbe: string, logPath: string, logTail: string): string {
  return (
    `${name} did not become ready within ${Math.round(timeoutMs / 1000)} s${lastProbe ? ` (last probe: ${lastProbe})` : ''}. ` +
    `The machine may be overloaded: raise readyTimeoutMs, or read its log ${logPath}; last lines:\n${logTail}`
  );
}
