/**
 * The forwarder's webhook endpoint: HTTPS, served by every replica (not only the leader), at
 * `POST /<function alias>/<default|validate|convert>`. Each request's body (an AdmissionReview
 * or ConversionReview) is passed to the named Lambda function synchronously
 * (`{ route, review }`) and the function's review is the answer.
 *
 * Guarantees:
 * - Bounded before anything is read: the request line and headers decide first
 *   (`admission`, pure). A path that is no webhook answers 404, a method other than POST 405, a
 *   declared body over its route's limit 413, and a request past the in-flight bounds 429
 *   with `Retry-After` — all before a byte of the body is read; such a body is then discarded
 *   as it arrives (never held) and the answer's response ends once it was read, so the caller
 *   reads the answer (a connection that keeps sending past `DISCARD_LIMIT_BYTES` is closed).
 *   The function is not invoked for any of them.
 * - Body limits per route (`WebhookLimits`): admission reviews (default, validate) and
 *   conversion reviews each have their own; a body that turns out larger while read (chunked)
 *   answers 413, what was read dropped and the rest discarded.
 * - In-flight bounds: at most `maxInFlightRequests` requests are read or invoked at once, and
 *   their bodies (declared, or read so far) add up to at most `maxInFlightBytes`; past either,
 *   429 with `Retry-After` (the API server's client retries it within its timeout). At most
 *   `maxConnections` connections are open; more are closed on accept. So the memory the
 *   endpoint can hold is bounded by `maxInFlightBytes` times the copies one review needs
 *   (body, parsed review, the invocation's payload), whatever callers send.
 * - Caller authentication (`clientAuth`, off unless configured: it needs the API server's
 *   AdmissionConfiguration): the admission routes (default, validate) answer 401, unread and
 *   uninvoked, unless the connection presented a client certificate that chains to the
 *   configured CA (and, when names are given, carries one of them as its common name). The
 *   convert route stays open: the API server presents no client certificate to conversion
 *   webhooks (kubernetes/kubernetes#131810); a conversion review carries no request of a user.
 * - A body that is not JSON answers 400, the function is not invoked.
 * - The invocation is bounded by the API server's own `?timeout=` (default 10 s) minus a
 *   margin, so the forwarder answers before the API server gives up and the user sees why.
 * - A function that cannot be invoked (down, throttled, cold past the deadline, an unhandled
 *   error) answers 503/504 with a one-line reason: the webhook's `failurePolicy` then decides
 *   whether the write is refused (Fail) or admitted (Ignore). A function that refused the
 *   review (`{ problem }`) answers 400.
 * - Errors are `metav1.Status` documents, so kubectl shows their message after the API
 *   server's "failed calling webhook".
 * - Shutdown drains: after `drain()` every request is still answered, each answer closing its
 *   connection (the API server reconnects, through the Service, to a replica that stays);
 *   `close()` stops accepting and lets the requests in flight finish (bounded) before closing.
 * - Every request is counted (`onAnswer`: alias, route, status) and every error answer logged
 *   with its reason; nothing is retried here (the API server's write is waiting).
 */
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { errorMessage, type Logger } from '../../observability/log.ts';
import { DEFAULT_WEBHOOK_LIMITS, type WebhookLimits } from '../config/config.ts';

export { DEFAULT_WEBHOOK_LIMITS, type WebhookLimits };

export const WEBHOOK_PATH_ROUTES = ['default', 'validate', 'convert'] as const;
export type WebhookPathRoute = (typeof WEBHOOK_PATH_ROUTES)[number];

/** Lambda's synchronous invocation payload limit (6 MB): the default limit of a conversion review. */
export const MAX_WEBHOOK_BODY_BYTES = DEFAULT_WEBHOOK_LIMITS.conversionBodyBytes;

/**
 * A body answered before it was read is discarded as it arrives, up to this many bytes, so the
 * caller reads the answer on a connection still open; past it the connection is closed.
 */
export const DISCARD_LIMIT_BYTES = 16 * 1024 * 1024;
/** Seconds a refused-for-load caller is asked to wait (`Retry-After`). */
export const RETRY_AFTER_SECONDS = 1;
/** Kept back from the API server's timeout to answer in time. */
export const ANSWER_MARGIN_MS = 500;
const DEFAULT_TIMEOUT_MS = 10_000;

