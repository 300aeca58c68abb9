/**
 * A function under Lambda's own runtime, locally: AWS's Runtime Interface Emulator
 * (`aws-lambda-rie`, the Lambda runtime API and invoke endpoint) running AWS's Node.js runtime
 * interface client (`aws-lambda-ric`, what container-image functions run) on a task root — the
 * folder Lambda unpacks a function's zip into (`/var/task`). Both come from `provision()`
 * (targets `rie` and `ric`), cached like the other test binaries.
 *
 * Guarantees:
 * - The runtime sees only what Lambda would give it: the environment is built from scratch
 *   (`PATH`, `LAMBDA_TASK_ROOT`, `_HANDLER`, the function's timeout, memory and name, plus
 *   `env`); nothing of the test process leaks in (no `NODE_OPTIONS`, no `NODE_PATH`, no AWS
 *   settings), and the task root is wherever the caller put it — outside any node_modules, a
 *   bundle resolves only what it carries, as in a container image with no SDK installed.
 * - The emulator and the runtime run in their own process group and cannot outlive the test
 *   process (testing/process.ts); both listen on loopback ports picked free.
 * - `invoke` answers as Lambda's Invoke API does: the status, the raw body, the parsed payload
 *   when it is JSON, and the `REPORT` line of that request (init duration on the first
 *   invocation, duration), read from the emulator's output by request id.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { LOOPBACK } from './config.ts';
import { freePorts } from './ports.ts';
import { startProcess, type ManagedProcess } from './process.ts';
import { provision } from './provision.ts';
import { waitUntil } from './wait.ts';

export interface LambdaEmulatorOptions {
  /** The function's code as Lambda unpacks it (the zip's content), e.g. holding `functions/memcached.mjs`. */
  readonly taskRoot: string;
  /** Lambda's handler setting, e.g. `functions/memcached.handler`. */
  readonly handler: string;
  /** The function's `timeout` (seconds): the emulator ends an invocation that runs longer. */
  readonly timeoutSeconds: number;
  readonly memoryMb?: number;
  readonly functionName?: string;
  /** The function's environment variables (serverless.yml `environment`, AWS settings). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Lambda's `REPORT RequestId: …` line of one invocation. */
export interface LambdaReport {
  readonly requestId: string;
  /** Present on the invocation that initialised the runtime (a cold start). */
  readonly initDurationMs?: number;
  readonly durationMs: number;
}

/**
 * What one invocation's log says about time. The emulator starts the runtime lazily, inside
 * the first Invoke: its `REPORT` then gives an `Init Duration` near zero and a `Duration` that
 * includes the runtime's init, whose own length is on the emulator's `INIT REPORT(durationMs: …)`
 * line (Lambda itself reports that as `Init Duration`).
 */
export interface LambdaTimings {
  readonly report: LambdaReport | undefined;
  /** `INIT REPORT(durationMs: …)` printed during this invocation (a cold start), if any. */
  readonly runtimeInitMs: number | undefined;
}

/** Reads request `requestId`'s REPORT and INIT REPORT out of the emulator's output. Pure. */
export function invocationTimings(output: string, requestId: string): LambdaTimings {
  const lines = output.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`START RequestId: ${requestId}`));
  const end = lines.findIndex((l) => l.startsWith(`REPORT RequestId: ${requestId}`));
  if (start < 0) return { report: undefined, runtimeInitMs: undefined };
  const report = end >= 0 ? parseReport(lines[end] as string) : undefined;
  let runtimeInitMs: number | undefined;
  for (const line of lines.slice(start, end >= 0 ? end : undefined)) {
    const init = /INIT REPORT\(durationMs: ([\d.]+)\)/.exec(line);
    if (init) runtimeInitMs = Number.parseFloat(init[1] as string);
  }
  return { report, runtimeInitMs };
}

export interface LambdaInvocation {
  readonly requestId: string;
  readonly status: number;
  readonly body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly payload: unknown;
  readonly report: LambdaReport | undefined;
  /** The runtime's init on this invocation (a cold start): see `LambdaTimings`. */
  readonly runtimeInitMs: number | undefined;
  /** Wall time of the Invoke request as the caller saw it. */
  readonly elapsedMs: number;
}

export interface LambdaEmulator {
  readonly endpoint: string;
  invoke(event: unknown, options?: { readonly timeoutMs?: number }): Promise<LambdaInvocation>;
  /** Everything the emulator and the runtime printed so far (function logs included). */
  output(): string;
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, LOOPBACK);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Parses a `REPORT RequestId: …` line (tab-separated, as Lambda and the emulator print it). Pure. */
export function parseReport(line: string): LambdaReport | undefined {
  const match = /^REPORT RequestId: (\S+)\t(.*)$/.exec(line.trim());
  if (!match) return undefined;
  const fields = new Map<string, string>();
  for (const part of (match[2] ?? '').split('\t')) {
    const colon = part.indexOf(':');
    if (colon > 0) fields.set(part.slice(0, colon).trim(), part.slice(colon + 1).trim());
  }
  const ms = (name: string) => {
    const value = fields.get(name);
    return value === undefined ? undefined : Number.parseFloat(value);
  };
  const durationMs = ms('Duration');
  if (durationMs === undefined || Number.isNaN(durationMs)) return undefined;
  const initDurationMs = ms('Init Duration');
  return { requestId: match[1] as string, durationMs, ...(initDurationMs === undefined ? {} : { initDurationMs }) };
}

