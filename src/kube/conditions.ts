/**
 * `metav1.Condition` helpers, with the apimachinery `meta.SetStatusCondition` rules:
 * - a condition is identified by `type` (at most one per type);
 * - `lastTransitionTime` changes only when `status` changes (a new reason or message alone
 *   keeps the old time), so "since when is it Ready" stays meaningful;
 * - `observedGeneration` records which spec generation the condition describes.
 *
 * Pure: returns a new array and never mutates its input, so it is safe on a live object.
 */
import { kubeTime } from './time.ts';
import type { Condition } from './types.ts';

export { kubeTime } from './time.ts';

export interface ConditionInput {
  readonly type: string;
  readonly status: Condition['status'];
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number | undefined;
}

export function setCondition(conditions: readonly Condition[] | undefined, next: ConditionInput, now: Date = new Date()): Condition[] {
  const list = conditions ?? [];
  const existing = list.find((c) => c.type === next.type);
  const updated: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime: existing && existing.status === next.status ? existing.lastTransitionTime : kubeTime(now),
    ...(next.observedGeneration !== undefined
      ? { observedGeneration: next.observedGeneration }
      : existing?.observedGeneration !== undefined
        ? { observedGeneration: existing.observedGeneration }
        : {}),
  };
  if (!existing) return [...list, updated];
  return list.map((c) => (c.type === next.type ? updated : c));
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}
