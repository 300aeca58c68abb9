/**
 * `KubeClient` over a `KubeTransport`: one method, one request, no cache, so a reconcile
 * always works on the live state.
 *
 * - `get` of a missing object resolves to `undefined` (not an error); `delete` of a missing
 *   object succeeds (deletes are idempotent).
 * - `apply`/`applyStatus` are server-side apply: `PATCH` with
 *   `Content-Type: application/apply-patch+yaml` (JSON is valid YAML), the client's
 *   `fieldManager`, and `force=true` by default — a controller owns the fields it applies,
 *   like controller-runtime's `client.ForceOwnership`.
 * - `list` fills in `apiVersion`/`kind` on items (the API server leaves them out).
 * - `apply` drops `metadata.managedFields`, so a live object can be applied back as-is.
 * - Every failure is a `KubeApiError` (errors.ts).
 */
import type { KindRef, KubeClient, KubeObject } from './types.ts';
import { isNotFound } from './errors.ts';
import { resourcePath } from './paths.ts';
import type { KubeTransport } from './transport.ts';

export const APPLY_PATCH = 'application/apply-patch+yaml';
export const MERGE_PATCH = 'application/merge-patch+json';

export interface ClientOptions {
  /** Field manager for server-side apply. */
  readonly fieldManager: string;
  /** Aborts every request of this client (a reconcile's time budget). */
  readonly signal?: AbortSignal | undefined;
}

export interface BoundKubeClient extends KubeClient {
  readonly fieldManager: string;
  readonly transport: KubeTransport;
  /** The same client with another field manager and/or abort signal. */
  with(options: Partial<ClientOptions>): BoundKubeClient;
}

export function createKubeClient(transport: KubeTransport, options: ClientOptions): BoundKubeClient {
  const { fieldManager, signal } = options;
  const nsOf = (kind: KindRef, object: KubeObject): string | undefined => (kind.namespaced ? object.metadata.namespace : undefined);
  const applyTo = async <T>(kind: KindRef, object: KubeObject, subresource: 'status' | undefined, force: boolean): Promise<T> => {
    if (!object.metadata?.name) throw new TypeError(`cannot apply a ${kind.kind} without metadata.name`);
    const path = resourcePath(kind, { namespace: nsOf(kind, object), name: object.metadata.name, subresource });
    // A live object passed back as-is must not carry managedFields (the API server rejects them in an apply).
    const { managedFields: _managed, ...metadata } = object.metadata;
    const body = { ...object, apiVersion: object.apiVersion ?? kind.apiVersion, kind: object.kind ?? kind.kind, metadata };
    const res = await transport.request({
      method: 'PATCH',
      path,
      body,
      contentType: APPLY_PATCH,
      signal,
      query: { fieldManager, force },
    });
    return res.body as T;
  };
  const client: BoundKubeClient = {
    fieldManager,
    transport,
    with: (changes) => createKubeClient(transport, { fieldManager, signal, ...changes }),
    async get<T extends KubeObject>(kind: KindRef, name: string, namespace?: string): Promise<T | undefined> {
      try {
        const res = await transport.request({ method: 'GET', path: resourcePath(kind, { namespace, name }), signal });
        return res.body as T;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async list<T extends KubeObject>(kind: KindRef, opts: { namespace?: string; labelSelector?: string; limit?: number; continue?: string } = {}) {
      const res = await transport.request({
        method: 'GET',
        path: resourcePath(kind, { namespace: opts.namespace }),
        query: { labelSelector: opts.labelSelector, limit: opts.limit, continue: opts.continue },
        signal,
      });
      const list = res.body as { items?: T[]; metadata?: { continue?: string; resourceVersion?: string } };
      const items = (list.items ?? []).map((item) => ({ ...item, apiVersion: kind.apiVersion, kind: kind.kind }) as T);
      const next = list.metadata?.continue;
      return { items, resourceVersion: list.metadata?.resourceVersion ?? '', ...(next ? { continue: next } : {}) };
    },
    apply: <T extends KubeObject>(kind: KindRef, object: KubeObject, opts: { force?: boolean } = {}) => applyTo<T>(kind, object, undefined, opts.force ?? true),
    applyStatus: <T extends KubeObject>(kind: KindRef, object: KubeObject) => applyTo<T>(kind, object, 'status', true),
    async mergePatch<T extends KubeObject>(kind: KindRef, name: string, namespace: string | undefined, patch: object): Promise<T> {
      const res = await transport.request({
        method: 'PATCH',
        path: resourcePath(kind, { namespace, name }),
        body: patch,
        contentType: MERGE_PATCH,
        signal,
      });
      return res.body as T;
    },
    async delete(kind: KindRef, name: string, namespace?: string): Promise<void> {
      try {
        await transport.request({ method: 'DELETE', path: resourcePath(kind, { namespace, name }), signal });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
    async create<T extends KubeObject>(kind: KindRef, object: KubeObject): Promise<T> {
      if (kind.namespaced && !object.metadata.namespace) {
        throw new TypeError(`${kind.kind} is namespaced: set metadata.namespace to create "${object.metadata.name}"`);
      }
      const res = await transport.request({
        method: 'POST',
        path: resourcePath(kind, { namespace: nsOf(kind, object) }),
        body: { ...object, apiVersion: object.apiVersion ?? kind.apiVersion, kind: object.kind ?? kind.kind },
        signal,
      });
      return res.body as T;
    },
  };
  return client;
}
