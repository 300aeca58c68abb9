/**
 * Creating Memcached objects for the scenarios: many at once, with bounded parallelism
 * (as fast as the API server takes them), and spec updates that bump the generation.
 */
import { DEPLOYMENTS } from '../../src/kube/kinds.ts';
import type { BoundKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { MEMCACHED_KIND } from './systems.ts';
import { waitUntil } from '../../src/testing/wait.ts';

export function names(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
}

/** Runs `task` over `items` with at most `parallel` in flight. */
export async function forEachParallel<T>(items: readonly T[], parallel: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        await task(item);
      }
    }),
  );
}

/** Creates the Memcacheds of `list` with `spec.size` and whatever `spec` adds to each one's spec. */
export async function createMemcacheds(
  client: BoundKubeClient,
  namespace: string,
  list: readonly string[],
  size: number,
  parallel = 20,
  spec: (name: string) => Record<string, unknown> = () => ({}),
): Promise<void> {
  await forEachParallel(list, parallel, async (name) => {
    await client.create(MEMCACHED_KIND, {
      apiVersion: MEMCACHED_KIND.apiVersion,
      kind: MEMCACHED_KIND.kind,
      metadata: { name, namespace },
      spec: { size, ...spec(name) },
    });
  });
}

/** Sets spec.size; returns the new generation. */
export async function setSize(client: BoundKubeClient, namespace: string, name: string, size: number): Promise<number> {
  const updated = await client.mergePatch(MEMCACHED_KIND, name, namespace, { spec: { size } });
  return updated.metadata.generation ?? 0;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 50 ms until true or the timeout (then throws saying what). */
export const until = (what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> =>
  waitUntil(what, check, { timeoutMs, intervalMs: 50 });

/**
 * Memcacheds `mc-<i>` for i in [from, to), each with the Deployment its reconcile would create
 * (controlled by it): primaries and children, as many of each, for the memory figures. With no
 * kube-controller-manager running the Deployments stay without ReplicaSets, pods or status.
 */
export async function createMemcachedsWithDeployments(client: BoundKubeClient, namespace: string, from: number, to: number, parallel = 32): Promise<void> {
  const indexes = Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
  await forEachParallel(indexes, parallel, async (i) => {
    const name = `mc-${String(i).padStart(6, '0')}`;
    const owner = await client.create(MEMCACHED_KIND, {
      apiVersion: MEMCACHED_KIND.apiVersion,
      kind: MEMCACHED_KIND.kind,
      metadata: { name, namespace },
      spec: { size: 1 },
    });
    await client.create(DEPLOYMENTS, deploymentOf(namespace, name, owner.metadata.uid ?? ''));
  });
}

/** A Deployment as a Memcached's reconcile creates it, controlled by the Memcached `owner`. Pure. */
export function deploymentOf(namespace: string, owner: string, ownerUid: string): KubeObject {
  const labels = { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': owner, 'app.kubernetes.io/managed-by': 'operless' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: owner,
      namespace,
      labels,
      ownerReferences: [
        { apiVersion: MEMCACHED_KIND.apiVersion, kind: MEMCACHED_KIND.kind, name: owner, uid: ownerUid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'memcached',
              image: 'memcached:1.6.26-alpine3.19',
              command: ['memcached', '--memory-limit=64', '-o', 'modern', '-v'],
              ports: [{ containerPort: 11211, name: 'memcached' }],
              securityContext: { runAsNonRoot: true, runAsUser: 1001, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            },
          ],
        },
      },
    },
  };
}
