/**
 * The simulated kubelet of the benchmark as its own process (bench/pod-simulator-child.ts), so
 * that it can be pinned with the control plane and its CPU is its own, not the bench process's.
 * Guarantees: `startPodSimulatorProcess` resolves once the child said it started (rejects with its
 * stderr if it exits first); `stop()` ends it after its current pass (SIGTERM, SIGKILL after 10 s).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { stopProcess } from './process.ts';

export interface PodSimulatorProcess {
  readonly pid: number;
  stop(): Promise<void>;
}

const CHILD = fileURLToPath(new URL('../pod-simulator-child.ts', import.meta.url));

export async function startPodSimulatorProcess(kubeconfigPath: string): Promise<PodSimulatorProcess> {
  const child = spawn(process.execPath, [CHILD, kubeconfigPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderrTail = '';
  child.stderr.on('data', (c: Buffer) => (stderrTail = (stderrTail + c.toString()).slice(-2000)));
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the pod simulator exited (${code}) before it started:\n${stderrTail.trim()}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"ready"')) resolve();
    });
  });
  return { pid: child.pid!, stop: () => stopProcess(child) };
}
