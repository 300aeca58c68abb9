/**
 * Children owned by a primary: a *controller* owner reference (`controller: true`,
 * `blockOwnerDeletion: true`) so the garbage collector deletes the child with its owner and
 * the forwarder maps the child's changes back to the owner (what `Owns()` does in
 * controller-runtime). The child is written with server-side apply by the controller's field
 * manager; applying the same desired child twice changes nothing.
 *
 * `applyOwnedIfChanged` skips the request altogether when the live child (already read by the
 * caller) matches: a hash annotation of the desired object says whether the desired state
 * changed, and the live values of every field we set say whether someone else changed them.
 *
 * It also never lets an overtaken reconcile apply an older desired child (a Deployment
 * template going back): the child records the owner generation it was applied from, a
 * reconcile that read an older generation of the same owner (uid) refuses to apply (409) —
 * the record is trusted only from this controller's exact field manager, and only up to the
 * live owner's `metadata.generation` (one GET of the owner when a record claims more than the
 * reconcile read): a client names its own field manager, but nobody can make the owner's
 * generation go up without changing its spec, so a forged record refuses nothing — and the apply carries the
 * child's `resourceVersion` as read (a precondition: anyone who wrote the child since — a newer
 * reconcile — makes it a 409); a child read as missing is applied with a resourceVersion no
 * object ever has, so a child created in between is a 409 too. Given a way to read the child
 * again, a lost precondition is decided once more on the spot against the fresh child — the
 * same fence, one GET instead of a whole retried reconcile (two invocations of one new object
 * both reading it missing was the common case); a child now controlled by another owner, a
 * fence that refuses, or a second lost precondition is a 409, retried by the runtime with fresh
 * state. Why this is sound, and what it costs: docs/architecture.md ("Stale writes").
 */
import { createHash } from 'node:crypto';
import { isConflict, KubeApiError } from './errors.ts';
import type { KindRef, KubeClient, KubeObject, OwnerReference } from './types.ts';

export function controllerReference(owner: KubeObject): OwnerReference {
  const uid = owner.metadata.uid;
  if (!uid) throw new TypeError(`the owner ${owner.kind} "${owner.metadata.name}" has no metadata.uid; read it from the API server first`);
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid, controller: true, blockOwnerDeletion: true };
}

/**
 * The child with the owner's controller reference (replacing any reference to the same
 * owner uid) and, for namespaced children without one, the owner's namespace. Pure.
 */
export function withControllerReference<C extends KubeObject>(child: C, owner: KubeObject, childKind: KindRef): C {
  const ref = controllerReference(owner);
  const ownerNamespace = owner.metadata.namespace;
  const namespace = childKind.namespaced ? (child.metadata.namespace ?? ownerNamespace) : undefined;
  if (childKind.namespaced && ownerNamespace && namespace !== ownerNamespace) {
    throw new TypeError(
      `${childKind.kind} "${child.metadata.name}" is in namespace "${namespace}" but its owner ${owner.kind} is in "${ownerNamespace}"; owner references cannot cross namespaces`,
    );
  }
  if (!childKind.namespaced && ownerNamespace) {
    throw new TypeError(`a cluster-scoped ${childKind.kind} cannot be owned by the namespaced ${owner.kind} "${owner.metadata.name}"`);
  }
  const others = (child.metadata.ownerReferences ?? []).filter((r) => r.uid !== ref.uid);
  return {
    ...child,
    apiVersion: child.apiVersion ?? childKind.apiVersion,
    kind: child.kind ?? childKind.kind,
    metadata: { ...child.metadata, ...(namespace ? { namespace } : {}), ownerReferences: [...others, ref] },
  };
}

/** Server-side applies `child` with a controller reference to `owner`. */
export function applyOwned<C extends KubeObject>(client: KubeClient, owner: KubeObject, childKind: KindRef, child: C): Promise<C> {
  return client.apply<C>(childKind, withControllerReference(child, owner, childKind));
}

/**
 * Annotation on a child holding the hash of the desired object last applied to it. A child
 * whose annotation differs was applied from another desired state (the owner's spec changed,
 * or a field we used to set is no longer desired — something a field-by-field check of the
 * desired object cannot see).
 */
export const APPLIED_HASH_ANNOTATION = 'operless.dev/applied-hash';

/** Why a child must be applied, or undefined when the live child already matches. */
export type ApplyReason = 'missing' | 'desired-changed' | 'drifted';

