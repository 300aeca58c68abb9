/**
 * What a reconcile does about `operless.dev/paused` (contract/pause.ts), decided from the live
 * primary alone. Anchors: Crossplane's `crossplane.io/paused`, Cluster API's
 * `cluster.x-k8s.io/paused`.
 *
 * Guarantees:
 * - A paused object is not reconciled, whatever brought its message: a watch event, a child's
 *   or related object's change, a requeue, a retry, the scheduled resync. Nothing is sent after
 *   it (no requeue, no retry): the next message comes from the next change, and removing the
 *   annotation is such a change.
 * - Deletion is honoured while paused: an object being deleted is finalized as usual, so a
 *   pause never leaves an object (or its namespace) stuck Terminating.
 * - The pause shows on the object: a `Paused` condition (`True` while paused, `False` with
 *   reason `Resumed` once the annotation is gone) and one Event at each transition. It is written
 *   under a field manager of its own (`pauseFieldManager`): the conditions as read with `Paused`
 *   set, guarded by the resourceVersion read, so no condition or other status field of the
 *   author's is lost. A kind whose status schema has no `conditions` drops it (the API server
 *   prunes it); the Event and the log line still say it.
 * - Pure: `pauseStep` decides; the reconciler writes.
 */
import { isPaused } from '../../contract/pause.ts';
import type { ConditionInput } from '../../kube/conditions.ts';
import type { Condition, KubeObject } from '../../kube/types.ts';

export const PAUSED_CONDITION = 'Paused';

export interface PauseTransition {
  readonly condition: ConditionInput;
  readonly event: { readonly type: 'Normal'; readonly reason: string; readonly action: string; readonly note: string };
}

export interface PauseStep {
  /** True: do not reconcile. */
  readonly paused: boolean;
  /** The condition and Event to write, at a transition only. */
  readonly transition?: PauseTransition;
}

/** The field manager of the `Paused` condition: the controller's own, suffixed. */
export function pauseFieldManager(controllerFieldManager: string): string {
  return `${controllerFieldManager}-pause`;
}

function pausedCondition(object: KubeObject): Condition | undefined {
  const conditions = (object.status as { conditions?: unknown } | undefined)?.conditions;
  return Array.isArray(conditions) ? (conditions as Condition[]).find((c) => c?.type === PAUSED_CONDITION) : undefined;
}

/** Whether to reconcile `object`, and what to write about its pause. Deletion is the caller's (see the header). */
export function pauseStep(object: KubeObject): PauseStep {
  const paused = isPaused(object);
  const shown = pausedCondition(object)?.status === 'True';
  const generation = object.metadata.generation;
  if (paused && !shown) {
    return {
      paused,
      transition: {
        condition: {
          type: PAUSED_CONDITION,
          status: 'True',
          reason: 'PausedByAnnotation',
          message: 'operless.dev/paused is "true": not reconciled until it is removed',
          observedGeneration: generation,
        },
        event: { type: 'Normal', reason: 'Paused', action: 'Reconcile', note: 'operless.dev/paused is "true": reconciles stop until it is removed' },
      },
    };
  }
  if (!paused && shown) {
    return {
      paused,
      transition: {
        condition: {
          type: PAUSED_CONDITION,
          status: 'False',
          reason: 'Resumed',
          message: 'operless.dev/paused was removed: reconciled again',
          observedGeneration: generation,
        },
        event: { type: 'Normal', reason: 'Resumed', action: 'Reconcile', note: 'operless.dev/paused was removed: reconciling again' },
      },
    };
  }
  return { paused };
}
