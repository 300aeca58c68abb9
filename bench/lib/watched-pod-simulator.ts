/**
 * The benchmark's simulated kubelet: marks every pod Running and Ready through its status
 * subresource (the dev loop's `simulatedStatus`, src/local/pod-simulator.ts), driven by one
 * watch of every pod, as a kubelet watches its node's pods — not by the dev loop's LIST of every
 * pod each 300 ms, whose cost on the API server grows with the pods held and the run's length and
 * so charges a slower system more for the same work (issue 33: the stand-ins must not decide the
 * comparison). Its work per pod is one status write, whatever system runs beside it.
 *
 * Guarantees: every pod the watch shows needing it (`needsSimulation`) is written, at most
 * `parallel` at a time, the newest version of a pod once; a failed write is retried after 1 s
 * unless the pod is gone (404); `ready` resolves once the first list was handled; `stop()` ends
 * the watch and waits for writes in flight.
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { createKubeApi } from '../../src/kube/api.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import { PODS } from '../../src/kube/kinds.ts';
import type { KubeClient, KubeObject } from '../../src/kube/types.ts';
import { needsSimulation, simulatedStatus } from '../../src/local/pod-simulator.ts';
import { listAndWatch } from './tracker.ts';

type Pod = Parameters<typeof needsSimulation>[0];

export interface WatchedPodSimulator {
  readonly ready: Promise<void>;
  /** Status writes done so far. */
  written(): number;
  stop(): Promise<void>;
}

export function startWatchedPodSimulator(kubeConfig: KubeConfig, client: KubeClient, options: { parallel?: number } = {}): WatchedPodSimulator {
  const parallel = options.parallel ?? 8;
  const abort = new AbortController();
  /** Pods waiting for a write, by namespace/name: the newest version seen. */
  const pending = new Map<string, Pod>();
  let inFlight = 0;
  let written = 0;
  let nextIp = 10;
  const running = new Set<Promise<void>>();
  const keyOf = (pod: KubeObject) => `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;

  const pump = () => {
    while (!abort.signal.aborted && inFlight < parallel && pending.size > 0) {
      const [key, pod] = pending.entries().next().value as [string, Pod];
      pending.delete(key);
      inFlight++;
      const ip = `10.244.${Math.floor(nextIp / 250) % 250}.${(nextIp++ % 250) + 2}`;
      const write = client
        .applyStatus(PODS, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace ?? 'default' },
          status: simulatedStatus(pod, new Date(), ip),
        })
        .then(
          () => {
            written++;
          },
          (err: unknown) => {
            if (abort.signal.aborted || isNotFound(err)) return;
            setTimeout(() => {
              if (!pending.has(key)) pending.set(key, pod);
              pump();
            }, 1000).unref();
          },
        )
        .finally(() => {
          inFlight--;
          running.delete(write);
          pump();
        });
      running.add(write);
    }
  };

  const upsert = (object: Record<string, unknown>) => {
    const pod = object as unknown as Pod;
    if (needsSimulation(pod)) pending.set(keyOf(pod), pod);
    else pending.delete(keyOf(pod));
    pump();
  };
  const remove = (object: Record<string, unknown>) => {
    pending.delete(keyOf(object as unknown as KubeObject));
  };

  const started = listAndWatch(createKubeApi(kubeConfig), '/api/v1/pods', { upsert, remove }, abort.signal);
  return {
    ready: started.then(() => undefined),
    written: () => written,
    async stop() {
      abort.abort();
      const { loop } = await started.catch(() => ({ loop: Promise.resolve() }));
      await loop;
      await Promise.allSettled([...running]);
    },
  };
}
