/**
 * The forwarder's webhook endpoint: HTTPS, served by every replica (not only the leader), at
 * `POST /<function alias>/<default|validate|convert>`. Each request's body (an AdmissionReview
 * or ConversionReview) is passed to the named Lambda function synchronously
 * (`{ route, review }`) and the function's review is the answer.
 *
 * Guarantees:
 * - Only configured aliases and the three routes are served (404 otherwise, 405 for a method
 *   other than POST); a body over the Lambda payload limit answers 413 (and the connection is
 *   closed), one that is not JSON 400 — the function is not invoked for any of them. The body
 *   is read before any answer, so a kept-alive connection never carries a stale body.
 * - The invocation is bounded by the API server's own `?timeout=` (default 10 s) minus a
 *   margin, so the forwarder answers before the API server gives up and the user sees why.
 * - A function that cannot be invoked (down, throttled, cold past the deadline, an unhandled
 *   error) answers 503/504 with a one-line reason: the webhook's `failurePolicy` then decides
 *   whether the write is refused (Fail) or admitted (Ignore). A function that refused the
 *   review (`{ problem }`) answers 400.
 * - Errors are `metav1.Status` documents, so kubectl shows their message after the API
 *   server's "failed calling webhook".
 * - Every request is logged with the alias, route, status and duration; nothing is retried
 *   here (the API server's write is waiting).
 */
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, type Logger } from '../../observability/log.ts';

export const WEBHOOK_PATH_ROUTES = ['default', 'validate', 'convert'] as const;
export type WebhookPathRoute = (typeof WEBHOOK_PATH_ROUTES)[number];

/** Lambda's synchronous invocation payload limit (6 MB). */
export const MAX_WEBHOOK_BODY_BYTES = 6 * 1024 * 1024;
/** Kept back from the API server's timeout to answer in time. */
export const ANSWER_MARGIN_MS = 500;
const DEFAULT_TIMEOUT_MS = 10_000;

/** The outcome of one synchronous invocation. */
export type InvokeOutcome =
  | { readonly ok: true; readonly payload: unknown }
  | { readonly ok: false; readonly status: 502 | 503 | 504; readonly message: string };

/** Invokes a function synchronously (production: the AWS SDK's Lambda client, lambda-invoker.ts). */
export type WebhookInvoker = (functionName: string, payload: object, signal: AbortSignal) => Promise<InvokeOutcome>;

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
}

export interface WebhookServer {
  /** https://host:port */
  readonly url: string;
  close(): Promise<void>;
}

/** Parses `/<alias>/<route>`; undefined when the path is not one. Pure. */
export function parseWebhookPath(path: string, functions: Readonly<Record<string, string>>): { alias: string; functionName: string; route: WebhookPathRoute } | undefined {
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

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const server = https.createServer({ cert: options.certPem, key: options.keyPem, minVersion: 'TLSv1.2' }, (req, res) => {
    handle(options, req, res).catch((err: unknown) => {
      options.log.error('webhook request failed', { error: errorMessage(err) });
      if (!res.headersSent) {
        res.setHeader('Connection', 'close');
        reply(res, 500, 'internal error in the webhook endpoint');
      }
    });
  });
  server.requestTimeout = 40_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `https://${options.host.includes(':') ? `[${options.host}]` : options.host}:${address.port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

const REASONS: Record<number, string> = { 400: 'BadRequest', 404: 'NotFound', 405: 'MethodNotAllowed', 413: 'RequestEntityTooLarge', 502: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout' };

/** Errors answer as a `metav1.Status`: the API server's client decodes it and shows its message to the user. */
function reply(res: ServerResponse, status: number, body: string | object): void {
  const document = typeof body === 'string'
    ? { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: body, reason: REASONS[status] ?? 'InternalError', code: status }
    : body;
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(document));
}

async function handle(options: WebhookServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = Date.now();
  // Not `new URL`: a request target like `//` or `//host/x` would parse as another host (or throw).
  const requestTarget = req.url ?? '/';
  const query = requestTarget.indexOf('?');
  const url = { pathname: query < 0 ? requestTarget : requestTarget.slice(0, query), searchParams: new URLSearchParams(query < 0 ? '' : requestTarget.slice(query + 1)) };
  const target = parseWebhookPath(url.pathname, options.functions);
  const done = (status: number, body: string | object, fields: Record<string, unknown> = {}) => {
    reply(res, status, body);
    const line = { path: url.pathname.slice(0, 100), status, durationMs: Date.now() - started, ...fields };
    if (status >= 400) options.log.warn('webhook answered with an error', { ...line, reason: typeof body === 'string' ? body : undefined });
    else options.log.debug('webhook answered', line);
  };
  // The body is read (bounded) before any answer, so a kept-alive connection stays in step.
  const body = await readBody(req, MAX_WEBHOOK_BODY_BYTES);
  if (body === undefined) {
    res.setHeader('Connection', 'close');
    return done(413, `the review is larger than ${MAX_WEBHOOK_BODY_BYTES} bytes, the limit of a synchronous Lambda invocation`);
  }
  if (!target) return done(404, `no webhook at ${url.pathname.slice(0, 100)}: expected /<function>/<default|validate|convert> for one of ${Object.keys(options.functions).join(', ') || 'no functions'}`);
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    return done(405, 'webhooks are called with POST');
  }
  let review: unknown;
  try {
    review = JSON.parse(body.toString('utf8'));
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
}

/** The body, or undefined when it exceeds `limit` bytes (the rest is not read). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        resolve(undefined);
        req.pause();
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}
