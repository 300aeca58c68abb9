/**
 * Predicates: which changes of an object are worth a reconcile.
 *
 * For primaries the default drops writes that change nothing a reconcile reads —
 * status-only updates (the reconciler's own status writes) and bare resourceVersion bumps —
 * like controller-runtime's GenerationChangedPredicate plus label/annotation/finalizer/
 * deletion predicates. For owned objects the default forwards every change, status
 * included, because the owner's status is computed from them.
 *
 * Guarantees: pure; `changedAspects(a, a)` is empty; kinds without `metadata.generation`
 * (ConfigMap, Secret) report a change of their content (everything but metadata and status:
 * the snapshot's `content` digest) as a `generation` change, also when a metadata change came
 * with it (`kubectl apply` rewrites an annotation with every edit); a snapshot without that
 * digest falls back to: any change other than a metadata aspect or status is `generation`.
 */
import type { Trigger } from '../config/config.ts';
import type { ObjectSnapshot } from '../source/snapshot.ts';

/** Every aspect that differs between two snapshots of one object. */
export function changedAspects(old: ObjectSnapshot, current: ObjectSnapshot): Set<Trigger> {
  const changed = new Set<Trigger>();
  if (old.resourceVersion !== current.resourceVersion) changed.add('any');
  if (old.labels !== current.labels) changed.add('labels');
  if (old.annotations !== current.annotations) changed.add('annotations');
  if (old.finalizers !== current.finalizers) changed.add('finalizers');
  if (old.ownerReferences !== current.ownerReferences) changed.add('ownerReferences');
  if (!old.deleting && current.deleting) changed.add('deletion');
  if (old.status !== current.status) changed.add('status');
  if (old.generation !== current.generation) changed.add('generation');
  else if (current.generation === undefined && old.content !== undefined && current.content !== undefined) {
    // No generation tracking, but the content's digest: a data change is exactly a content change.
    if (old.content !== current.content) changed.add('generation');
  } else if (current.generation === undefined && changed.has('any') && !changed.has('status')) {
    // No generation tracking: anything other than a pure status write may be a data change.
    const others = ['labels', 'annotations', 'finalizers', 'ownerReferences', 'deletion'] as const;
    if (!others.some((t) => changed.has(t))) changed.add('generation');
  }
  return changed;
}

/** Whether an update passes the configured triggers. */
export function shouldForwardUpdate(triggers: readonly Trigger[], old: ObjectSnapshot, current: ObjectSnapshot): boolean {
  const changed = changedAspects(old, current);
  if (triggers.includes('any')) return changed.has('any') || changed.size > 0;
  return triggers.some((t) => changed.has(t));
}
