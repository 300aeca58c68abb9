/**
 * The forwarder's Kubernetes REST adapter: JSON requests and line-delimited watch streams
 * over node:http(s), authenticated and TLS-configured by `KubeConfig` from
 * `@kubernetes/client-node` (kubeconfig file, in-cluster service account with token
 * rotation, exec plugins — whatever KubeConfig supports).
 *
 * Guarantees: every request has a timeout; a non-2xx answer becomes a `KubeApiError` with
 * the HTTP status and the API server's Status reason/message; a watch stream delivers
 * parsed events in order and settles exactly once (server close, abort, or error). No
 * retries here — retry policy belongs to the caller (watcher, leader election).
 */
import http from 'node:http';
import https from 'node:https';
import { createInterface } from 'node:readline';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';

export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string;
  constructor(status: number, reason: string, message: string) {
    super(message);
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
  }
}

export interface WatchEventLine {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: Record<string, unknown>;
}

export interface KubeApi {
  /** Base URL of the API server (for logs). */
  readonly server: string;
  requestJson<T = unknown>(method: string, path: string, options?: { body?: unknown; contentType?: string; timeoutMs?: number; signal?: AbortSignal }): Promise<T>;
  /**
   * Opens a watch; resolves when the response started streaming (after a 200) and calls
   * `onEvent` per line. `ended` settles when the stream ends: resolves on a clean close,
   * rejects on a transport error. A non-200 answer rejects the returned promise.
   */
  watch(path: string, onEvent: (event: WatchEventLine) => void, signal: AbortSignal): Promise<{ ended: Promise<void> }>;
}

/** Creates the adapter for the current context of a KubeConfig. */
export function createKubeApi(kubeConfig: KubeConfig): KubeApi {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) {
    throw new Error('the kubeconfig has no current cluster; set current-context, or run in a pod with a service account');
  }
  const base = cluster.server.replace(/\/+$/, '');

  type Response = http.IncomingMessage & { request: http.ClientRequest };

  async function open(method: string, path: string, body: string | undefined, contentType: string | undefined, signal: AbortSignal | undefined, timeoutMs: number): Promise<Response> {
    const url = new URL(base + path);
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (body !== undefined) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const opts: https.RequestOptions = { method, headers };
    await kubeConfig.applyToHTTPSOptions(opts);
    const mod = url.protocol === 'http:' ? http : https;
    return new Promise((resolve, reject) => {
      const req = mod.request(url, { ...opts, ...(signal ? { signal } : {}) }, (res) => resolve(Object.assign(res, { request: req })));
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no response from ${base} within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async function readAll(res: http.IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  function apiError(method: string, path: string, status: number, text: string): KubeApiError {
    let reason = '';
    let message = text.slice(0, 500);
    try {
      const parsed = JSON.parse(text) as { reason?: string; message?: string };
      reason = parsed.reason ?? '';
      message = parsed.message ?? message;
    } catch {
      // not a Status object
    }
    return new KubeApiError(status, reason, `${method} ${path} failed with HTTP ${status}${reason ? ` ${reason}` : ''}: ${message}`);
  }

  return {
    server: base,
    async requestJson<T>(method: string, path: string, options: { body?: unknown; contentType?: string; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<T> {
      const body = options.body === undefined ? undefined : JSON.stringify(options.body);
      const res = await open(method, path, body, options.contentType, options.signal, options.timeoutMs ?? 30_000);
      const text = await readAll(res);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw apiError(method, path, status, text);
      return (text ? JSON.parse(text) : undefined) as T;
    },
    async watch(path, onEvent, signal) {
      const res = await open('GET', path, undefined, undefined, signal, 30_000);
      const status = res.statusCode ?? 0;
      if (status !== 200) {
        const text = await readAll(res);
        throw apiError('GET', path, status, text);
      }
      // The connect timeout is over; silence is the watcher's business from here on.
      res.request.setTimeout(0);
      const ended = new Promise<void>((resolve, reject) => {
        const lines = createInterface({ input: res, crlfDelay: Infinity });
        lines.on('line', (line) => {
          if (!line.trim()) return;
          let event: WatchEventLine;
          try {
            event = JSON.parse(line) as WatchEventLine;
          } catch {
            return;
          }
          onEvent(event);
        });
        const onError = (err: Error) => (signal.aborted ? resolve() : reject(err));
        res.on('error', onError);
        lines.on('error', onError);
        res.on('aborted', () => (signal.aborted ? resolve() : reject(new Error(`watch ${path} was cut off by ${base}`))));
        lines.on('close', () => resolve());
      });
      return { ended };
    },
  };
}
