/**
 * `coordination.k8s.io/v1` Leases over the raw-path API (api.ts): the object, its path, and
 * get / create / update — what leader election needs, and no election policy (that is the
 * caller's: see the forwarder's leader.ts).
 *
 * Guarantees: `get` of a missing Lease resolves to `undefined`; every other failure rejects
 * with the `KubeApiError` of the API server, unchanged — in particular an `update` whose
 * `metadata.resourceVersion` is stale fails with 409 Conflict, which is what makes two
 * candidates unable to both win one round. Lease times are `MicroTime` (time.ts).
 */
import { LEASES } from './kinds.ts';
import type { KubeApi, RequestOptions } from './api.ts';
import { isNotFound } from './errors.ts';
import { collectionPath, resourcePath } from './paths.ts';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** MicroTime. */
  acquireTime?: string;
  /** MicroTime. */
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string; [k: string]: unknown };
  spec?: LeaseSpec;
}

/** Deadline and cancellation of one Lease request. */
export type LeaseRequestOptions = Pick<RequestOptions, 'timeoutMs' | 'signal'>;

export interface LeaseClient {
  /** The Lease, or undefined when there is none. */
  get(namespace: string, name: string, options?: LeaseRequestOptions): Promise<Lease | undefined>;
  /** Creates `lease` (409 AlreadyExists if another did first). */
  create(lease: Lease, options?: LeaseRequestOptions): Promise<Lease>;
  /** Replaces `lease`, guarded by its `metadata.resourceVersion` (409 Conflict when stale). */
  update(lease: Lease, options?: LeaseRequestOptions): Promise<Lease>;
}

/** The path of a Lease (`name` given) or of a namespace's Leases. Pure. */
export function leasePath(namespace: string, name?: string): string {
  return name === undefined ? collectionPath(LEASES, namespace) : resourcePath(LEASES, { namespace, name });
}

export function leaseClient(api: Pick<KubeApi, 'requestJson'>): LeaseClient {
  return {
    async get(namespace, name, options = {}) {
      try {
        return await api.requestJson<Lease>('GET', leasePath(namespace, name), options);
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    create: (lease, options = {}) => api.requestJson<Lease>('POST', leasePath(lease.metadata.namespace), { ...options, body: lease }),
    update: (lease, options = {}) => api.requestJson<Lease>('PUT', leasePath(lease.metadata.namespace, lease.metadata.name), { ...options, body: lease }),
  };
}
