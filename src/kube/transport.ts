/**
 * The HTTP transport to one API server: `node:https` with a keep-alive connection pool and
 * the TLS settings and credentials of an `EndpointAuth`. Nothing else is loaded: no HTTP
 * library, no generated API classes, so a function's cold start stays small. It is the one
 * HTTP layer of Operless: the runtime's client (client.ts) and the forwarder's watches and
 * lease (src/kube/api.ts, src/kube/lease.ts) both go through it.
 *
 * Where credentials come from is the caller's choice (see kubeconfig.ts for a `KubeConfig`,
 * eks.ts for EKS): `EndpointAuth.credentials()` is asked again at most every
 * `authRefreshMs` (exec and token-file users rotate), and `bearerToken()` — when given — on
 * every request (it caches itself; EKS tokens). A 401 answer drops both caches
 * (`EndpointAuth.unauthorized`), so a revoked or expired token is replaced on the next request.
 *
 * Guarantees:
 * - one connection pool per transport, reused across warm invocations, rebuilt only when
 *   the TLS material changes;
 * - a request that never gets a response fails with `KubeApiError{ status: 0 }` naming the
 *   server and the network error, never with a bare socket error;
 * - a request has a deadline, `timeoutMs` (default 60 s, `0` = none), for the whole exchange
 *   — response headers and body; past it the request is cut and fails with
 *   `KubeApiError{ status: 0, reason: 'Timeout' }`;
 * - an aborted request rejects with the signal's reason;
 * - `watch` streams a watch: a non-200 answer rejects with the `KubeApiError` of
 *   `parseKubeError`; the response must start within `timeoutMs` (default 30 s), after which
 *   there is no timeout (noticing a silent stream is the caller's job); events are delivered
 *   in the order the server sent them, none after an abort; `ended` settles once — resolves
 *   on a clean close or an abort, rejects on a broken stream, a line that is not a watch
 *   event, or an `onEvent` that throws (the stream is closed then).
 */
import http from 'node:http';
import https from 'node:https';
import { errorMessage } from '../observability/log.ts';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { EndpointAuth, EndpointCredentials } from './endpoint.ts';
import { KubeApiError, parseKubeError } from './errors.ts';
import { kubeConfigAuth } from './kubeconfig.ts';
import { ListScanner } from './list-stream.ts';

/** Where the server is and how to authenticate (endpoint.ts), re-exported for the transport's callers. */
export type { EndpointAuth, EndpointCredentials } from './endpoint.ts';

/** Deadline of a request when `KubeRequest.timeoutMs` is not given. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** How long a watch may take to start streaming when `WatchRequest.timeoutMs` is not given. */
export const DEFAULT_WATCH_CONNECT_TIMEOUT_MS = 30_000;

export type QueryParams = Readonly<Record<string, string | number | boolean | undefined>>;

/** Where a request or a watch goes, and what it accepts back. */
export interface RequestTarget {
  /** Path below the server URL; may carry a query string of its own. */
  readonly path: string;
  readonly query?: QueryParams;
  /** The `Accept` header (default `application/json`), e.g. a `PartialObjectMetadata` media type. */
  readonly accept?: string | undefined;
}

export interface KubeRequest extends RequestTarget {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  readonly body?: unknown;
  readonly contentType?: string;
  readonly signal?: AbortSignal | undefined;
  /** Deadline for the whole exchange in ms (default `DEFAULT_REQUEST_TIMEOUT_MS`; 0 = none). */
  readonly timeoutMs?: number | undefined;
}

