/**
 * Turning tracing on from the standard `OTEL_*` variables (otel-config.ts), once per process:
 * the forwarder calls `startTracingFromEnv` at start and `shutdown` when it stops; a Lambda
 * function calls it at its first invocation and `flush`es before every answer, so its spans
 * leave before Lambda may freeze the process.
 *
 * No cost when off: with no exporter asked for, nothing beyond reading the variables happens —
 * the SDK module (otel-sdk.ts) is imported only when tracing is on, and the OpenTelemetry API's
 * no-op spans stay what Operless's code sees. A provider another component registered first
 * (the ADOT Lambda layer's wrapper) is left alone and used as it is; flushing it is its owner's job.
 *
 * Guarantees: a variable that cannot be used rejects with `TracingConfigError`, whose message
 * names every such variable and what it accepts; the same process asking twice gets the same
 * tracing (one SDK, never two); `flush`/`shutdown` never throw and never outlast their time.
 */
import { ProxyTracerProvider, trace } from '@opentelemetry/api';
import { tracingConfigFromEnv, tracingProblemsMessage, type TracingProblem } from './otel-config.ts';

export interface Tracing {
  /** `sdk`: Operless registered the SDK; `external`: another provider was there first; `off`: no exporter asked for. */
  readonly mode: 'sdk' | 'external' | 'off';
  /** Exports the finished spans (no-op unless `mode` is `sdk`). */
  flush(timeoutMs: number): Promise<void>;
  /** Flushes and stops exporting (no-op unless `mode` is `sdk`). */
  shutdown(timeoutMs: number): Promise<void>;
}

export class TracingConfigError extends Error {
  override readonly name = 'TracingConfigError';
  readonly problems: readonly TracingProblem[];
  constructor(problems: readonly TracingProblem[]) {
    super(tracingProblemsMessage(problems));
    this.problems = problems;
  }
}

const idle = async (): Promise<void> => {};

/** True when a tracer provider is registered globally (by anyone: every copy of the API shares the registry). */
export function hasGlobalTracerProvider(): boolean {
  const current = trace.getTracerProvider();
  return !(current instanceof ProxyTracerProvider) || current.getDelegate() !== new ProxyTracerProvider().getDelegate();
}

let started: Promise<Tracing> | undefined;

/**
 * The process's tracing, from `env` on the first call (later calls get the same one).
 * `defaultServiceName` names the service when `OTEL_SERVICE_NAME` does not.
 */
export function startTracingFromEnv(env: Readonly<Record<string, string | undefined>>, defaultServiceName: string): Promise<Tracing> {
  started ??= start(env, defaultServiceName);
  // A configuration error is reported to every caller, and the next call reads the variables again.
  started.catch(() => (started = undefined));
  return started;
}

async function start(env: Readonly<Record<string, string | undefined>>, defaultServiceName: string): Promise<Tracing> {
  const config = tracingConfigFromEnv(env, defaultServiceName);
  if (config.enabled === 'invalid') throw new TracingConfigError(config.problems);
  if (!config.enabled) return { mode: 'off', flush: idle, shutdown: idle };
  if (hasGlobalTracerProvider()) return { mode: 'external', flush: idle, shutdown: idle };
  const { registerSdk } = await import('./otel-sdk.ts');
  const sdk = registerSdk(config.settings);
  if (!sdk) return { mode: 'external', flush: idle, shutdown: idle };
  return { mode: 'sdk', flush: sdk.flush, shutdown: sdk.shutdown };
}

/** Forgets the process's tracing (tests: after `trace.disable()`). */
export function resetTracingForTests(): void {
  started = undefined;
}
