/**
 * Starts the webhook endpoint from the forwarder's `webhooks` configuration: reads the
 * serving certificate and key (the mounted Secret), checks the aliases, and invokes through
 * the AWS SDK's Lambda client unless an invoker is given (tests).
 *
 * Guarantees: a configuration that cannot serve (no functions, an alias that is not a DNS
 * label, an unreadable certificate) fails start-up with one message naming the field; after
 * start the certificate files are watched and a new valid pair is served without a restart
 * (certificates.ts).
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../../observability/log.ts';
import type { WebhooksConfig } from '../config/config.ts';
import type { ForwarderMetrics } from '../metrics.ts';
import { lambdaInvoker } from './lambda-invoker.ts';
import { startWebhookServer, type WebhookInvoker, type WebhookServer } from './server.ts';
import { watchCertificate } from './certificates.ts';

const ALIAS = /^[a-z0-9][a-z0-9-]{0,62}$/;

export async function startWebhookEndpoint(config: WebhooksConfig, log: Logger, invoke?: WebhookInvoker, metrics?: ForwarderMetrics): Promise<WebhookServer> {
  const aliases = Object.keys(config.functions);
  if (aliases.length === 0)
    throw new Error(
      'webhooks.enabled is true but webhooks.functions is empty: map a path alias to each webhook function, e.g. { memcached: my-operator-memcached-webhook }',
    );
  const bad = aliases.find((alias) => !ALIAS.test(alias));
  if (bad !== undefined)
    throw new Error(`webhooks.functions: the alias ${JSON.stringify(bad)} must be a lower-case DNS label (it is the first segment of the webhook path)`);
  const read = (field: string, path: string, what: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`webhooks.${field}: cannot read ${path} (${(err as Error).message}); ${what}`);
    }
  };
  const { caFile, names } = config.clientAuth;
  const clientAuth =
    caFile === undefined ? undefined : { caPem: read('clientAuth.caFile', caFile, "mount the CA of the API server's client certificate there"), names };
  const current = {
    certPem: read('certFile', config.certFile, "mount the webhook's TLS Secret there"),
    keyPem: read('keyFile', config.keyFile, "mount the webhook's TLS Secret there"),
  };
  const server = await startWebhookServer({
    host: config.host,
    port: config.port,
    ...current,
    ...(clientAuth ? { clientAuth } : {}),
    functions: config.functions,
    invoke: invoke ?? lambdaInvoker(config.lambdaEndpoint ? { endpoint: config.lambdaEndpoint } : {}),
    log: log.child({ component: 'webhooks' }),
    limits: config.limits,
    onAnswer: ({ alias, route, status }) => metrics?.webhookRequests.inc({ function: alias, route, code: String(status) }),
    onConnectionRefused: () => metrics?.webhookConnectionsRefused.inc(),
  });
  // cert-manager renews the certificate and the CA injector swaps every caBundle: serve the new pair without a restart.
  const watcher = watchCertificate({
    certFile: config.certFile,
    keyFile: config.keyFile,
    current,
    log: log.child({ component: 'webhooks' }),
    apply: (pair) => server.setCertificate(pair),
    onResult: (result) => metrics?.webhookCertificateReloads.inc({ result }),
  });
  log.info('webhook endpoint serving', {
    url: server.url,
    functions: aliases,
    limits: config.limits,
    clientAuth: clientAuth ? { caFile, names } : 'off: any caller that reaches the port is served',
  });
  return {
    ...server,
    close: () => {
      watcher.close();
      return server.close();
    },
  };
}
