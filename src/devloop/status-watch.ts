/**
 * What the dev loop prints as objects change: one line per new state of each object of the
 * controllers' kinds, a line when one becomes Available at its generation, and one when it is gone.
 *
 * Guarantees: `summariseStatus` is pure; the watcher polls every 500 ms, never runs two polls at
 * once, prints a line only when it differs from the object's last, announces Available once per
 * generation, and a failed poll (cluster down, kind gone) is skipped, not fatal.
 */
import type { BoundKubeClient } from '../kube/client.ts';
import type { Condition, KindRef, KubeObject } from '../kube/types.ts';

interface StatusSummary {
  readonly line: string;
}

/** One line per object state: generation, conditions, ready count, pod names. Pure. */
export function summariseStatus(object: KubeObject): StatusSummary {
  const status = (object.status ?? {}) as { conditions?: Condition[]; observedGeneration?: number; readyReplicas?: number; nodes?: string[] };
  const conditions = (status.conditions ?? []).map((c) => `${c.type}=${c.status}${c.status === 'True' || !c.reason ? '' : `(${c.reason})`}`).join(' ');
  const spec = (object.spec ?? {}) as { size?: number };
  const ready = status.readyReplicas !== undefined || spec.size !== undefined ? ` ready ${status.readyReplicas ?? 0}/${spec.size ?? '?'}` : '';
  const nodes = status.nodes?.length ? ` nodes ${status.nodes.join(',')}` : '';
  const deleting = object.metadata.deletionTimestamp ? ' (deleting)' : '';
  const where = object.metadata.namespace ? `${object.metadata.namespace}/` : '';
  return {
    line: `${object.kind} ${where}${object.metadata.name} generation ${object.metadata.generation ?? '?'} observed ${status.observedGeneration ?? '-'}${deleting}: ${conditions || 'no conditions yet'}${ready}${nodes}`,
  };
}

export function watchStatuses(client: BoundKubeClient, kinds: readonly KindRef[], write: (line: string) => void): { stop(): Promise<void> } {
  const last = new Map<string, string>();
  const announcedAvailable = new Set<string>();
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void (async () => {
      const seen = new Set<string>();
      for (const kind of kinds) {
        const { items } = await client.list(kind);
        for (const object of items) {
          const id = `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
          seen.add(id);
          const { line } = summariseStatus(object);
          if (last.get(id) !== line) {
            last.set(id, line);
            write(`● ${line}`);
          }
          const status = (object.status ?? {}) as { conditions?: Condition[]; observedGeneration?: number };
          const available = status.conditions?.find((c) => c.type === 'Available');
          const key = `${id}@${object.metadata.generation}`;
          if (available?.status === 'True' && status.observedGeneration === object.metadata.generation && !announcedAvailable.has(key)) {
            announcedAvailable.add(key);
            write(
              `✔ ${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name} is Available (generation ${object.metadata.generation})`,
            );
          }
        }
      }
      for (const id of [...last.keys()]) {
        if (!seen.has(id)) {
          last.delete(id);
          write(`● ${id.replace(/\/\//, '/')} is gone`);
        }
      }
    })()
      .catch(() => {})
      .finally(() => {
        running = false;
      });
  }, 500);
  return { stop: async () => clearInterval(timer) };
}
