/**
 * Raw-path access to the Kubernetes API: JSON requests and watch streams on paths the caller
 * built (paths.ts), for code that works on collections rather than typed objects — the
 * forwarder's lists, watches, discovery and Lease. A thin view of the shared transport
 * (transport.ts), so it has the transport's guarantees and no others:
 * - every request has a deadline (the transport's default, or `timeoutMs`);
 * - a non-2xx answer rejects with the shared `KubeApiError` (HTTP status, the API server's
 *   Status reason and message); a request that gets no response, with `KubeApiError{status: 0}`;
 * - a watch resolves once the server answered 200 and delivers parsed events in order; its
 *   `ended` settles once — resolves on a clean close or an abort, rejects on a broken stream;
 * - no retries: retry policy belongs to the caller (watcher, leader election).
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { EndpointAuth } from './endpoint.ts';
import { createTransport, type KubeRequest, type KubeTransport, type QueryParams, type TransportOptions, type WatchEvent } from './transport.ts';

export { KubeApiError } from './errors.ts';

export interface RequestOptions {
  readonly body?: unknown;
  readonly contentType?: string;
  /** The `Accept` header (default `application/json`). */
  readonly accept?: string;
  /** Query parameters, set on top of a query string the path may carry. */
  readonly query?: QueryParams;
  /** Deadline for the whole request (default: the transport's, 60 s). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface WatchOptions {
  /** Query parameters, set on top of a query string the path may carry (`watch=true` is always added). */
  readonly query?: QueryParams;
  /** The `Accept` header (default `application/json`), e.g. `PARTIAL_METADATA_WATCH`. */
  readonly accept?: string;
}

/**
 * Media types that make the API server send only objects' metadata (`PartialObjectMetadata`:
 * apiVersion meta.k8s.io/v1, kind, full `metadata` — no spec, no status), for any resource
 * including custom ones: one for a LIST (`PartialObjectMetadataList`), one for a watch (its
 * events carry `PartialObjectMetadata`). Plain JSON is the fallback a server without the
 * conversion may answer with.
 */
export const PARTIAL_METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json';
export const PARTIAL_METADATA_WATCH = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json';

export interface KubeApi {
  /** Base URL of the API server (for logs). */
  readonly server: string;
  /** The parsed JSON body of a 2xx answer to `method path` (undefined for an empty body). */
  requestJson<T = unknown>(method: KubeRequest['method'], path: string, options?: RequestOptions): Promise<T>;
  /**
   * Opens a watch on a collection path with `options.query` (`watch=true` is added);
   * resolves when the response started streaming (after a 200) and calls `onEvent`
   * per event. `ended` settles when the stream ends: resolves on a clean close or an abort,
   * rejects on a transport error. A non-200 answer rejects the returned promise.
   */
  watch(path: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal, options?: WatchOptions): Promise<{ ended: Promise<void> }>;
  /**
   * GETs a collection path and hands each item to `onItem` as the body streams in, in order,
   * never holding the page whole (transport.ts, `list`); resolves with the list without its
   * items (its `metadata`: resourceVersion, continue).
   */
  listItems(
    path: string,
    onItem: (item: Record<string, unknown>) => void,
    options?: Omit<RequestOptions, 'body' | 'contentType'>,
  ): Promise<Record<string, unknown>>;
  /** Closes the pooled connections. */
  close?(): Promise<void>;
}

/** The raw-path view of `transport`. */
export function kubeApiOf(transport: KubeTransport): KubeApi {
  return {
    server: transport.server,
    async requestJson<T>(method: KubeRequest['method'], path: string, options: RequestOptions = {}): Promise<T> {
      const { body } = await transport.request({ method, path, ...options });
      return body as T;
    },
    watch: (path, onEvent, signal, options = {}) => transport.watch({ path, signal, ...options }, onEvent),
    listItems: (path, onItem, options = {}) => transport.list({ path, ...options }, onItem),
    close: () => transport.close(),
  };
}

/** A raw-path API on a transport of its own to the server of `source` (a `KubeConfig`'s current context, or an `EndpointAuth`). */
export function createKubeApi(source: KubeConfig | EndpointAuth, options: TransportOptions = {}): KubeApi {
  return kubeApiOf(createTransport(source, options));
}
