/**
 * Watches the Memcached objects of one namespace (one watch stream, like `kubectl get -w`)
 * and records, per object, when its status first reported each generation
 * (`status.observedGeneration`) and when it first was `Available=True` at its current
 * generation. The same observer for both systems, so neither side's clock is trusted.
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { createKubeApi } from '../../src/kube/api.ts';

interface Seen {
  generation: number;
  observedGeneration: number;
  available: boolean;
}

export interface Tracker {
  /** Objects currently Available at their current generation. */
  availableCount(): number;
  /** Resolves when `names` are all Available at their current generation; returns the time (ms epoch). */
  whenAllAvailable(names: readonly string[], timeoutMs: number): Promise<number>;
  /** Resolves with the time status.observedGeneration of `name` first reached ≥ `generation`. */
  whenObserved(name: string, generation: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startTracker(kubeConfig: KubeConfig, namespace: string): Promise<Tracker> {
  const api = createKubeApi(kubeConfig);
  const seen = new Map<string, Seen>();
  const observedWaiters = new Map<string, { generation: number; resolve: (at: number) => void }[]>();
  let onChange: (() => void) | undefined;
  const abort = new AbortController();

  const handle = (object: Record<string, unknown>) => {
    const meta = object.metadata as { name: string; generation?: number };
    const status = (object.status ?? {}) as { observedGeneration?: number; conditions?: { type: string; status: string; observedGeneration?: number }[] };
    const generation = meta.generation ?? 0;
    const observedGeneration = status.observedGeneration ?? 0;
    const available = observedGeneration === generation && (status.conditions ?? []).some((c) => c.type === 'Available' && c.status === 'True');
    seen.set(meta.name, { generation, observedGeneration, available });
    const waiters = observedWaiters.get(meta.name);
    if (waiters) {
      const now = Date.now();
      const still = waiters.filter((w) => {
        if (observedGeneration >= w.generation) {
          w.resolve(now);
          return false;
        }
        return true;
      });
      observedWaiters.set(meta.name, still);
    }
    onChange?.();
  };

  const { loop } = await listAndWatch(
    api,
    `/apis/cache.example.com/v1alpha1/namespaces/${encodeURIComponent(namespace)}/memcacheds`,
    {
      upsert: handle,
      remove: (object) => seen.delete((object.metadata as { name: string }).name),
    },
    abort.signal,
  );

  return {
    availableCount: () => [...seen.values()].filter((s) => s.available).length,
    whenAllAvailable(names, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (names.every((n) => seen.get(n)?.available)) {
            onChange = undefined;
            clearTimeout(timer);
            resolve(Date.now());
          }
        };
        const timer = setTimeout(() => {
          onChange = undefined;
          const missing = names.filter((n) => !seen.get(n)?.available);
          reject(
            new Error(
              `${missing.length} of ${names.length} objects in ${namespace} not Available after ${timeoutMs} ms (e.g. ${missing.slice(0, 3).join(', ')})`,
            ),
          );
        }, timeoutMs);
        onChange = check;
        check();
      });
    },
    whenObserved(name, generation) {
      const s = seen.get(name);
      if (s && s.observedGeneration >= generation) return Promise.resolve(Date.now());
      return new Promise((resolve) => {
        const list = observedWaiters.get(name) ?? [];
        list.push({ generation, resolve });
        observedWaiters.set(name, list);
      });
    },
    async stop() {
      abort.abort();
      await loop;
    },
  };
}

/** What a `listAndWatch` tells its user: an object listed, added or modified; an object deleted. */
export interface CollectionHandlers {
  readonly upsert: (object: Record<string, unknown>) => void;
  readonly remove?: (object: Record<string, unknown>) => void;
}

/**
 * Lists a collection, hands every item to `upsert`, then watches it from the list's
 * resourceVersion (with bookmarks) until `signal` aborts, reopening a watch that ends or fails
 * (after 200 ms). Resolves once the list is handled, with the watch loop (ended by `signal`);
 * the loop is wrapped in an object, since a promise resolved with a promise would wait for it.
 */
export async function listAndWatch(
  api: ReturnType<typeof createKubeApi>,
  base: string,
  on: CollectionHandlers,
  signal: AbortSignal,
): Promise<{ readonly loop: Promise<void> }> {
  const list = await api.requestJson<{ metadata: { resourceVersion: string }; items: Record<string, unknown>[] }>('GET', base);
  for (const item of list.items) on.upsert(item);
  let resourceVersion = list.metadata.resourceVersion;
  const loop = (async () => {
    while (!signal.aborted) {
      try {
        const { ended } = await api.watch(
          `${base}?watch=1&allowWatchBookmarks=true&resourceVersion=${resourceVersion}&timeoutSeconds=300`,
          (event) => {
            const rv = (event.object.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
            if (rv) resourceVersion = rv;
            if (event.type === 'ADDED' || event.type === 'MODIFIED') on.upsert(event.object);
            else if (event.type === 'DELETED') on.remove?.(event.object);
          },
          signal,
        );
        await ended;
      } catch {
        if (!signal.aborted) await new Promise((r) => setTimeout(r, 200));
      }
    }
  })();
  return { loop };
}