/** JSON with object keys sorted: the same value always gives the same text. Pure. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 of the desired object's stable JSON, first 16 hex digits (change detection only). Pure. */
export function appliedHash(desired: KubeObject): string {
  return createHash('sha256').update(stableJson(desired), 'utf8').digest('hex').slice(0, 16);
}

/** The desired child carrying its own hash in `APPLIED_HASH_ANNOTATION`. Pure. */
export function withAppliedHash<C extends KubeObject>(desired: C): C {
  const annotations = { ...desired.metadata.annotations, [APPLIED_HASH_ANNOTATION]: appliedHash(desired) };
  return { ...desired, metadata: { ...desired.metadata, annotations } };
}

/**
 * Whether every field set in `desired` has the same value in `live` (objects: each desired
 * key, recursively; arrays: same length, element by element; scalars: equal). Fields only
 * `live` has (defaults, other managers' fields, status) are ignored. Pure.
 */
export function isSubsetOf(desired: unknown, live: unknown): boolean {
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => isSubsetOf(d, live[i]));
  }
  if (desired !== null && typeof desired === 'object') {
    if (live === null || typeof live !== 'object' || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(desired as Record<string, unknown>).every(([k, v]) => v === undefined || isSubsetOf(v, l[k]));
  }
  return desired === live;
}

/**
 * Decides whether server-side applying `desired` (with its owner reference and hash
 * annotation, see `withAppliedHash`) would change `live`. Pure.
 *
 * - `missing`: no live child (never created, or deleted);
 * - `desired-changed`: the live child was applied from another desired object (hash differs);
 * - `drifted`: same hash, but someone changed a field we set (e.g. `kubectl scale` of a
 *   Deployment's replicas) — the live values of our fields are compared, not only the hash.
 *
 * A false "needs apply" only costs one idempotent apply (e.g. when the API server stores a
 * value in another canonical form than we wrote it); a false "matches" cannot happen for
 * fields we set, since every one of them is compared.
 */
export function applyReason(desired: KubeObject, live: KubeObject | undefined): ApplyReason | undefined {
  if (!live) return 'missing';
  const expected = desired.metadata.annotations?.[APPLIED_HASH_ANNOTATION];
  if (expected === undefined || live.metadata.annotations?.[APPLIED_HASH_ANNOTATION] !== expected) return 'desired-changed';
  return isSubsetOf(desired, live) ? undefined : 'drifted';
}

/**
 * Annotation on a child holding the owner's `metadata.generation` its last apply was computed
 * from. Not part of the hash: a new owner generation that leaves the child's desired state
 * unchanged sends no apply (the annotation then keeps an older generation, which is enough
 * for the "never go back" check below).
 */
export const OWNER_GENERATION_ANNOTATION = 'operless.dev/owner-generation';

/**
 * A resourceVersion no stored object has (etcd revisions of written keys start at 2). Sent as
 * the precondition of an apply that creates a child read as missing: the API server ignores
 * the resourceVersion when the apply creates the object, and refuses it (409) when someone
 * created the child in between. Checked against the real API server
 * (test/integration/runtime.test.ts).
 */
export const NEVER_STORED_RESOURCE_VERSION = '1';

