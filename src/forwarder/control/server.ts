/**
 * The forwarder's probe and metrics endpoint: `/healthz` (the process loop is alive),
 * `/readyz` (see `readiness` in forwarder.ts: watches synced and queue reachable),
 * `/readyz/webhooks` when the webhook endpoint is on (its own readiness: serving, not draining;
 * the chart's readiness probe then, so the webhook Service keeps its endpoints through a queue
 * outage), and
 * `/metrics` (Prometheus text format). Nothing else is served.
 *
 * Guarantees: every response is plain text with a reason line; a failing check answers
 * 503 with the reasons, so `kubectl describe pod` shows why the pod is not ready.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface Check {
  readonly ok: boolean;
  readonly reasons: readonly string[];
}

export interface ProbeServer {
  readonly url: string;
  close(): Promise<void>;
}

export async function startProbeServer(options: {
  readonly host: string;
  readonly port: number;
  readonly health: () => Check;
  readonly readiness: () => Check;
  /** The webhook endpoint's readiness, when it is on. */
  readonly webhookReadiness?: () => Check;
  readonly registry: Registry;
}): Promise<ProbeServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = (check: Check) => {
      res.writeHead(check.ok ? 200 : 503, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(check.ok ? 'ok\n' : `${check.reasons.join('\n')}\n`);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET' }).end();
    } else if (path === '/healthz' || path === '/livez') {
      answer(options.health());
    } else if (path === '/readyz') {
      answer(options.readiness());
    } else if (path === '/readyz/webhooks' && options.webhookReadiness) {
      answer(options.webhookReadiness());
    } else if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': options.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: try /healthz, /readyz or /metrics\n');
    }
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `cannot serve probes on ${options.host}:${options.port}: the port is in use. Set server.port (env OPERLESS_FORWARDER_PORT) to a free port, or 0 for any.`,
            )
          : err,
      );
    });
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
