/** Test fixtures: a stored Memcached (defaults applied, as the API server returns it), pods, Deployments. */
import type { Memcached, MemcachedSpec } from '../../../src/memcached/types.ts';
import type { DeploymentView, PodView } from '../../../src/memcached/status.ts';

export function memcached(spec: Partial<MemcachedSpec> = {}, extra: Partial<Memcached> = {}): Memcached {
  return {
    apiVersion: 'cache.example.com/v1alpha1',
    kind: 'Memcached',
    metadata: { name: 'cache', namespace: 'shop', uid: 'uid-1', generation: 2, resourceVersion: '10' },
    spec: { size: 3, image: 'memcached:1.6.38-alpine', port: 11211, memoryLimitMB: 64, ...spec },
    ...extra,
  };
}

export function pod(name: string, options: { ready?: boolean; phase?: string; deleting?: boolean } = {}): PodView {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'shop', ...(options.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    status: {
      phase: options.phase ?? 'Running',
      conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True' }],
    },
  };
}

export function deployment(size: number, status: DeploymentView['status'], generation = 1): DeploymentView {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'cache', namespace: 'shop', generation },
    spec: { replicas: size },
    status,
  };
}

export const settledStatus = (n: number) => ({ observedGeneration: 1, replicas: n, updatedReplicas: n, readyReplicas: n, availableReplicas: n });