export async function startLambdaEmulator(options: LambdaEmulatorOptions): Promise<LambdaEmulator> {
  const { lambdaEmulator, lambdaRuntimeClient } = await provision({ targets: ['rie', 'ric'] });
  if (!lambdaEmulator || !lambdaRuntimeClient) throw new Error('provisioning did not supply aws-lambda-rie and aws-lambda-ric');
  const [invokePort, runtimeApiPort] = await freePorts(2);
  const dir = mkdtempSync(join(tmpdir(), 'operless-lambda-rie-'));
  const logPath = join(dir, 'output.log');
  const env: Record<string, string> = {
    PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    LAMBDA_TASK_ROOT: options.taskRoot,
    LAMBDA_RUNTIME_DIR: dirname(lambdaRuntimeClient),
    _HANDLER: options.handler,
    AWS_LAMBDA_FUNCTION_TIMEOUT: String(options.timeoutSeconds),
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(options.memoryMb ?? 256),
    AWS_LAMBDA_FUNCTION_NAME: options.functionName ?? 'function',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    ...options.env,
  };
  const proc: ManagedProcess = startProcess({
    name: 'aws-lambda-rie',
    command: lambdaEmulator,
    args: [
      '--runtime-interface-emulator-address',
      `${LOOPBACK}:${invokePort}`,
      '--runtime-api-address',
      `${LOOPBACK}:${runtimeApiPort}`,
      process.execPath,
      lambdaRuntimeClient,
      options.handler,
    ],
    logPath,
    env,
    cwd: options.taskRoot,
    cleanupDir: dir,
  });
  const endpoint = `http://${LOOPBACK}:${invokePort}/2015-03-31/functions/function/invocations`;
  const output = () => {
    try {
      return readFileSync(logPath, 'utf8');
    } catch {
      return '';
    }
  };
  await waitUntil(
    'aws-lambda-rie listens',
    async () => {
      if (!proc.isRunning()) throw new Error(`aws-lambda-rie exited at start:\n${proc.logTail()}`);
      return accepts(invokePort as number);
    },
    { timeoutMs: 30_000, context: () => proc.logTail() },
  );

  return {
    endpoint,
    output,
    async invoke(event, invokeOptions = {}) {
      const requestId = randomUUID();
      const started = performance.now();
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-Amzn-RequestId': requestId },
        body: JSON.stringify(event),
        signal: AbortSignal.timeout(invokeOptions.timeoutMs ?? (options.timeoutSeconds + 30) * 1000),
      });
      const body = await response.text();
      const elapsedMs = performance.now() - started;
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        payload = undefined;
      }
      const { report, runtimeInitMs } = invocationTimings(output(), requestId);
      return { requestId, status: response.status, body, payload, report, runtimeInitMs, elapsedMs };
    },
    async stop() {
      await proc.stop(2_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A handler that invokes a function under the emulator, for a Lambda runner (local/lambda-runner.ts). */
export interface EmulatedHandler {
  /** Invokes one emulator that is free; resolves with the function's response, throws on a failed invocation. */
  handler(event: unknown): Promise<unknown>;
  stop(): Promise<void>;
}

/**
 * What an invocation means to the event source mapping: the function's response, or an error
 * (the function threw, timed out, or failed at init) — as Lambda's Invoke API reports them:
 * a body with `errorType`/`errorMessage`, the emulator's `Task timed out …` text, a non-200
 * status. Pure.
 */
export function invocationOutcome(
  invocation: Pick<LambdaInvocation, 'status' | 'body' | 'payload'>,
): { ok: true; response: unknown } | { ok: false; error: string } {
  const payload = invocation.payload as { errorType?: unknown; errorMessage?: unknown } | null | undefined;
  if (invocation.status !== 200) return { ok: false, error: `the invocation failed with status ${invocation.status}: ${invocation.body.slice(0, 500)}` };
  if (payload && typeof payload === 'object' && typeof payload.errorMessage === 'string') {
    return { ok: false, error: `the function failed: ${String(payload.errorType ?? 'Error')}: ${payload.errorMessage}` };
  }
  if (invocation.payload === undefined && invocation.body.trim() !== '') return { ok: false, error: invocation.body.slice(0, 500) };
  return { ok: true, response: invocation.payload ?? null };
}

/**
 * `concurrency` emulators of one function (an emulator runs one invocation at a time, like one
 * Lambda execution environment), started on first use. `onOutput` receives what the function
 * printed during each invocation (its log lines, START/END/REPORT).
 */
export function emulatedHandler(
  options: LambdaEmulatorOptions & { readonly concurrency: number; readonly onOutput?: (line: string) => void },
): EmulatedHandler {
  const idle: LambdaEmulator[] = [];
  const all: Promise<LambdaEmulator>[] = [];
  const waiting: ((emulator: LambdaEmulator) => void)[] = [];
  const printed = new Map<LambdaEmulator, number>();
  const acquire = (): Promise<LambdaEmulator> => {
    const free = idle.pop();
    if (free) return Promise.resolve(free);
    if (all.length < options.concurrency) {
      const started = startLambdaEmulator(options);
      all.push(started);
      return started;
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (emulator: LambdaEmulator) => {
    const next = waiting.shift();
    if (next) next(emulator);
    else idle.push(emulator);
  };
  const relay = (emulator: LambdaEmulator) => {
    const text = emulator.output();
    const from = printed.get(emulator) ?? 0;
    printed.set(emulator, text.length);
    for (const line of text.slice(from).split('\n')) if (line.trim() !== '' && !line.includes('(rapid)')) options.onOutput?.(line);
  };
  return {
    async handler(event) {
      const emulator = await acquire();
      try {
        const invocation = await emulator.invoke(event);
        relay(emulator);
        const outcome = invocationOutcome(invocation);
        if (!outcome.ok) throw new Error(outcome.error);
        return outcome.response;
      } finally {
        release(emulator);
      }
    },
    async stop() {
      const started = await Promise.allSettled(all);
      await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)));
    },
  };
}
