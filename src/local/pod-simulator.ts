/**
 * A stand-in for kubelets in the local loop and the end-to-end tests.
 *
 * The local control plane has no nodes: Deployments get ReplicaSets and Pods (from the real
 * kube-controller-manager), but no container ever runs, so no Pod becomes Ready and nothing
 * ever reports available. The simulator marks every pending Pod as scheduled, Running and
 * Ready through the status subresource — exactly the fields a kubelet would write — so the
 * real Deployment controller computes `readyReplicas`/`availableReplicas` as it would on a
 * cluster. It runs no containers and says so: every Pod it touches gets the message
 * "simulated by operless dev: no container runs".
 *
 * Guarantees: it only writes Pod status; it never creates or deletes anything; `stop()`
 * returns after the current pass.
 */
import { PODS } from '../kube/kinds.ts';
import type { KindRef, KubeClient, KubeObject } from '../kube/types.ts';
import type { Logger } from '../observability/log.ts';

export const SIMULATED_MESSAGE = 'simulated by operless dev: no container runs';

interface PodLike extends KubeObject {
  spec?: { containers?: { name: string; image?: string }[] };
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

/** Whether a pod still needs the simulator (pure: unit-tested). */
export function needsSimulation(pod: PodLike): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
  return pod.status?.phase !== 'Running' || ready?.status !== 'True';
}

/** The status a kubelet would report for a healthy, running pod (pure: unit-tested). */
export function simulatedStatus(pod: PodLike, now: Date, podIp: string): Record<string, unknown> {
  const time = now.toISOString();
  const condition = (type: string) => ({ type, status: 'True', lastTransitionTime: time, message: SIMULATED_MESSAGE });
  return {
    phase: 'Running',
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    hostIP: '127.0.0.1',
    startTime: time,
    conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map(condition),
    containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: '',
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: time } },
    })),
  };
}

export interface PodSimulator {
  stop(): Promise<void>;
}

export function startPodSimulator(client: KubeClient, options: { log: Logger; intervalMs?: number }): PodSimulator {
  let stopped = false;
  let nextIp = 10;
  let pass: Promise<void> = Promise.resolve();
  const tick = async () => {
    try {
      const { items } = await client.list<PodLike>(PODS);
      for (const pod of items.filter(needsSimulation)) {
        const ip = `10.244.0.${(nextIp++ % 250) + 2}`;
        await client.applyStatus(PODS, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace ?? 'default' },
          status: simulatedStatus(pod, new Date(), ip),
        });
        options.log.info('pod marked Ready (simulated kubelet)', { pod: `${pod.metadata.namespace}/${pod.metadata.name}` });
      }
    } catch (err) {
      if (!stopped) options.log.warn('pod simulator pass failed; retrying', { error: (err as Error).message });
    }
  };
  let running = false;
  const timer = setInterval(() => {
    if (running) return; // one pass at a time; a slow pass delays the next, never stacks them
    running = true;
    pass = tick().finally(() => {
      running = false;
    });
  }, options.intervalMs ?? 500);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await pass;
    },
  };
}
