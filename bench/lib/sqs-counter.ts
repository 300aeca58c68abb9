/**
 * A counting HTTP proxy in front of an SQS-compatible endpoint: every client (forwarder,
 * runner, the function's own SDK client) talks to it, and it counts requests by action
 * (`X-Amz-Target: AmazonSQS.SendMessageBatch` → `SendMessageBatch`) and messages sent, so
 * the cost model uses the requests SQS would bill, measured, not estimated.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SqsCounts {
  /** Requests per action. */
  readonly requests: Record<string, number>;
  /** Messages carried by SendMessage/SendMessageBatch. */
  messagesSent: number;
}

export interface SqsCounter {
  readonly endpoint: string;
  counts(): SqsCounts;
  reset(): void;
  stop(): Promise<void>;
}

export async function startSqsCounter(target: string): Promise<SqsCounter> {
  const upstream = new URL(target);
  let counts: SqsCounts = { requests: {}, messagesSent: 0 };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const action = String(req.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '') || 'unknown';
      counts.requests[action] = (counts.requests[action] ?? 0) + 1;
      if (action === 'SendMessage') counts.messagesSent += 1;
      else if (action === 'SendMessageBatch') {
        try {
          counts.messagesSent += ((JSON.parse(body.toString('utf8')) as { Entries?: unknown[] }).Entries ?? []).length;
        } catch {
          // not JSON: the broker answers the error; nothing to count
        }
      }
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host }, agent },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      forward.on('error', (err) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`bench SQS counter: upstream failed: ${err.message}`);
      });
      forward.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts: () => ({ requests: { ...counts.requests }, messagesSent: counts.messagesSent }),
    reset: () => {
      counts = { requests: {}, messagesSent: 0 };
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