/** The outcome of one synchronous invocation. */
export type InvokeOutcome =
  | { readonly ok: true; readonly payload: unknown }
  | { readonly ok: false; readonly status: 502 | 503 | 504; readonly message: string };

/** Invokes a function synchronously (production: the AWS SDK's Lambda client, lambda-invoker.ts). */
export type WebhookInvoker = (functionName: string, payload: object, signal: AbortSignal) => Promise<InvokeOutcome>;

/** One answer, for metrics: the alias and route ('' when the path is no webhook) and the status. */
export type WebhookAnswer = { readonly alias: string; readonly route: string; readonly status: number };

export interface WebhookServerOptions {
  readonly host: string;
  readonly port: number;
  /** PEM certificate chain and key (mounted from a Secret). */
  readonly certPem: string;
  readonly keyPem: string;
  /** Alias in the path → Lambda function name or ARN. */
  readonly functions: Readonly<Record<string, string>>;
  readonly invoke: WebhookInvoker;
  readonly log: Logger;
  /** Default: DEFAULT_WEBHOOK_LIMITS. */
  readonly limits?: WebhookLimits;
  /**
   * Caller authentication of the admission routes (config `webhooks.clientAuth`): the PEM CA(s)
   * the API server's client certificate chains to, and the subject common names accepted (empty:
   * any the CA signed). Unset: no caller is authenticated.
   */
  readonly clientAuth?: { readonly caPem: string; readonly names: readonly string[] };
  /** Called once per answered request. */
  readonly onAnswer?: (answer: WebhookAnswer) => void;
  /** Called once per connection closed on accept (maxConnections reached). */
  readonly onConnectionRefused?: () => void;
}

export interface WebhookServer {
  /** https://host:port */
  readonly url: string;
  /** Serves another certificate and key from the next TLS handshake on (certificates.ts checks the pair first). */
  setCertificate(pair: { readonly certPem: string; readonly keyPem: string }): void;
  /** Shutdown began: go on answering, each answer closing its connection (the caller reconnects, to another replica). */
  drain(): void;
  /** Stops accepting, lets the requests in flight finish (at most `CLOSE_WAIT_MS`), then closes every connection. */
  close(): Promise<void>;
}

/** The most close() waits for requests in flight (an invocation is bounded by the API server's timeout, at most 30 s). */
export const CLOSE_WAIT_MS = 10_000;

/** Parses `/<alias>/<route>`; undefined when the path is not one. Pure. */
export function parseWebhookPath(
  path: string,
  functions: Readonly<Record<string, string>>,
): { alias: string; functionName: string; route: WebhookPathRoute } | undefined {
  const match = /^\/([a-z0-9][a-z0-9-]{0,62})\/(default|validate|convert)$/.exec(path);
  const alias = match?.[1];
  if (!alias || !Object.hasOwn(functions, alias)) return undefined;
  const functionName = functions[alias] as string;
  return { alias, functionName, route: match[2] as WebhookPathRoute };
}

/** The invocation budget from the API server's `timeout` query parameter (`10s`, `30s`); pure. */
export function invokeBudgetMs(timeoutParameter: string | null): number {
  const match = /^(\d{1,3})s$/.exec(timeoutParameter ?? '');
  const seconds = match ? Number(match[1]) : Number.NaN;
  const total = Number.isFinite(seconds) && seconds >= 1 && seconds <= 30 ? seconds * 1000 : DEFAULT_TIMEOUT_MS;
  return Math.max(250, total - ANSWER_MARGIN_MS);
}

/** The body limit of a route. Pure. */
export function bodyLimitOf(route: WebhookPathRoute, limits: WebhookLimits): number {
  return route === 'convert' ? limits.conversionBodyBytes : limits.admissionBodyBytes;
}

/** What the endpoint decides from the request line and headers, before reading the body. */
export type Admission =
  | { readonly accept: true; readonly limit: number }
  | { readonly accept: false; readonly status: 401 | 404 | 405 | 413 | 429; readonly message: string };

/**
 * Decides a request before its body is read. Pure: the path's target (undefined: no webhook),
 * the method, the declared length (undefined: chunked), what is in flight, and the limits.
 * Order: the path (404), the method (405), the caller of an admission route when authentication
 * is on (401), the declared length against the route's limit (413), then the in-flight bounds
 * (429) — so a request that could never be served is told why rather than to come back.
 */
