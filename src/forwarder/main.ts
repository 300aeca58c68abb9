/**
 * Container entry point of the forwarder: `node src/forwarder/main.ts` (or the esbuild
 * bundle `forwarder.mjs` in the image). Reads the configuration (OPERLESS_FORWARDER_CONFIG
 * file + env overrides), starts the forwarder, and on SIGTERM/SIGINT stops watching,
 * flushes within the grace period and exits 0.
 *
 * Last resort: an exception nobody caught or a promise rejection nobody handled means the
 * process is in a state its code did not plan for. It is never left running half-dead: one
 * ERROR line says what failed, the forwarder gets at most `FATAL_FLUSH_MS` to send what it
 * holds and release its Lease, and the process exits 4, so the Deployment restarts it (and a
 * new leader resyncs whatever was not sent). A second failure while doing so changes nothing;
 * a hard timer ends the process even if the flush hangs.
 *
 * Tracing: the standard `OTEL_*` variables (observability/otel-config.ts) turn the SDK on
 * before the forwarder starts (unset: it is never loaded); an unusable one is a configuration
 * error naming the variable (exit 2); every exit flushes the spans first (bounded).
 *
 * Exit codes: 0 clean shutdown (everything flushed), 1 startup failure (message says
 * what to fix), 2 invalid configuration, 3 shutdown with messages left unsent, 4 an
 * uncaught exception or unhandled rejection (a bug: the log line says where).
 */
import { createLogger, errorMessage } from '../observability/log.ts';
import { startTracingFromEnv, TracingConfigError, type Tracing } from '../observability/otel-start.ts';
import { ConfigError, loadConfig, type ForwarderConfig } from './config/config.ts';
import { startForwarder, type Forwarder } from './forwarder.ts';

const log = createLogger({ fields: { component: 'forwarder' } });

/** Exit code after an uncaught exception or unhandled rejection. */
const EXIT_FATAL = 4;
/** How long the last-resort handler lets the forwarder flush and release its Lease. */
const FATAL_FLUSH_MS = 5_000;
/** Beyond the flush, the most the handler waits before exiting regardless. */
const FATAL_HARD_STOP_MS = FATAL_FLUSH_MS + 2_000;
/** The most an exit waits for the last spans to be exported. */
const TRACE_FLUSH_MS = 2_000;

let forwarder: Forwarder | undefined;
let tracing: Tracing | undefined;
let failing = false;
function lastResort(what: 'uncaughtException' | 'unhandledRejection', err: unknown): void {
  const stack = err instanceof Error ? err.stack : undefined;
  if (failing) {
    log.error(`${what} while exiting after an earlier one: ${errorMessage(err)}`, { stack });
    return;
  }
  failing = true;
  const graceMs = Math.min(FATAL_FLUSH_MS, forwarder?.config.shutdownGraceMs ?? 0);
  log.error(`${what}: ${errorMessage(err)}; flushing for at most ${graceMs} ms, then exiting ${EXIT_FATAL} so the pod restarts`, {
    stack,
    exitCode: EXIT_FATAL,
  });
  setTimeout(() => process.exit(EXIT_FATAL), FATAL_HARD_STOP_MS);
  const stopping = forwarder ? forwarder.stop({ graceMs }) : Promise.resolve({ unsent: 0 });
  stopping
    .then(
      ({ unsent }) => log.info('stopped after the failure', { unsent }),
      (stopErr: unknown) => log.error(`could not stop cleanly after the failure: ${errorMessage(stopErr)}`),
    )
    .finally(() => exitAfterTraces(EXIT_FATAL));
}
process.on('uncaughtException', (err) => lastResort('uncaughtException', err));
process.on('unhandledRejection', (reason) => lastResort('unhandledRejection', reason));

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(`operless forwarder: watches Kubernetes objects and sends reconcile messages to SQS.

Configuration: a YAML file named by OPERLESS_FORWARDER_CONFIG, plus env overrides
  OPERLESS_CLUSTER, OPERLESS_QUEUE_URL, OPERLESS_QUEUE_REGION (or AWS_REGION),
  OPERLESS_LEADER_ELECTION, POD_NAME, POD_NAMESPACE, OPERLESS_FORWARDER_PORT,
  AWS_ENDPOINT_URL_SQS (local brokers), KUBECONFIG (outside a cluster).
See docs/forwarder.md for every field.
`);
  process.exit(0);
}

let config: ForwarderConfig;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    log.error('invalid configuration', { problems: err.problems });
    process.exit(2);
  }
  throw err;
}

try {
  tracing = await startTracingFromEnv(process.env, 'operless-forwarder');
  if (tracing.mode !== 'off') log.info('tracing on', { mode: tracing.mode });
} catch (err) {
  if (err instanceof TracingConfigError) {
    process.stderr.write(`${err.message}\n`);
    log.error('invalid tracing configuration', { problems: err.problems });
    process.exit(2);
  }
  throw err;
}

/** Exits with `code` once the spans are exported (at most `TRACE_FLUSH_MS`). */
function exitAfterTraces(code: number): void {
  void (tracing?.shutdown(TRACE_FLUSH_MS) ?? Promise.resolve()).finally(() => process.exit(code));
}

let running: Forwarder;
try {
  running = startForwarder(config, { processMetrics: true, logger: log });
  forwarder = running;
} catch (err) {
  log.error(`cannot start the forwarder: ${errorMessage(err)}`);
  process.exit(1);
}

let shuttingDown = false;
async function shutdown(signal: string): Promise<void> {
  if (shuttingDown || failing) return; // after a failure the last-resort handler decides the exit
  shuttingDown = true;
  log.info('shutting down: stop watching, flush, release the lease', { signal, graceMs: config.shutdownGraceMs });
  const { unsent } = await running.stop();
  exitAfterTraces(unsent > 0 ? 3 : 0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

running.ready.catch(async (err: unknown) => {
  log.error(`forwarder failed to start: ${errorMessage(err)}`);
  await running.stop({ graceMs: 0 }).catch(() => {});
  exitAfterTraces(1);
});
