/**
 * The Lambda Invoke API, locally: `POST /2015-03-31/functions/{name}/invocations` runs a
 * handler in this process and answers as Lambda does, so callers use the AWS SDK's Lambda
 * client with an endpoint override (the forwarder's webhook invoker, in tests and `npm start`).
 *
 * What it reproduces: a RequestResponse invocation's payload (the handler's JSON result, 200);
 * a thrown error as 200 with `X-Amz-Function-Error: Unhandled` and `{ errorMessage, errorType }`;
 * a handler past the function's timeout as `Unhandled` with Lambda's "Task timed out" message;
 * an unknown function as 404 `ResourceNotFoundException`; a Context whose
 * `getRemainingTimeInMillis()` counts down from the timeout; a body over Lambda's synchronous
 * payload limit (`MAX_INVOKE_BODY_BYTES`, 6 MB) as 413 `RequestEntityTooLargeException`, refused
 * before it is buffered (the connection is closed). What it does not: verify signatures, other
 * invocation types, cold starts.
 *
 * Guards (the embedded queue's, memory-queue-server.ts): it listens on 127.0.0.1 only, and a
 * request whose `Host` is not a loopback name, or that carries no `Authorization` header (every
 * AWS SDK call is signed; a web page's cross-site request cannot add one without a CORS
 * preflight, which this server never grants), is refused 403 `AccessDeniedException` before its
 * body is read — so a page in the developer's browser cannot invoke the dev loop's functions
 * (under the developer's kubeconfig) through DNS rebinding or a plain cross-site POST.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../observability/log.ts';
import { isLoopbackHost } from './memory-queue-server.ts';

/** Lambda's synchronous invocation payload limit. */
export const MAX_INVOKE_BODY_BYTES = 6 * 1024 * 1024;

/** A handler as Lambda calls it (the context has what webhook handlers read). */
export type InvokeHandler = (event: unknown, context: { awsRequestId: string; getRemainingTimeInMillis(): number }) => unknown;

export interface LambdaInvokeServerOptions {
  /** Function name → handler. */
  readonly functions: Readonly<Record<string, InvokeHandler>>;
  /** The functions' timeout (default 10 s). */
  readonly timeoutMs?: number;
  readonly port?: number;
}

export interface LambdaInvokeServer {
  /** http://127.0.0.1:PORT, the SDK client's `endpoint`. */
  readonly endpoint: string;
  /** Invocations served, per function. */
  readonly invocations: Readonly<Record<string, number>>;
  close(): Promise<void>;
}

const PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

export async function startLambdaInvokeServer(options: LambdaInvokeServerOptions): Promise<LambdaInvokeServer> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const invocations: Record<string, number> = {};
  const server = http.createServer((req, res) => {
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'x-amzn-RequestId': randomUUID(), ...headers });
      res.end(JSON.stringify(body));
    };
    // Before anything else, so a page cannot even tell which functions exist.
    const refuse = (status: number, type: string, message: string) => {
      res.setHeader('Connection', 'close');
      json(status, { Type: 'User', message }, { 'x-amzn-ErrorType': type });
      req.resume();
    };
    if (!isLoopbackHost(req.headers.host)) {
      return refuse(
        403,
        'AccessDeniedException',
        `The local Invoke API answers loopback requests only (Host 127.0.0.1, localhost or [::1]); this request names Host ${JSON.stringify(String(req.headers.host ?? '').slice(0, 100))}.`,
      );
    }
    if (!req.headers.authorization)
      return refuse(
        403,
        'AccessDeniedException',
        'The local Invoke API answers signed requests only (an AWS SDK client); this one carries no Authorization header.',
      );
    const match = PATH.exec((req.url ?? '').split('?')[0] ?? '');
    const name = match
      ? (decodeURIComponent(match[1] as string)
          .split(':')
          .pop() ?? '')
      : '';
    const handler = match && Object.hasOwn(options.functions, name) ? options.functions[name] : undefined;
    if (req.method !== 'POST' || !handler) {
      json(404, { Type: 'User', message: `Function not found: ${name || req.url}` }, { 'x-amzn-ErrorType': 'ResourceNotFoundException' });
      return;
    }
    const tooLarge = `Request must be smaller than ${MAX_INVOKE_BODY_BYTES} bytes for the InvokeFunction operation`;
    if (Number(req.headers['content-length'] ?? 0) > MAX_INVOKE_BODY_BYTES) return refuse(413, 'RequestEntityTooLargeException', tooLarge);
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on('data', (c: Buffer) => {
      if (refused) return;
      size += c.length;
      if (size > MAX_INVOKE_BODY_BYTES) {
        refused = true;
        chunks.length = 0;
        refuse(413, 'RequestEntityTooLargeException', tooLarge);
        req.socket.destroySoon();
        return;
      }
      chunks.push(c);
    });
    req.once('end', () => {
      if (refused) return;
      invocations[name] = (invocations[name] ?? 0) + 1;
      invoke(handler, Buffer.concat(chunks).toString('utf8'), timeoutMs).then(
        (result) => json(200, result ?? null),
        (err: unknown) => json(200, { errorMessage: errorMessage(err), errorType: (err as Error)?.name ?? 'Error' }, { 'X-Amz-Function-Error': 'Unhandled' }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    invocations,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function invoke(handler: InvokeHandler, body: string, timeoutMs: number): Promise<unknown> {
  const event: unknown = body === '' ? {} : JSON.parse(body);
  const deadline = Date.now() + timeoutMs;
  const context = { awsRequestId: randomUUID(), getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`), { name: 'Sandbox.Timedout' })),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([Promise.resolve().then(() => handler(event, context)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
