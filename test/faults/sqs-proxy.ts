/**
 * A counting pass-through proxy in front of the broker: every component of a fault case
 * (forwarder, function runners, the test's own injections) talks SQS through it, so a case
 * can report exactly how many messages were sent, per queue, by everyone.
 *
 * Guarantees: requests and responses pass unchanged (the SQS JSON protocol is only read, to
 * count `SendMessage` and `SendMessageBatch` entries the broker accepted); when the broker
 * is down the client's connection is reset, as a stopped broker's would be — the proxy adds
 * no fault of its own, except a blackhole when asked (`setStalled`) and held acknowledgements
 * (`holdDeletes`). Loopback only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SqsProxy {
  /** http://127.0.0.1:PORT — the endpoint to give clients. */
  readonly endpoint: string;
  /** Rewrites a broker queue URL to go through the proxy. */
  url(brokerQueueUrl: string): string;
  /** Messages the broker accepted, per queue name. */
  readonly sent: ReadonlyMap<string, number>;
  /** Accepted messages to every queue so far. */
  total(): number;
  /**
   * While down, every connection is reset as a stopped broker's would be: with
   * `broker.restart()` inside the window, a broker outage of exactly that length.
   */
  setDown(down: boolean): void;
  /**
   * While stalled (a blackholed broker), every request is accepted and never answered: it is
   * not forwarded, and its connection stays open and dead even after the stall ends, so the
   * client has to time out and reconnect. Requests made after the stall pass again.
   */
  setStalled(stalled: boolean): void;
  /** Requests held unanswered by a stall so far. */
  readonly stalledRequests: number;
  /**
   * While set to a queue's name, its `DeleteMessage`/`DeleteMessageBatch` requests are read
   * and never forwarded nor answered (their connections stay open and dead): a consumer's
   * acknowledgements stop reaching the queue, as when a function dies after it sent its
   * follow-ups and before its batch was acknowledged. `undefined` lets new ones pass again.
   */
  holdDeletes(queue: string | undefined): void;
  /** Delete requests held so far. */
  readonly heldDeletes: number;
  close(): Promise<void>;
}

function queueName(queueUrl: unknown): string {
  return typeof queueUrl === 'string' ? (queueUrl.split('/').filter(Boolean).at(-1) ?? '?') : '?';
}

/** Whether a request (its `X-Amz-Target` and body) deletes messages of the queue `queue`. Pure. */
export function deletesFrom(target: string, requestBody: string, queue: string): boolean {
  const action = target.split('.').at(-1);
  if (action !== 'DeleteMessage' && action !== 'DeleteMessageBatch') return false;
  try {
    return queueName((JSON.parse(requestBody) as { QueueUrl?: unknown }).QueueUrl) === queue;
  } catch {
    return false;
  }
}

/** Counts entries the broker accepted in one SendMessage/SendMessageBatch exchange (pure). */
export function acceptedSends(target: string, requestBody: string, status: number, responseBody: string): { queue: string; count: number } | undefined {
  if (status !== 200) return undefined;
  const action = target.split('.').at(-1);
  if (action !== 'SendMessage' && action !== 'SendMessageBatch') return undefined;
  let request: { QueueUrl?: unknown };
  try {
    request = JSON.parse(requestBody) as { QueueUrl?: unknown };
  } catch {
    return undefined;
  }
  const queue = queueName(request.QueueUrl);
  if (action === 'SendMessage') return { queue, count: 1 };
  try {
    const response = JSON.parse(responseBody) as { Successful?: unknown[] };
    return { queue, count: response.Successful?.length ?? 0 };
  } catch {
    return undefined;
  }
}

export async function startSqsProxy(brokerEndpoint: string): Promise<SqsProxy> {
  const upstream = new URL(brokerEndpoint);
  const sent = new Map<string, number>();
  let down = false;
  let stalled = false;
  let stalledRequests = 0;
  let holdDeletesOf: string | undefined;
  let heldDeletes = 0;
  const server = http.createServer((req, res) => {
    if (down) {
      res.destroy();
      return;
    }
    if (stalled) {
      stalledRequests++;
      req.resume(); // read and discard; never answer, never close
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (holdDeletesOf !== undefined && deletesFrom(String(req.headers['x-amz-target'] ?? ''), body.toString('utf8'), holdDeletesOf)) {
        heldDeletes++;
        return; // never forwarded, never answered
      }
      const out = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (up) => {
          const back: Buffer[] = [];
          up.on('data', (c: Buffer) => back.push(c));
          up.on('end', () => {
            const responseBody = Buffer.concat(back);
            const counted = acceptedSends(String(req.headers['x-amz-target'] ?? ''), body.toString('utf8'), up.statusCode ?? 0, responseBody.toString('utf8'));
            if (counted) sent.set(counted.queue, (sent.get(counted.queue) ?? 0) + counted.count);
            res.writeHead(up.statusCode ?? 502, up.headers);
            res.end(responseBody);
          });
          up.on('error', () => res.destroy());
        },
      );
      // The broker is down: reset the client's connection, as the broker itself would.
      out.on('error', () => res.destroy());
      out.end(body);
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    url: (brokerQueueUrl) => {
      const u = new URL(brokerQueueUrl);
      return `${endpoint}${u.pathname}`;
    },
    sent,
    total: () => [...sent.values()].reduce((a, b) => a + b, 0),
    setDown: (value) => {
      down = value;
      if (down) server.closeAllConnections();
    },
    setStalled: (value) => {
      stalled = value;
    },
    get stalledRequests() {
      return stalledRequests;
    },
    holdDeletes: (queue) => {
      holdDeletesOf = queue;
    },
    get heldDeletes() {
      return heldDeletes;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
