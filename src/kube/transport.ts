/**
 * The HTTP transport to one API server: `fetch` (undici) with the TLS settings and
 * credentials of a `KubeConfig`. Only `KubeConfig` is used from `@kubernetes/client-node`
 * (imported from its `dist/config.js` module, not the package index, which would pull every
 * generated API class into the function bundle).
 *
 * Guarantees:
 * - one undici dispatcher (connection pool) per transport, reused across warm invocations;
 * - credentials are re-read from the KubeConfig at most every `authRefreshMs` (exec and
 *   token-file users rotate), or taken from `bearerToken()` when given (EKS tokens);
 * - a request that never gets a response fails with `KubeApiError{ status: 0 }` naming the
 *   server and the network error, never with a bare `fetch failed`.
 */
import { fetch, type Dispatcher } from 'undici';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { errorMessage } from '../observability/log.ts';
import { KubeApiError, parseKubeError } from './errors.ts';

export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly signal?: AbortSignal | undefined;
}

export interface KubeResponse {
  readonly status: number;
  readonly body: unknown;
}

export interface KubeTransport {
  /** The API server URL. */
  readonly server: string;
  /** Sends a request; resolves with the parsed JSON body of a 2xx, rejects with KubeApiError otherwise. */
  request(req: KubeRequest): Promise<KubeResponse>;
  close(): Promise<void>;
}

export interface TransportOptions {
  /** Supplies the bearer token (overrides the KubeConfig's user), e.g. an EKS token. */
  readonly bearerToken?: () => Promise<string>;
  readonly authRefreshMs?: number;
  readonly userAgent?: string;
  readonly now?: () => number;
}

interface Auth {
  headers: Record<string, string>;
  dispatcher: Dispatcher | undefined;
}

export function createTransport(kc: KubeConfig, options: TransportOptions = {}): KubeTransport {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new Error(`the kubeconfig has no current cluster (current-context "${kc.getCurrentContext()}"); set current-context or pass a kubeconfig with one cluster`);
  }
  const server = cluster.server.replace(/\/+$/, '');
  const refreshMs = options.authRefreshMs ?? 60_000;
  const now = options.now ?? Date.now;
  const userAgent = options.userAgent ?? 'operless';
  let auth: { value: Promise<Auth>; at: number } | undefined;
  let dispatcher: Dispatcher | undefined;

  const loadAuth = async (): Promise<Auth> => {
    const headers: Record<string, string> = {};
    let fresh: Dispatcher | undefined;
    await kc.applySecurityAuthentication({
      setHeaderParam: (key: string, value: string) => { headers[key] = value; },
      setDispatcher: (d: Dispatcher) => { fresh = d; },
    } as unknown as Parameters<KubeConfig['applySecurityAuthentication']>[0]);
    if (dispatcher === undefined) dispatcher = fresh;
    else if (fresh && fresh !== dispatcher) void fresh.close().catch(() => {});
    return { headers, dispatcher };
  };

  const currentAuth = (): Promise<Auth> => {
    if (!auth || now() - auth.at > refreshMs) {
      const value = loadAuth();
      auth = { value, at: now() };
      value.catch(() => { auth = undefined; });
    }
    return auth.value;
  };

  return {
    server,
    async request(req: KubeRequest): Promise<KubeResponse> {
      const { headers: authHeaders, dispatcher: pool } = await currentAuth();
      const headers: Record<string, string> = { ...authHeaders, Accept: 'application/json', 'User-Agent': userAgent };
      if (options.bearerToken) headers.Authorization = `Bearer ${await options.bearerToken()}`;
      let body: string | undefined;
      if (req.body !== undefined) {
        body = JSON.stringify(req.body);
        headers['Content-Type'] = req.contentType ?? 'application/json';
      }
      const url = new URL(server + req.path);
      for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      const label = `${req.method} ${req.path}`;
      let response;
      try {
        response = await fetch(url, {
          method: req.method,
          headers,
          ...(body === undefined ? {} : { body }),
          ...(pool ? { dispatcher: pool } : {}),
          ...(req.signal ? { signal: req.signal } : {}),
        });
      } catch (err) {
        if (req.signal?.aborted) throw req.signal.reason ?? err;
        const cause = (err as { cause?: unknown }).cause;
        throw new KubeApiError({
          status: 0,
          reason: 'NetworkError',
          request: label,
          message: `${label} could not reach the API server at ${server}: ${errorMessage(cause ?? err)} (check the endpoint, network path and TLS settings)`,
          cause: err,
        });
      }
      const text = await response.text();
      if (response.status < 200 || response.status >= 300) {
        throw parseKubeError(label, response.status, text, response.headers.get('retry-after'));
      }
      let parsed: unknown = undefined;
      if (text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          throw new KubeApiError({ status: response.status, reason: 'InvalidResponse', request: label, message: `${label} returned a body that is not JSON: ${text.slice(0, 200)}` });
        }
      }
      return { status: response.status, body: parsed };
    },
    async close() {
      const d = dispatcher;
      dispatcher = undefined;
      auth = undefined;
      if (d) await d.close();
    },
  };
}
