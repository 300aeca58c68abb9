/**
 * Container entry point of the forwarder: `node src/forwarder/main.ts` (or the esbuild
 * bundle `forwarder.mjs` in the image). Reads the configuration (OPERLESS_FORWARDER_CONFIG
 * file + env overrides), starts the forwarder, and on SIGTERM/SIGINT stops watching,
 * flushes within the grace period and exits 0.
 *
 * Exit codes: 0 clean shutdown (everything flushed), 1 startup failure (message says
 * what to fix), 2 invalid configuration, 3 shutdown with messages left unsent.
 */
import { createLogger, errorMessage } from '../observability/log.ts';
import { ConfigError, loadConfig, type ForwarderConfig } from './config.ts';
import { startForwarder, type Forwarder } from './forwarder.ts';

const log = createLogger({ fields: { component: 'forwarder' } });

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

let forwarder: Forwarder;
try {
  forwarder = startForwarder(config, { processMetrics: true, logger: log });
} catch (err) {
  log.error(`cannot start the forwarder: ${errorMessage(err)}`);
  process.exit(1);
}

let shuttingDown = false;
async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  log.info('shutting down: stop watching, flush, release the lease', { signal, graceMs: config.shutdownGraceMs });
  const { unsent } = await forwarder.stop();
  process.exit(unsent > 0 ? 3 : 0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

forwarder.ready.catch(async (err: unknown) => {
  log.error(`forwarder failed to start: ${errorMessage(err)}`);
  await forwarder.stop({ graceMs: 0 }).catch(() => {});
  process.exit(1);
});
