/**
 * The built kubectl, run against a test control plane as one of its identities.
 *
 * Guarantees: `runKubectl` never throws for a non-zero exit (the code, stdout and stderr come
 * back); it rejects only when kubectl cannot be started. It is killed after `timeoutMs`
 * (default 60 s), and its stdin is always closed (`input`, or nothing).
 */
import { spawn } from 'node:child_process';
import type { Identity } from './identities.ts';

export interface KubectlResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface KubectlOptions {
  /** Written to kubectl's stdin (for `apply -f -`). */
  readonly input?: string;
  /** Run as this identity instead of the admin. */
  readonly as?: Identity;
  readonly timeoutMs?: number;
}

export function runKubectl(kubectl: string, kubeconfigPath: string, args: readonly string[], opts: KubectlOptions): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectl, [`--kubeconfig=${kubeconfigPath}`, ...args], { stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', (err) => reject(new Error(`could not run kubectl (${kubectl}): ${err.message}`)));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}
