/**
 * The harness's own small HTTP(S) client: readiness probes, CRD installation and identity
 * minting talk to the API server and etcd with it, so the harness does not depend on the
 * behaviour of the client library under test.
 *
 * Guarantees: never throws for an HTTP status (the caller reads `status`); rejects on network
 * errors and after `timeoutMs` (default 10 s); TLS is verified against the given CA.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface HttpResponse {
  readonly status: number;
  readonly body: string;
}

export interface HttpRequestOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** PEM CA bundle to verify an https server with. */
  readonly ca?: string;
  /** Skip TLS verification (only for liveness probes of self-signed components). */
  readonly insecure?: boolean;
  readonly timeoutMs?: number;
}

export function httpCall(url: string, options: HttpRequestOptions = {}): Promise<HttpResponse> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      { method: options.method ?? 'GET', headers, ca: options.ca, rejectUnauthorized: !options.insecure, timeout: options.timeoutMs ?? 10_000, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${target.origin} within ${options.timeoutMs ?? 10_000} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Parses a JSON body, with the status and a body excerpt in the error when it is not JSON. */
export function jsonBody<T>(response: HttpResponse): T {
  try {
    return JSON.parse(response.body) as T;
  } catch {
    throw new Error(`expected JSON, got HTTP ${response.status}: ${response.body.slice(0, 300)}`);
  }
}
