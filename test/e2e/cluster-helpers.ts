/**
 * Helpers the end-to-end tests share: wait for a condition on the real cluster (with the
 * forwarder's log tail in the failure message), run kubectl as the user would, and read
 * objects as JSON (undefined when not found); run the forwarder's bundle as its own process.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { ControlPlane } from '../../src/testing/index.ts';
import { waitUntil } from '../../src/testing/wait.ts';

export interface ClusterHelpers {
  until(what: string, check: () => Promise<boolean>, timeoutMs?: number): Promise<void>;
  kubectl(...args: string[]): Promise<string>;
  getJson<T>(...args: string[]): Promise<T | undefined>;
}

/** `plane` is read at call time (the control plane starts in `before`). */
export function clusterHelpers(plane: () => ControlPlane, logLines: () => readonly string[]): ClusterHelpers {
  return {
    until: (what, check, timeoutMs = 60_000) =>
      waitUntil(what, check, { timeoutMs, context: () => `forwarder log tail:\n${logLines().slice(-15).join('\n')}` }),
    async kubectl(...args) {
      const result = await plane().kubectl(args);
      assert.equal(result.code, 0, `kubectl ${args.join(' ')} failed: ${result.stderr}`);
      return result.stdout;
    },
    async getJson<T>(...args: string[]): Promise<T | undefined> {
      const result = await plane().kubectl(['get', ...args, '-o', 'json']);
      if (result.code !== 0) {
        if (/NotFound|not found/.test(result.stderr)) return undefined;
        throw new Error(result.stderr);
      }
      return JSON.parse(result.stdout) as T;
    },
  };
}

/**
 * Starts the forwarder bundle as a child process with a config file, a kubeconfig and a local
 * SQS endpoint (dummy credentials); its stdout/stderr lines are appended to `lines`.
 */
export function spawnForwarder(options: { bundle: string; configPath: string; kubeconfigPath: string; sqsEndpoint: string; lines: string[] }): {
  child: ChildProcess;
  exit: Promise<number | null>;
} {
  const child = spawn(process.execPath, [options.bundle], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      OPERLESS_FORWARDER_CONFIG: options.configPath,
      KUBECONFIG: options.kubeconfigPath,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_SQS: options.sqsEndpoint,
    },
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  createInterface({ input: child.stdout! }).on('line', (line) => options.lines.push(line));
  createInterface({ input: child.stderr! }).on('line', (line) => options.lines.push(line));
  return { child, exit };
}