/** The owner generation `live` was last applied from; undefined when unannotated or unreadable. Pure. */
export function appliedOwnerGeneration(live: KubeObject | undefined): number | undefined {
  const text = live?.metadata.annotations?.[OWNER_GENERATION_ANNOTATION];
  if (text === undefined || !/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}

/**
 * Whether the owner-generation annotation of `live` was written by this controller's own
 * server-side applies only (`metadata.managedFields`: every entry that owns the field has
 * exactly `fieldManager` and `operation: Apply`). A value set by anyone else — `kubectl edit`,
 * `kubectl annotate --field-manager=<ours>` (an Update), another controller — is no fence.
 * This is a filter, not a proof: a client names its own field manager and may server-side
 * apply under ours, so a trusted value is still bounded by the live owner's generation before
 * it refuses anything (`judgeRecordedGeneration`). Without managedFields nothing is trusted.
 * Pure; malformed entries count as not ours.
 */
export function ownerGenerationWrittenBy(live: KubeObject, fieldManager: string): boolean {
  const entries = live.metadata.managedFields;
  if (!Array.isArray(entries)) return false;
  const field = `f:${OWNER_GENERATION_ANNOTATION}`;
  let owned = false;
  for (const entry of entries as unknown[]) {
    const fields = entry !== null && typeof entry === 'object' ? (entry as { fieldsV1?: unknown }).fieldsV1 : undefined;
    const metadata = fields !== null && typeof fields === 'object' ? (fields as Record<string, unknown>)['f:metadata'] : undefined;
    const annotations = metadata !== null && typeof metadata === 'object' ? (metadata as Record<string, unknown>)['f:annotations'] : undefined;
    if (annotations === null || typeof annotations !== 'object' || !Object.hasOwn(annotations, field)) continue;
    const { manager, operation } = entry as { manager?: unknown; operation?: unknown };
    if (manager !== fieldManager || operation !== 'Apply') return false;
    owned = true;
  }
  return owned;
}

/** The controller owner reference of `live`, if any. Pure. */
function controllerOf(live: KubeObject | undefined): OwnerReference | undefined {
  return live?.metadata.ownerReferences?.find((r) => r.controller);
}

/**
 * The owner generation `live` was last applied from, if `live` is controlled by this `owner`
 * (same uid) and the value is this controller's own (`ownerGenerationWrittenBy`): a
 * generation recorded by another owner — a deleted one of the same name whose child was
 * orphaned and is now adopted — says nothing about this one, and one written by someone else
 * fences nothing. Pure.
 */
export function generationAppliedBy(owner: KubeObject, live: KubeObject | undefined, fieldManager: string): number | undefined {
  const controller = controllerOf(live);
  if (!live || !controller || controller.uid !== owner.metadata.uid || !ownerGenerationWrittenBy(live, fieldManager)) return undefined;
  return appliedOwnerGeneration(live);
}

/**
 * Whether the live child claims to be applied from a newer generation of the same owner than
 * the reconcile read: the trigger of the fence, decided without a request. The claim is then
 * judged against the live owner (`judgeRecordedGeneration`). Pure.
 */
export function isOvertaken(owner: KubeObject, live: KubeObject | undefined, fieldManager: string): boolean {
  const read = owner.metadata.generation;
  const applied = generationAppliedBy(owner, live, fieldManager);
  return read !== undefined && applied !== undefined && applied > read;
}

/** What the live owner says about a recorded generation above the one a reconcile read. */
export interface GenerationVerdict {
  /** The reconcile read an older owner than the live one: it must not apply another desired state. */
  readonly overtaken: boolean;
  /** The generation to record on the next apply (the recorded one, never above the live owner's). */
  readonly generation: number;
}

/**
 * Judges a `recorded` generation above the one `owner` (as read) has, given `liveOwner` (the
 * owner read again; undefined when gone). A reconcile can only have recorded a generation it
 * read, so a value above the live owner's `metadata.generation` is a forgery: it counts as the
 * live generation and never refuses by itself. The reconcile is overtaken exactly when the
 * live owner is newer than what it read (or gone, or recreated: another uid) — a newer
 * reconcile's genuine record always implies that, and a forged one cannot cause it. Pure.
 */
export function judgeRecordedGeneration(owner: KubeObject, recorded: number, liveOwner: KubeObject | undefined): GenerationVerdict {
  const read = owner.metadata.generation ?? 0;
  const live = liveOwner && liveOwner.metadata.uid === owner.metadata.uid ? liveOwner.metadata.generation : undefined;
  if (live === undefined) return { overtaken: true, generation: recorded };
  return { overtaken: live > read, generation: Math.max(read, Math.min(recorded, live)) };
}

/**
 * The body to apply: `full` with the owner `generation` to record (none when undefined) and
 * the resourceVersion precondition (the live child's, or `NEVER_STORED_RESOURCE_VERSION` when
 * the child was read as missing). Pure.
 */
export function fencedApply<C extends KubeObject>(full: C, generation: number | undefined, live: KubeObject | undefined): C {
  const annotations =
    generation === undefined ? full.metadata.annotations : { ...full.metadata.annotations, [OWNER_GENERATION_ANNOTATION]: String(generation) };
  const resourceVersion = live ? live.metadata.resourceVersion : NEVER_STORED_RESOURCE_VERSION;
  return {
    ...full,
    metadata: { ...full.metadata, ...(annotations ? { annotations } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
  };
}

/**
 * The `reason` of our own fence's 409 (a conflict to every caller that tests the status): the
 * child read again still carries the newer generation, so it is never decided again.
 */
const OVERTAKEN_REASON = 'Overtaken';

function overtakenError(owner: KubeObject, kind: KindRef, live: KubeObject): KubeApiError {
  const where = `${kind.kind} ${live.metadata.namespace ? `${live.metadata.namespace}/` : ''}${live.metadata.name}`;
  return new KubeApiError({
    status: 409,
    reason: OVERTAKEN_REASON,
    request: `APPLY ${where}`,
    message:
      `${where} was applied from generation ${appliedOwnerGeneration(live)} of ${owner.kind} ${owner.metadata.name}, ` +
      `newer than the generation ${owner.metadata.generation} this reconcile read; not applying an older desired state (retried with fresh state)`,
  });
}

/** A 409 answered by the API server (not our own fence's). */
function isConflictAnswer(err: unknown): boolean {
  return isConflict(err) && (err as KubeApiError).reason !== OVERTAKEN_REASON;
}

/** Whether `live` is controlled by an owner other than `owner` (a child we must not take over here). Pure. */
function controlledByAnother(owner: KubeObject, live: KubeObject | undefined): boolean {
  const controller = controllerOf(live);
  return controller !== undefined && controller.uid !== owner.metadata.uid;
}

/** What the fence of `applyOwnedIfChanged` needs besides the apply. */
export interface ChildFence<C extends KubeObject> {
  /** This controller's field manager (the one `apply` writes with): only its own applies of the recorded generation are trusted. */
  readonly fieldManager: string;
  /**
   * Reads the owner again (undefined when gone). Called only when the child claims a newer
   * owner generation than the reconcile read: the live owner's generation bounds the claim.
   */
  readonly readOwner: () => Promise<KubeObject | undefined>;
  /** Reads the child again: a lost precondition is then decided once more against it. */
  readonly reread?: () => Promise<C | undefined>;
}

/**
 * Applies `desired` as a child of `owner` unless the `live` child (read by the caller) already
 * matches it; returns the live child and why it was applied (undefined: no request sent).
 * Never applies from an older owner generation than the live owner's when the child records a
 * newer one, and never over a child written since `live` was read: both are a 409
 * (`KubeApiError`), which the runtime retries with fresh state. A recorded generation above the
 * one read costs one GET of the owner (`fence.readOwner`); nothing else sends an extra request.
 * With `fence.reread`, a lost precondition is decided once more against the child read again,
 * before giving up with the 409.
 */
export async function applyOwnedIfChanged<C extends KubeObject>(
  apply: (kind: KindRef, child: C) => Promise<C>,
  owner: KubeObject,
  kind: KindRef,
  desired: C,
  live: C | undefined,
  fence: ChildFence<C>,
): Promise<{ object: C; applied: ApplyReason | undefined }> {
  if (typeof fence?.fieldManager !== 'string' || typeof fence.readOwner !== 'function') {
    throw new TypeError(
      "applyOwnedIfChanged needs { fieldManager, readOwner, reread? } as its last argument (the controller's field manager and a read of the owner: the stale-write fence judges a recorded owner generation by them)",
    );
  }
  const full = withAppliedHash(withControllerReference(desired, owner, kind));
  const decide = async (current: C | undefined): Promise<{ object: C; applied: ApplyReason | undefined }> => {
    const reason = applyReason(full, current);
    if (!reason) return { object: current as C, applied: undefined };
    const read = owner.metadata.generation;
    const recorded = generationAppliedBy(owner, current, fence.fieldManager);
    let generation = read ?? recorded;
    if (current && recorded !== undefined && read !== undefined && recorded > read) {
      const verdict = judgeRecordedGeneration(owner, recorded, await fence.readOwner());
      // Same hash ('drifted'): the desired state is the newer reconcile's own, applying it goes nowhere back.
      if (reason === 'desired-changed' && verdict.overtaken) throw overtakenError(owner, kind, current);
      // Never lower a genuine record (repairing drift from an older read keeps the newer generation); a forged one is replaced.
      generation = verdict.generation;
    }
    return { object: await apply(kind, fencedApply(full, generation, current)), applied: reason };
  };
  try {
    return await decide(live);
  } catch (err) {
    if (!fence.reread || !isConflictAnswer(err)) throw err;
    const fresh = await fence.reread();
    // Created in between under another controller: the caller's ownership check decides, on the retry.
    if (controlledByAnother(owner, fresh)) throw err;
    return decide(fresh);
  }
}