export function admission(
  request: {
    readonly route: WebhookPathRoute | undefined;
    readonly method: string | undefined;
    readonly contentLength: number | undefined;
    readonly path: string;
    readonly aliases: readonly string[];
    /** The caller: 'off' when no authentication is configured, else whether its client certificate was accepted (and why not). */
    readonly caller: 'off' | { readonly ok: true } | { readonly ok: false; readonly why: string };
  },
  inFlight: { readonly requests: number; readonly bytes: number },
  limits: WebhookLimits,
): Admission {
  if (request.route === undefined) {
    return {
      accept: false,
      status: 404,
      message: `no webhook at ${request.path.slice(0, 100)}: expected /<function>/<default|validate|convert> for one of ${request.aliases.join(', ') || 'no functions'}`,
    };
  }
  if (request.method !== 'POST') return { accept: false, status: 405, message: 'webhooks are called with POST' };
  // The API server presents no client certificate to conversion webhooks (kubernetes/kubernetes#131810): convert stays open.
  if (request.route !== 'convert' && request.caller !== 'off' && !request.caller.ok) {
    return { accept: false, status: 401, message: `the admission routes answer the API server only (webhooks.clientAuth): ${request.caller.why}` };
  }
  const limit = bodyLimitOf(request.route, limits);
  if (request.contentLength !== undefined && request.contentLength > limit) {
    return {
      accept: false,
      status: 413,
      message: `the review is ${request.contentLength} bytes, larger than ${limit}, the limit of the ${request.route} route`,
    };
  }
  if (inFlight.requests >= limits.maxInFlightRequests) {
    return {
      accept: false,
      status: 429,
      message: `${inFlight.requests} webhook requests in flight, the most this replica serves at once (webhooks.limits.maxInFlightRequests): retry`,
    };
  }
  if (inFlight.bytes + (request.contentLength ?? 0) > limits.maxInFlightBytes) {
    return {
      accept: false,
      status: 429,
      message: `${inFlight.bytes} bytes of reviews in flight; this one would pass webhooks.limits.maxInFlightBytes (${limits.maxInFlightBytes}): retry`,
    };
  }
  return { accept: true, limit };
}

/** The declared body length, or undefined when none (chunked) or not a number. Pure. */
export function declaredLength(header: string | undefined): number | undefined {
  if (header === undefined || !/^\d{1,15}$/.test(header)) return undefined;
  return Number(header);
}

/** Whether a connection's client certificate authenticates the caller. Pure over the TLS socket's verdict. */
export function callerOf(
  socket: {
    readonly authorized: boolean;
    readonly authorizationError?: Error | string | null;
    getPeerCertificate(): { subject?: { CN?: string | string[] } } | object;
  },
  names: readonly string[],
): { readonly ok: true } | { readonly ok: false; readonly why: string } {
  if (!socket.authorized) {
    const error = socket.authorizationError;
    const why = error === undefined || error === null ? 'no client certificate' : String(error instanceof Error ? error.message : error);
    return { ok: false, why: `no client certificate signed by webhooks.clientAuth.caFile (${why})` };
  }
  if (names.length === 0) return { ok: true };
  const cn = (socket.getPeerCertificate() as { subject?: { CN?: string | string[] } }).subject?.CN;
  const cns = Array.isArray(cn) ? cn : cn === undefined ? [] : [cn];
  if (cns.some((name) => names.includes(name))) return { ok: true };
  return { ok: false, why: `the client certificate's common name ${JSON.stringify(cns.join(',').slice(0, 100))} is not one of webhooks.clientAuth.names` };
}

type Caller = Parameters<typeof admission>[0]['caller'];

