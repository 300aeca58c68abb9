/**
 * The forwarder's view of the Kubernetes API: JSON requests and watch streams, as a thin
 * adapter over the shared transport (src/kube/transport.ts) for the current context of a
 * `KubeConfig` from `@kubernetes/client-node` (kubeconfig file, in-cluster service account
 * with token rotation, exec plugins — whatever KubeConfig supports).
 *
 * Guarantees (the transport's): every request has a timeout; a non-2xx answer becomes the
 * shared `KubeApiError` with the HTTP status and the API server's Status reason/message; a
 * watch stream delivers parsed events in order and settles exactly once (server close,
 * abort, or error). No retries here — retry policy belongs to the caller (watcher, leader
 * election).
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { createTransport, type KubeRequest, type WatchEvent } from '../kube/transport.ts';

export { KubeApiError } from '../kube/errors.ts';

export interface RequestOptions {
  readonly body?: unknown;
  readonly contentType?: string;
  /** Deadline for the whole request (default: the transport's, 60 s). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface KubeApi {
  /** Base URL of the API server (for logs). */
  readonly server: string;
  requestJson<T = unknown>(method: KubeRequest['method'], path: string, options?: RequestOptions): Promise<T>;
  /**
   * Opens a watch; resolves when the response started streaming (after a 200) and calls
   * `onEvent` per line. `ended` settles when the stream ends: resolves on a clean close or
   * an abort, rejects on a transport error. A non-200 answer rejects the returned promise.
   */
  watch(path: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<{ ended: Promise<void> }>;
  /** Closes the pooled connections (the forwarder's `stop()` calls it last). */
  close?(): Promise<void>;
}

/** Creates the adapter for the current context of a KubeConfig. */
export function createKubeApi(kubeConfig: KubeConfig): KubeApi {
  const transport = createTransport(kubeConfig, { userAgent: 'operless-forwarder' });
  return {
    server: transport.server,
    async requestJson<T>(method: KubeRequest['method'], path: string, options: RequestOptions = {}): Promise<T> {
      const { body } = await transport.request({ method, path, ...options });
      return body as T;
    },
    watch: (path, onEvent, signal) => transport.watch({ path, signal }, onEvent),
    close: () => transport.close(),
  };
}
