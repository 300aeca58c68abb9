/**
 * The HTTP transport to one API server: `node:https` with a keep-alive connection pool and
 * the TLS settings and credentials of an `EndpointAuth`. Nothing else is loaded: no HTTP
 * library, no generated API classes, so a function's cold start stays small.
 *
 * Where credentials come from is the caller's choice (see kubeconfig.ts for a `KubeConfig`,
 * eks.ts for EKS): `EndpointAuth.credentials()` is asked again at most every
 * `authRefreshMs` (exec and token-file users rotate), and `bearerToken()` — when given — on
 * every request (it caches itself; EKS tokens).
 *
 * Guarantees:
 * - one connection pool per transport, reused across warm invocations, rebuilt only when
 *   the TLS material changes;
 * - a request that never gets a response fails with `KubeApiError{ status: 0 }` naming the
 *   server and the network error, never with a bare socket error;
 * - an aborted request rejects with the signal's reason.
 */
import http from 'node:http';
import https from 'node:https';
import { errorMessage } from '../observability/log.ts';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { KubeApiError, parseKubeError } from './errors.ts';
import { kubeConfigAuth } from './kubeconfig.ts';

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

/** TLS material and headers for one API server. */
export interface EndpointCredentials {
  readonly ca?: Buffer | string | undefined;
  readonly cert?: Buffer | string | undefined;
  readonly key?: Buffer | string | undefined;
  /** false only for `insecure-skip-tls-verify`. */
  readonly rejectUnauthorized?: boolean | undefined;
  readonly servername?: string | undefined;
  /** Authorization and other headers. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface EndpointAuth {
  /** `https://host:port` (or `http://` for a plain-text test server). */
  readonly server: string;
  credentials(): Promise<EndpointCredentials>;
  /** Supplies a bearer token per request, overriding `credentials().headers.Authorization`. */
  readonly bearerToken?: () => Promise<string>;
}

export interface KubeTransport {
  /** The API server URL. */
  readonly server: string;
  /** Sends a request; resolves with the parsed JSON body of a 2xx, rejects with KubeApiError otherwise. */
  request(req: KubeRequest): Promise<KubeResponse>;
  close(): Promise<void>;
}

export interface TransportOptions {
  readonly authRefreshMs?: number;
  readonly userAgent?: string;
  readonly now?: () => number;
}

interface Pool {
  agent: http.Agent;
  fingerprint: string;
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
  const refreshMs = options.authRefreshMs ?? 60_000;
  const now = options.now ?? Date.now;
  const userAgent = options.userAgent ?? 'operless';
  let cached: { value: Promise<EndpointCredentials>; at: number } | undefined;
  let pool: Pool | undefined;

  const credentials = (): Promise<EndpointCredentials> => {
    if (!cached || now() - cached.at > refreshMs) {
      const value = auth.credentials();
      cached = { value, at: now() };
      value.catch(() => { cached = undefined; });
    }
    return cached.value;
  };

  const agentFor = (c: EndpointCredentials): http.Agent => {
    const fingerprint = JSON.stringify([String(c.ca ?? ''), String(c.cert ?? ''), String(c.key ?? ''), c.rejectUnauthorized, c.servername]);
    if (pool?.fingerprint === fingerprint) return pool.agent;
    pool?.agent.destroy();
    const agent = secure
      ? new https.Agent({
        keepAlive: true,
        ...(c.ca ? { ca: c.ca } : {}),
        ...(c.cert ? { cert: c.cert } : {}),
        ...(c.key ? { key: c.key } : {}),
        ...(c.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
        ...(c.servername ? { servername: c.servername } : {}),
      })
      : new http.Agent({ keepAlive: true });
    pool = { agent, fingerprint };
    return agent;
  };

  return {
    server,
    async request(req: KubeRequest): Promise<KubeResponse> {
      const label = `${req.method} ${req.path}`;
      const creds = await credentials();
      const headers: Record<string, string> = { ...creds.headers, Accept: 'application/json', 'User-Agent': userAgent };
      if (auth.bearerToken) headers.Authorization = `Bearer ${await auth.bearerToken()}`;
      let body: string | undefined;
      if (req.body !== undefined) {
        body = JSON.stringify(req.body);
        headers['Content-Type'] = req.contentType ?? 'application/json';
        headers['Content-Length'] = String(Buffer.byteLength(body));
      }
      const url = new URL(base.pathname.replace(/\/+$/, '') + req.path, base);
      for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      const { status, text, retryAfter } = await send(secure, url, {
        method: req.method, headers, agent: agentFor(creds), ...(req.signal ? { signal: req.signal } : {}),
      }, body).catch((err: unknown) => {
        if (req.signal?.aborted) throw req.signal.reason ?? err;
        throw new KubeApiError({
          status: 0,
          reason: 'NetworkError',
          request: label,
          message: `${label} could not reach the API server at ${server}: ${errorMessage(err)} (check the endpoint, network path and TLS settings)`,
          cause: err,
        });
      });
      if (status < 200 || status >= 300) throw parseKubeError(label, status, text, retryAfter);
      let parsed: unknown = undefined;
      if (text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          throw new KubeApiError({ status, reason: 'InvalidResponse', request: label, message: `${label} returned a body that is not JSON: ${text.slice(0, 200)}` });
        }
      }
      return { status, body: parsed };
    },
    async close() {
      pool?.agent.destroy();
      pool = undefined;
      cached = undefined;
    },
  };
}

function isKubeConfig(value: EndpointAuth | KubeConfig): value is KubeConfig {
  return typeof (value as KubeConfig).getCurrentCluster === 'function';
}

function send(
  secure: boolean,
  url: URL,
  init: http.RequestOptions,
  body: string | undefined,
): Promise<{ status: number; text: string; retryAfter: string | null }> {
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request(url, init, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const retryAfter = res.headers['retry-after'];
        resolve({
          status: res.statusCode ?? 0,
          text: Buffer.concat(chunks).toString('utf8'),
          retryAfter: Array.isArray(retryAfter) ? (retryAfter[0] ?? null) : (retryAfter ?? null),
        });
      });
    });
    request.on('error', reject);
    request.end(body);
  });
}