/** What is in flight: requests being read or invoked, and the bytes of their bodies. */
class InFlight {
  requests = 0;
  bytes = 0;
  /** Shutdown began: answers close their connections. */
  draining = false;
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const limits = options.limits ?? DEFAULT_WEBHOOK_LIMITS;
  const inFlight = new InFlight();
  const clientAuth = options.clientAuth;
  // A client certificate is asked for, not required: the convert route answers callers without one.
  const tls = clientAuth ? { requestCert: true, rejectUnauthorized: false, ca: clientAuth.caPem } : {};
  const server = https.createServer({ cert: options.certPem, key: options.keyPem, minVersion: 'TLSv1.2', ...tls }, (req, res) => {
    const caller = clientAuth ? callerOf(req.socket as TLSSocket, clientAuth.names) : 'off';
    handle(options, limits, inFlight, caller, req, res).catch((err: unknown) => {
      // A caller that went away mid-body is its own business (counted as no answer); anything else is a bug here.
      if (req.destroyed && !req.complete) options.log.warn('webhook caller closed the connection before its body arrived', { error: errorMessage(err) });
      else options.log.error('webhook request failed', { error: errorMessage(err) });
      if (!res.headersSent) {
        res.setHeader('Connection', 'close');
        reply(res, 500, 'internal error in the webhook endpoint');
      }
    });
  });
  // The API server waits 30 s at most (timeoutSeconds): a caller trickling a request holds a slot no longer.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  server.maxConnections = limits.maxConnections;
  let lastDropLog = 0;
  server.on('drop', () => {
    options.onConnectionRefused?.();
    const now = Date.now();
    if (now - lastDropLog < 10_000) return; // one line per burst; the counter says how many
    lastDropLog = now;
    options.log.warn('webhook connection refused: webhooks.limits.maxConnections reached', { maxConnections: limits.maxConnections });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `https://${options.host.includes(':') ? `[${options.host}]` : options.host}:${address.port}`,
    setCertificate: (pair) =>
      server.setSecureContext({ cert: pair.certPem, key: pair.keyPem, minVersion: 'TLSv1.2', ...(clientAuth ? { ca: clientAuth.caPem } : {}) }),
    drain: () => {
      inFlight.draining = true;
    },
    close: async () => {
      inFlight.draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + CLOSE_WAIT_MS;
      while (inFlight.requests > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      server.closeAllConnections();
      await closed;
    },
  };
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  413: 'RequestEntityTooLarge',
  429: 'TooManyRequests',
  502: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/**
 * Errors answer as a `metav1.Status`: the API server's client decodes it and shows its message to
 * the user. With `lingering` (a body still arriving, being discarded) the whole answer is written
 * at once but the response ends only when the body has been read: Node closes a connection whose
 * request is unfinished when its response ends, and a caller still writing would then lose the
 * answer to a reset — a 429's Retry-After or a 413's reason with it.
 */
function reply(res: ServerResponse, status: number, body: string | object, lingering?: Promise<void>): void {
  const document =
    typeof body === 'string'
      ? { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: body, reason: REASONS[status] ?? 'InternalError', code: status }
      : body;
  const text = JSON.stringify(document);
  if (!lingering) {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(text);
    return;
  }
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
  res.write(text);
  void lingering.then(() => res.end());
}

async function handle(
  options: WebhookServerOptions,
  limits: WebhookLimits,
  inFlight: InFlight,
  caller: Caller,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const started = Date.now();
  // Not `new URL`: a request target like `//` or `//host/x` would parse as another host (or throw).
  const requestTarget = req.url ?? '/';
  const query = requestTarget.indexOf('?');
  const url = {
    pathname: query < 0 ? requestTarget : requestTarget.slice(0, query),
    searchParams: new URLSearchParams(query < 0 ? '' : requestTarget.slice(query + 1)),
  };
  const target = parseWebhookPath(url.pathname, options.functions);
  const labels = { alias: target?.alias ?? '', route: target?.route ?? '' };
  const done = (status: number, body: string | object, fields: Record<string, unknown> = {}, lingering?: Promise<void>) => {
    if (inFlight.draining) res.setHeader('Connection', 'close');
    reply(res, status, body, lingering);
    options.onAnswer?.({ ...labels, status });
    const line = { path: url.pathname.slice(0, 100), status, durationMs: Date.now() - started, ...fields };
    if (status >= 400) options.log.warn('webhook answered with an error', { ...line, reason: typeof body === 'string' ? body : undefined });
    else options.log.debug('webhook answered', line);
  };
  const contentLength = declaredLength(req.headers['content-length']);
  const decision = admission(
    { route: target?.route, method: req.method, contentLength, path: url.pathname, aliases: Object.keys(options.functions), caller },
    inFlight,
    limits,
  );
  if (!decision.accept) {
    // Answered before the body is read: discard it as it arrives (nothing held), close past the cap.
    if (decision.status === 405) res.setHeader('Allow', 'POST');
    if (decision.status === 429) res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    return done(decision.status, decision.message, {}, discard(req, DISCARD_LIMIT_BYTES));
  }
  if (!target) throw new Error('admission accepted a request without a target'); // unreachable: admission answers 404
  // Reserved from here until the answer is written (or reading failed): the invocation holds the review until then.
  let reserved = contentLength ?? 0;
  inFlight.requests++;
  inFlight.bytes += reserved;
  try {
    const read = await readBody(req, decision.limit, contentLength, (more) => {
      // A chunked body reserves as it arrives; it is refused once it would pass the bound.
      if (inFlight.bytes + more > limits.maxInFlightBytes) return false;
      inFlight.bytes += more;
      reserved += more;
      return true;
    });
    if (read.kind !== 'body') {
      // What was read is dropped; the rest is discarded as it arrives, as for an answer given before reading.
      const rest = discard(req, DISCARD_LIMIT_BYTES);
      if (read.kind === 'busy') {
        res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
        return done(429, `the review would pass webhooks.limits.maxInFlightBytes (${limits.maxInFlightBytes}) with what is in flight: retry`, {}, rest);
      }
      return done(413, `the review is larger than ${decision.limit} bytes, the limit of the ${target.route} route`, {}, rest);
    }
    let review: unknown;
    try {
      review = JSON.parse(read.body.toString('utf8'));
    } catch {
      return done(400, 'the body is not JSON');
    }
    const signal = AbortSignal.timeout(invokeBudgetMs(url.searchParams.get('timeout')));
    const outcome = await options.invoke(target.functionName, { route: target.route, review }, signal);
    const fields = { function: target.alias, route: target.route };
    if (!outcome.ok) return done(outcome.status, `webhook function ${target.alias} (${target.route}): ${outcome.message}`, fields);
    const payload = outcome.payload as { review?: unknown; problem?: unknown } | null;
    if (payload && typeof payload.review === 'object' && payload.review !== null) return done(200, payload.review, fields);
    const problem = typeof payload?.problem === 'string' ? payload.problem : 'the function answered without a review';
    return done(400, `webhook function ${target.alias} (${target.route}) refused the request: ${problem}`, fields);
  } finally {
    inFlight.requests--;
    inFlight.bytes -= reserved;
  }
}

/**
 * Reads and drops the body as it arrives; closes the connection once more than `cap` bytes came
 * (counted from here). Resolves when the body has ended or the connection is gone.
 */
function discard(req: IncomingMessage, cap: number): Promise<void> {
  let size = 0;
  const { promise, resolve } = Promise.withResolvers<void>();
  if (req.complete) resolve();
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > cap) req.socket.destroy();
  });
  req.once('end', () => resolve());
  req.once('close', () => resolve());
  req.on('error', () => {}); // a reset while discarding is the caller's business
  req.resume();
  return promise;
}