export interface KubeResponse {
  readonly status: number;
  readonly body: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** One line of a watch stream. `object` is a `Status` for `ERROR`. */
export interface WatchEvent {
  readonly type: WatchEventType;
  readonly object: Record<string, unknown>;
}

/** A watch of a collection path (`watch=true` is added to the query). */
export interface WatchRequest extends RequestTarget {
  /** Ends the watch: `ended` resolves. */
  readonly signal: AbortSignal;
  /** How long the response may take to start, in ms (default `DEFAULT_WATCH_CONNECT_TIMEOUT_MS`; 0 = none). */
  readonly timeoutMs?: number | undefined;
}

export interface WatchHandle {
  /** Resolves on a clean close by the server or an abort; rejects when the stream breaks. */
  readonly ended: Promise<void>;
}

export interface KubeTransport {
  /** The API server URL. */
  readonly server: string;
  /** Sends a request; resolves with the parsed JSON body of a 2xx, rejects with KubeApiError otherwise. */
  request(req: KubeRequest): Promise<KubeResponse>;
  /**
   * Opens a watch; resolves once the server answered 200 and calls `onEvent` per event, in
   * order. A non-200 answer rejects with its KubeApiError.
   */
  watch(req: WatchRequest, onEvent: (event: WatchEvent) => void): Promise<WatchHandle>;
  /**
   * A LIST (GET of a collection) read as its body streams in (list-stream.ts): `onItem` gets
   * each item, in order, as soon as it arrived, and nothing holds the page whole; resolves
   * with the list without its items (kind, `metadata`: resourceVersion, continue). A non-2xx
   * answer rejects with its KubeApiError; a body that is not a JSON list with an
   * `InvalidResponse` one; an `onItem` that throws rejects with what it threw.
   */
  list(req: ListRequest, onItem: (item: Record<string, unknown>) => void): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A LIST: a GET of a collection path, its items streamed (`KubeTransport.list`). */
export interface ListRequest extends RequestTarget {
  readonly signal?: AbortSignal | undefined;
  /** Deadline for the whole exchange, body included, in ms (default `DEFAULT_REQUEST_TIMEOUT_MS`; 0 = none). */
  readonly timeoutMs?: number | undefined;
}

export interface TransportOptions {
  readonly authRefreshMs?: number;
  readonly userAgent?: string;
  readonly now?: () => number;
}

/** A response whose headers arrived, with the deadline still running until `disarm()`. */
interface Opened {
  readonly response: http.IncomingMessage;
  readonly disarm: () => void;
}

/** The deadline of a request passed (internal; surfaces as a KubeApiError). */
class DeadlineExceeded extends Error {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`no response within ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/** What a request and a watch share: where the server is, and how to build authenticated request options. */
interface Connection {
  readonly server: string;
  readonly base: URL;
  readonly secure: boolean;
  /**
   * The request options with this transport's credentials and pool. Outside the network
   * error handling on purpose: a credential failure (exec plugin, EKS token) keeps its own message.
   */
  prepare(
    method: KubeRequest['method'],
    body: string | undefined,
    contentType: string | undefined,
    signal: AbortSignal | undefined,
    accept: string | undefined,
  ): Promise<http.RequestOptions>;
  /** The server answered 401: cached credentials and tokens are dropped (the next request asks again). */
  unauthorized(): void;
}

/**
 * A transport to the API server of `auth` — an `EndpointAuth`, or a `KubeConfig` (its current
 * context; see kubeconfig.ts).
 */
export function createTransport(source: EndpointAuth | KubeConfig, options: TransportOptions = {}): KubeTransport {
  const auth = isKubeConfig(source) ? kubeConfigAuth(source) : source;
  const server = auth.server.replace(/\/+$/, '');
  const base = new URL(server);
  const secure = base.protocol === 'https:';
  const credentials = credentialCache(auth, options.authRefreshMs ?? 60_000, options.now ?? Date.now);
  const pool = connectionPool(secure);
  const userAgent = options.userAgent ?? 'operless';
  const connection: Connection = {
    server,
    base,
    secure,
    async prepare(method, body, contentType, signal, accept) {
      const creds = await credentials.get();
      const bearer = auth.bearerToken ? await auth.bearerToken() : undefined;
      return {
        method,
        headers: requestHeaders(creds, userAgent, bearer, body, contentType, accept),
        agent: pool.agentFor(creds),
        ...(signal ? { signal } : {}),
      };
    },
    unauthorized() {
      credentials.clear();
      auth.unauthorized?.();
    },
  };
  return {
    server,
    request: (req) => sendRequest(connection, req),
    watch: (req, onEvent) => openWatch(connection, req, onEvent),
    list: (req, onItem) => sendList(connection, req, onItem),
    async close() {
      pool.destroy();
      credentials.clear();
    },
  };
}

/** `auth.credentials()`, asked again once the last answer is older than `refreshMs`, and at once after a failure. */
function credentialCache(auth: EndpointAuth, refreshMs: number, now: () => number): { get(): Promise<EndpointCredentials>; clear(): void } {
  let cached: { value: Promise<EndpointCredentials>; at: number } | undefined;
  return {
    get() {
      if (!cached || now() - cached.at > refreshMs) {
        const value = auth.credentials();
        cached = { value, at: now() };
        value.catch(() => {
          cached = undefined;
        });
      }
      return cached.value;
    },
    clear() {
      cached = undefined;
    },
  };
}

/** One keep-alive agent, rebuilt (the old one destroyed) only when the TLS material changes. */
function connectionPool(secure: boolean): { agentFor(c: EndpointCredentials): http.Agent; destroy(): void } {
  let pool: { agent: http.Agent; fingerprint: string } | undefined;
  return {
    agentFor(c) {
      const fingerprint = tlsFingerprint(c);
      if (pool?.fingerprint === fingerprint) return pool.agent;
      pool?.agent.destroy();
      const agent = secure ? new https.Agent(tlsAgentOptions(c)) : new http.Agent({ keepAlive: true });
      pool = { agent, fingerprint };
      return agent;
    },
    destroy() {
      pool?.agent.destroy();
      pool = undefined;
    },
  };
}

/** What identifies the TLS material of credentials: equal fingerprints can share a pool. Pure. */
export function tlsFingerprint(c: EndpointCredentials): string {
  return JSON.stringify([String(c.ca ?? ''), String(c.cert ?? ''), String(c.key ?? ''), c.rejectUnauthorized, c.servername]);
}

/** The options of a keep-alive HTTPS agent for `c`: only the TLS settings it gives. Pure. */
export function tlsAgentOptions(c: EndpointCredentials): https.AgentOptions {
  return {
    keepAlive: true,
    ...(c.ca ? { ca: c.ca } : {}),
    ...(c.cert ? { cert: c.cert } : {}),
    ...(c.key ? { key: c.key } : {}),
    ...(c.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    ...(c.servername ? { servername: c.servername } : {}),
  };
}

/** The headers of one request: the credentials' own, accept (JSON unless given), user agent, bearer token, body type and length. Pure. */
export function requestHeaders(
  creds: EndpointCredentials,
  userAgent: string,
  bearerToken: string | undefined,
  body: string | undefined,
  contentType: string | undefined,
  accept?: string,
): Record<string, string> {
  const headers: Record<string, string> = { ...creds.headers, Accept: accept ?? 'application/json', 'User-Agent': userAgent };
  if (bearerToken !== undefined) headers.Authorization = `Bearer ${bearerToken}`;
  if (body !== undefined) {
    headers['Content-Type'] = contentType ?? 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(body));
  }
  return headers;
}

/** The error a request that got no (complete) response fails with: the abort reason, or a KubeApiError with status 0. Pure. */
export function unreachableError(server: string, label: string, signal: AbortSignal | undefined, err: unknown): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof KubeApiError) return err;
  if (err instanceof DeadlineExceeded) {
    return new KubeApiError({
      status: 0,
      reason: 'Timeout',
      request: label,
      message: `${label} got no response from the API server at ${server} within ${err.timeoutMs} ms (check that the server is up and reachable; a very large list may need a longer timeout)`,
      cause: err,
    });
  }
  return new KubeApiError({
    status: 0,
    reason: 'NetworkError',
    request: label,
    message: `${label} could not reach the API server at ${server}: ${errorMessage(err)} (check the endpoint, network path and TLS settings)`,
    cause: err,
  });
}

/** One request: the whole exchange under its deadline, then the status and body judged. */
async function sendRequest(conn: Connection, req: KubeRequest): Promise<KubeResponse> {
  const label = `${req.method} ${req.path}`;
  const body = req.body === undefined ? undefined : JSON.stringify(req.body);
  const url = requestUrl(conn.base, req.path, req.query);
  const init = await conn.prepare(req.method, body, req.contentType, req.signal, req.accept);
  let status: number;
  let text: string;
  let retryAfter: string | null;
  try {
    const { response, disarm } = await send(conn.secure, url, init, body, req.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    try {
      text = await readBody(response);
    } finally {
      disarm();
    }
    status = response.statusCode ?? 0;
    retryAfter = retryAfterOf(response);
  } catch (err) {
    throw unreachableError(conn.server, label, req.signal, err);
  }
  if (status === 401) conn.unauthorized();
  if (status < 200 || status >= 300) throw parseKubeError(label, status, text, retryAfter);
  return { status, body: parseResponseBody(label, status, text) };
}

/**
 * One LIST under its deadline: a 2xx body is scanned as it arrives (`ListScanner`), each item
 * handed to `onItem` and dropped; any other answer is read whole (a Status) and judged as a request's.
 */
async function sendList(conn: Connection, req: ListRequest, onItem: (item: Record<string, unknown>) => void): Promise<Record<string, unknown>> {
  const label = `GET ${req.path}`;
  const url = requestUrl(conn.base, req.path, req.query);
  const init = await conn.prepare('GET', undefined, undefined, req.signal, req.accept);
  /** What the caller's `onItem` threw: it is rethrown as it is, not taken for a network failure. */
  let thrown: { readonly error: unknown } | undefined;
  const deliver = (item: Record<string, unknown>): void => {
    try {
      onItem(item);
    } catch (err) {
      thrown = { error: err };
      throw err;
    }
  };
  let status: number;
  let text = '';
  let retryAfter: string | null = null;
  let envelope: Record<string, unknown> | undefined;
  try {
    const { response, disarm } = await send(conn.secure, url, init, undefined, req.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    try {
      status = response.statusCode ?? 0;
      if (status >= 200 && status < 300) envelope = await scanList(response, label, status, deliver);
      else {
        text = await readBody(response);
        retryAfter = retryAfterOf(response);
      }
    } finally {
      disarm();
    }
  } catch (err) {
    if (thrown) throw thrown.error;
    throw unreachableError(conn.server, label, req.signal, err);
  }
  if (status === 401) conn.unauthorized();
  if (envelope === undefined) throw parseKubeError(label, status, text, retryAfter);
  return envelope;
}

/** The list of a 2xx body without its items, each item given to `onItem` as it arrives; a body that is not a JSON list is an `InvalidResponse`. */
async function scanList(
  response: http.IncomingMessage,
  label: string,
  status: number,
  onItem: (item: Record<string, unknown>) => void,
): Promise<Record<string, unknown>> {
  const scanner = new ListScanner(onItem);
  let failure: unknown;
  try {
    for await (const chunk of response) scanner.push(chunk as Buffer);
    return scanner.finish();
  } catch (err) {
    failure = err;
  }
  if (!(failure instanceof SyntaxError || failure instanceof TypeError)) throw failure;
  throw new KubeApiError({
    status,
    reason: 'InvalidResponse',
    request: label,
    cause: failure,
    message: `${label} returned a body that is not a JSON list: ${errorMessage(failure)}`,
  });
}

/** The JSON of a 2xx body (undefined when empty); a body that is not JSON is an `InvalidResponse`. Pure. */
export function parseResponseBody(label: string, status: number, text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new KubeApiError({ status, reason: 'InvalidResponse', request: label, message: `${label} returned a body that is not JSON: ${text.slice(0, 200)}` });
  }
}

/** Opens a watch under the connect deadline; once it answered 200, streams its events. */
async function openWatch(conn: Connection, req: WatchRequest, onEvent: (event: WatchEvent) => void): Promise<WatchHandle> {
  const { signal } = req;
  const label = `GET ${req.path}`;
  const url = requestUrl(conn.base, req.path, { ...req.query, watch: true });
  const init = await conn.prepare('GET', undefined, undefined, signal, req.accept);
  let opened: Opened | undefined;
  try {
    opened = await send(conn.secure, url, init, undefined, req.timeoutMs ?? DEFAULT_WATCH_CONNECT_TIMEOUT_MS);
    if (opened.response.statusCode !== 200) {
      if (opened.response.statusCode === 401) conn.unauthorized();
      const text = await readBody(opened.response);
      throw parseKubeError(label, opened.response.statusCode ?? 0, text, retryAfterOf(opened.response));
    }
  } catch (err) {
    throw unreachableError(conn.server, label, signal, err);
  } finally {
    // The connect deadline is over either way; silence is the caller's business from here on.
    opened?.disarm();
  }
  return { ended: streamWatchEvents(opened.response, signal, label, conn.server, onEvent) };
}

/**
 * Delivers the events of an open watch response in order, none after an abort. Settles once:
 * resolves on a clean close or an abort; rejects on a broken stream, a line that is not a
 * watch event, or an `onEvent` that throws (the stream is destroyed then).
 */
function streamWatchEvents(
  response: http.IncomingMessage,
  signal: AbortSignal,
  label: string,
  server: string,
  onEvent: (event: WatchEvent) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let pending = '';
    const settle = (err?: unknown): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (err === undefined || signal.aborted) resolve();
      else reject(err);
    };
    const fail = (err: unknown): void => {
      settle(err);
      response.destroy();
    };
    const deliver = (line: string): boolean => {
      const outcome = deliverWatchLine(line, onEvent, label, server);
      if (outcome !== undefined) fail(outcome.error);
      return outcome === undefined;
    };
    const onAbort = (): void => {
      settle();
      response.destroy();
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      if (settled) return;
      const { lines, rest } = takeLines(pending + chunk);
      pending = rest;
      for (const line of lines) if (settled || !deliver(line)) return;
    });
    response.on('end', () => {
      if (!settled && pending && !deliver(pending)) return;
      settle();
    });
    const broken = (detail: string): KubeApiError =>
      new KubeApiError({
        status: 0,
        reason: 'NetworkError',
        request: label,
        message: `${label}: the watch stream from the API server at ${server} broke off: ${detail} (the watch can be resumed from the last resourceVersion)`,
      });
    response.on('error', (err) => settle(broken(errorMessage(err))));
    response.on('close', () => settle(response.complete ? undefined : broken('connection closed mid-stream')));
  });
}

/**
 * Parses one line of a watch stream and hands its event (if any) to `onEvent`. Undefined when
 * the stream may go on; the error that ends it when the line is not a watch event or `onEvent` threw.
 */
export function deliverWatchLine(line: string, onEvent: (event: WatchEvent) => void, label: string, server: string): { error: unknown } | undefined {
  let event: WatchEvent | undefined;
  try {
    event = parseWatchLine(line);
  } catch (err) {
    return {
      error: new KubeApiError({
        status: 200,
        reason: 'InvalidResponse',
        request: label,
        cause: err,
        message: `${label}: the API server at ${server} sent a line that is not a watch event: ${line.slice(0, 200)}`,
      }),
    };
  }
  if (event === undefined) return undefined;
  try {
    onEvent(event);
  } catch (err) {
    return { error: err };
  }
  return undefined;
}

function isKubeConfig(value: EndpointAuth | KubeConfig): value is KubeConfig {
  return typeof (value as KubeConfig).getCurrentCluster === 'function';
}

/** The URL of `path` (which may carry a query string) below `base`, with `query` set on it. Pure. */
export function requestUrl(base: URL, path: string, query: QueryParams | undefined): URL {
  const url = new URL(base.pathname.replace(/\/+$/, '') + path, base);
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
  return url;
}

/** Complete lines of buffered stream text, and the unfinished rest. Pure. */
export function takeLines(buffered: string): { lines: string[]; rest: string } {
  const lines = buffered.split('\n');
  const rest = lines.pop() ?? '';
  return { lines, rest };
}

/** One line of a watch stream: undefined for a blank line; throws if it is not a watch event. Pure. */
export function parseWatchLine(line: string): WatchEvent | undefined {
  if (!line.trim()) return undefined;
  const parsed = JSON.parse(line) as { type?: unknown; object?: unknown } | null;
  if (!parsed || typeof parsed !== 'object' || typeof parsed.type !== 'string' || !parsed.object || typeof parsed.object !== 'object') {
    throw new TypeError('expected {"type": ..., "object": {...}}');
  }
  return parsed as WatchEvent;
}

function retryAfterOf(response: http.IncomingMessage): string | null {
  const value = response.headers['retry-after'];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

async function readBody(response: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Sends one request; resolves when the response headers arrive. Until the returned
 * `disarm()` (or a failure), a deadline of `timeoutMs` (0 = none) runs: when it passes, the
 * request and its response are destroyed with `DeadlineExceeded`.
 */
function send(secure: boolean, url: URL, init: http.RequestOptions, body: string | undefined, timeoutMs: number): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request(url, init);
    let response: http.IncomingMessage | undefined;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            const err = new DeadlineExceeded(timeoutMs);
            response?.destroy(err);
            request.destroy(err);
          }, timeoutMs)
        : undefined;
    const disarm = (): void => clearTimeout(timer);
    request.on('response', (res) => {
      response = res;
      resolve({ response: res, disarm });
    });
    request.on('error', (err) => {
      disarm();
      reject(err);
    });
    request.end(body);
  });
}