type ReadResult = { readonly kind: 'body'; readonly body: Buffer } | { readonly kind: 'tooLarge' } | { readonly kind: 'busy' };

/**
 * The body, read into one buffer of the declared length (or chunks, when chunked): 'tooLarge'
 * once it passes `limit`, 'busy' when a chunked body's next bytes are not granted by `reserve`.
 * Reading stops at either (the rest is not read; the caller closes the connection).
 */
function readBody(req: IncomingMessage, limit: number, declared: number | undefined, reserve: (bytes: number) => boolean): Promise<ReadResult> {
  return new Promise((resolve, reject) => {
    const whole = declared === undefined ? undefined : Buffer.allocUnsafe(declared);
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const stop = (result: ReadResult) => {
      settled = true;
      req.pause();
      resolve(result);
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      if (size + chunk.length > limit) return stop({ kind: 'tooLarge' });
      if (whole) {
        chunk.copy(whole, size); // the parser never passes more than the declared length
      } else {
        if (!reserve(chunk.length)) return stop({ kind: 'busy' });
        chunks.push(chunk);
      }
      size += chunk.length;
    });
    req.once('end', () => {
      if (settled) return;
      settled = true;
      resolve({ kind: 'body', body: whole ? whole.subarray(0, size) : Buffer.concat(chunks) });
    });
    const failed = (err?: Error) => {
      if (settled) return;
      settled = true;
      reject(err ?? new Error('the connection closed before the body was read'));
    };
    req.once('error', failed);
    req.once('close', () => failed());
  });
}
