/**
 * "Apply only when different" for owned children (src/kube/owned.ts): the hash annotation,
 * the live-field comparison, and the helper that sends an apply only when one is needed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KindRef, KubeObject } from '../../../src/kube/types.ts';
import { isConflict, KubeApiError } from '../../../src/kube/errors.ts';
import {
  APPLIED_HASH_ANNOTATION,
  NEVER_STORED_RESOURCE_VERSION,
  OWNER_GENERATION_ANNOTATION,
  appliedHash,
  appliedOwnerGeneration,
  fencedApply,
  generationAppliedBy,
  isOvertaken,
  judgeRecordedGeneration,
  type ChildFence,
  applyOwnedIfChanged,
  applyReason,
  isSubsetOf,
  withAppliedHash,
  withControllerReference,
} from '../../../src/kube/owned.ts';

const DEPLOY: KindRef = { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
const owner: KubeObject = { apiVersion: 'x.io/v1', kind: 'Owner', metadata: { name: 'o', namespace: 'ns', uid: 'u1' } };
const MANAGER = 'operless-widget';
const ownerAt = (generation: number): KubeObject => ({ ...owner, metadata: { ...owner.metadata, generation } });

/** A fence whose live owner is at `generation` (undefined: gone), counting its reads of the owner. */
function fenceAt(generation: number | undefined, reread?: () => Promise<KubeObject | undefined>): ChildFence<KubeObject> & { ownerReads: number } {
  const fence = {
    fieldManager: MANAGER,
    ownerReads: 0,
    readOwner: async () => {
      fence.ownerReads++;
      return generation === undefined ? undefined : ownerAt(generation);
    },
    ...(reread ? { reread } : {}),
  };
  return fence;
}

function desired(replicas = 3, args = ['-m', '64']): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'o', namespace: 'ns', labels: { app: 'o' } },
    spec: { replicas, template: { spec: { containers: [{ name: 'c', image: 'i:1', args }] } } },
  };
}

/** What the API server returns after applying `d`: our fields plus defaults, status, metadata. */
function stored(d: KubeObject): KubeObject {
  const spec = d.spec as { replicas: number; template: { spec: { containers: Record<string, unknown>[] } } };
  return {
    ...d,
    metadata: { ...d.metadata, uid: 'child', resourceVersion: '7', generation: 1, labels: { ...d.metadata.labels, extra: 'x' } },
    spec: {
      ...spec,
      progressDeadlineSeconds: 600,
      template: {
        spec: {
          ...spec.template.spec,
          restartPolicy: 'Always',
          containers: spec.template.spec.containers.map((c) => ({ ...c, terminationMessagePath: '/dev/termination-log' })),
        },
      },
    },
    status: { replicas: 3 },
  };
}

const full = (d: KubeObject) => withAppliedHash(withControllerReference(d, owner, DEPLOY));

test('the hash is stable under key order and changes with any desired value', () => {
  const a = desired();
  const reordered: KubeObject = { spec: a.spec, metadata: { labels: { app: 'o' }, namespace: 'ns', name: 'o' }, kind: a.kind, apiVersion: a.apiVersion };
  assert.equal(appliedHash(a), appliedHash(reordered));
  assert.notEqual(appliedHash(a), appliedHash(desired(4)));
  assert.notEqual(appliedHash(a), appliedHash(desired(3, ['-m', '65'])));
  assert.match(appliedHash(a), /^[0-9a-f]{16}$/);
  assert.equal(full(a).metadata.annotations?.[APPLIED_HASH_ANNOTATION], appliedHash(withControllerReference(a, owner, DEPLOY)));
});

test('isSubsetOf: every desired field must match; extra live fields are ignored; arrays by length and position', () => {
  assert.ok(isSubsetOf({ a: 1, b: { c: [1, { d: 2 }] } }, { a: 1, z: 9, b: { c: [1, { d: 2, e: 3 }], y: 0 } }));
  assert.ok(!isSubsetOf({ a: 1 }, { a: 2 }));
  assert.ok(!isSubsetOf({ a: [1, 2] }, { a: [1, 2, 3] }), 'an extra element is a difference');
  assert.ok(!isSubsetOf({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!isSubsetOf({ a: { b: 1 } }, { a: null }));
  assert.ok(!isSubsetOf({ a: { b: 1 } }, {}));
  assert.ok(isSubsetOf({ a: undefined }, {}), 'an undefined desired field sets nothing');
});

test('applyReason: missing, desired changed (hash), drifted (a live value we set changed), or nothing to do', () => {
  const want = full(desired());
  assert.equal(applyReason(want, undefined), 'missing');
  assert.equal(applyReason(want, stored(want)), undefined, 'the stored form of what we applied matches');
  assert.equal(applyReason(full(desired(5)), stored(want)), 'desired-changed');
  const scaledByHand = stored(want);
  (scaledByHand.spec as { replicas: number }).replicas = 7;
  assert.equal(applyReason(want, scaledByHand), 'drifted', 'kubectl scale of the child is repaired');
  const unannotated = stored(withControllerReference(desired(), owner, DEPLOY));
  assert.equal(applyReason(want, unannotated), 'desired-changed', 'a child applied before hashes existed is applied once');
  const ownerRemoved = stored(want);
  ownerRemoved.metadata = { ...ownerRemoved.metadata, ownerReferences: [] };
  assert.equal(applyReason(want, ownerRemoved), 'drifted', 'a removed owner reference is put back');
});

test('applyReason: a field we stopped setting is caught by the hash although the live object still has it', () => {
  const before = full(desired());
  const live = stored(before);
  const without = desired();
  delete (without.metadata as { labels?: unknown }).labels;
  const after = full(without);
  assert.ok(
    isSubsetOf(after, { ...live, metadata: { ...live.metadata, annotations: after.metadata.annotations } }),
    'field-wise the live object still "contains" the new desired one',
  );
  assert.equal(applyReason(after, live), 'desired-changed');
});

test('applyOwnedIfChanged sends an apply only when needed, with owner reference and hash', async () => {
  const sent: KubeObject[] = [];
  const apply = async (_kind: KindRef, child: KubeObject) => {
    sent.push(child);
    return stored(child);
  };
  const first = await applyOwnedIfChanged(apply, owner, DEPLOY, desired(), undefined, fenceAt(undefined));
  assert.equal(first.applied, 'missing');
  assert.equal(sent.length, 1);
  assert.equal(sent[0]?.metadata.ownerReferences?.[0]?.uid, 'u1');
  assert.ok(sent[0]?.metadata.annotations?.[APPLIED_HASH_ANNOTATION]);

  const again = await applyOwnedIfChanged(apply, owner, DEPLOY, desired(), first.object, fenceAt(undefined));
  assert.equal(again.applied, undefined);
  assert.equal(again.object, first.object, 'the live child is returned as read');
  assert.equal(sent.length, 1, 'no request for a child that matches');

  const changed = await applyOwnedIfChanged(apply, owner, DEPLOY, desired(2), first.object, fenceAt(undefined));
  assert.equal(changed.applied, 'desired-changed');
  assert.equal(sent.length, 2);
});

/** The stored child of `d` (owned by `owner`, uid u1) with the owner generation it was applied from. */
const appliedFrom = (generation: number | string, d: KubeObject, manager = MANAGER): KubeObject => {
  const s = stored(d);
  const managedFields = [
    { manager, operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:annotations': { [`f:${OWNER_GENERATION_ANNOTATION}`]: {} } } } },
  ];
  return { ...s, metadata: { ...s.metadata, managedFields, annotations: { ...s.metadata.annotations, [OWNER_GENERATION_ANNOTATION]: String(generation) } } };
};

test("a recorded generation counts only from this controller's own server-side applies (not kubectl, not an Update under our name, not a look-alike manager)", () => {
  const want = full(desired());
  const written = (generation: number, manager: string, operation = 'Apply') => {
    const child = appliedFrom(generation, want, manager);
    const entries = child.metadata.managedFields as { operation: string }[];
    return { ...child, metadata: { ...child.metadata, managedFields: entries.map((e) => ({ ...e, operation })) } };
  };
  assert.equal(isOvertaken(ownerAt(2), written(999_999, 'kubectl-edit'), MANAGER), false);
  assert.equal(isOvertaken(ownerAt(2), written(999_999, 'operless-other'), MANAGER), false, 'another operless-* manager: no longer trusted by its prefix');
  assert.equal(
    isOvertaken(ownerAt(2), written(999_999, MANAGER, 'Update'), MANAGER),
    false,
    'kubectl annotate --field-manager=<ours> is an Update: ours are applies',
  );
  assert.equal(isOvertaken(ownerAt(2), appliedFrom(3, want), MANAGER), true, 'our own recorded generation still triggers the fence');
  const bare = appliedFrom(3, want);
  assert.equal(
    isOvertaken(ownerAt(2), { ...bare, metadata: { ...bare.metadata, managedFields: undefined } }, MANAGER),
    false,
    'no managedFields: nothing to trust',
  );
  assert.equal(
    isOvertaken(ownerAt(2), { ...bare, metadata: { ...bare.metadata, managedFields: [null, 'x', { fieldsV1: 7 }] } }, MANAGER),
    false,
    'malformed entries are not ours',
  );
});

test("judgeRecordedGeneration: a record above the live owner's generation is a forgery and refuses nothing; the live owner decides", () => {
  assert.deepEqual(
    judgeRecordedGeneration(ownerAt(2), 999_999_999_999, ownerAt(2)),
    { overtaken: false, generation: 2 },
    'forged: replaced by the live generation',
  );
  assert.deepEqual(
    judgeRecordedGeneration(ownerAt(2), 999_999_999_999, ownerAt(4)),
    { overtaken: true, generation: 4 },
    'forged, but this reconcile read an older owner anyway',
  );
  assert.deepEqual(judgeRecordedGeneration(ownerAt(2), 3, ownerAt(3)), { overtaken: true, generation: 3 }, "a newer reconcile's genuine record refuses");
  assert.deepEqual(judgeRecordedGeneration(ownerAt(2), 3, ownerAt(5)), { overtaken: true, generation: 3 }, 'never lowered below a genuine record');
  assert.equal(judgeRecordedGeneration(ownerAt(2), 3, undefined).overtaken, true, 'the owner is gone: retried with fresh state');
  assert.equal(
    judgeRecordedGeneration(ownerAt(2), 3, { ...ownerAt(9), metadata: { ...ownerAt(9).metadata, uid: 'u2' } }).overtaken,
    true,
    'recreated: retried with fresh state',
  );
});

test("isOvertaken: only a live child applied from a newer generation of the same owner; unannotated, unreadable or another owner's never refuse", () => {
  const live = appliedFrom(3, full(desired()));
  assert.equal(appliedOwnerGeneration(live), 3);
  assert.equal(generationAppliedBy(ownerAt(2), live, MANAGER), 3);
  assert.equal(isOvertaken(ownerAt(2), live, MANAGER), true);
  assert.equal(isOvertaken(ownerAt(3), live, MANAGER), false, 'the same generation (a duplicate, or a related object changed) is not older');
  assert.equal(isOvertaken(ownerAt(4), live, MANAGER), false);
  assert.equal(isOvertaken(owner, live, MANAGER), false, 'an owner without generation cannot be compared');
  assert.equal(isOvertaken(ownerAt(2), undefined, MANAGER), false);
  assert.equal(isOvertaken(ownerAt(2), stored(full(desired())), MANAGER), false, 'a child applied before the annotation existed');
  const adopter = { ...ownerAt(1), metadata: { ...ownerAt(1).metadata, uid: 'u2' } };
  assert.equal(generationAppliedBy(adopter, live, MANAGER), undefined, 'recorded by another owner (uid u1)');
  assert.equal(isOvertaken(adopter, live, MANAGER), false, 'an orphaned child adopted by a new owner of the same name is applied');
  const orphan = { ...live, metadata: { ...live.metadata, ownerReferences: [] } };
  assert.equal(isOvertaken(ownerAt(2), orphan, MANAGER), false, 'no controller: nobody to compare with');
  for (const junk of ['', 'x', '-1', '1e3', '9'.repeat(40)]) assert.equal(appliedOwnerGeneration(appliedFrom(junk, full(desired()))), undefined, junk);
});

test('fencedApply: the owner generation annotation (outside the hash) and the resourceVersion precondition', () => {
  const want = full(desired());
  const live = stored(want);
  const body = fencedApply(want, 5, live);
  assert.equal(body.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '5');
  assert.equal(body.metadata.annotations?.[APPLIED_HASH_ANNOTATION], want.metadata.annotations?.[APPLIED_HASH_ANNOTATION]);
  assert.equal(body.metadata.resourceVersion, '7', 'the resourceVersion read');
  assert.equal(fencedApply(want, 5, undefined).metadata.resourceVersion, NEVER_STORED_RESOURCE_VERSION, 'a missing child: created only if still missing');
  assert.equal(fencedApply(want, undefined, live).metadata.annotations?.[OWNER_GENERATION_ANNOTATION], undefined);
  assert.equal(
    applyReason(want, { ...live, metadata: { ...live.metadata, annotations: body.metadata.annotations } }),
    undefined,
    'a new owner generation alone sends no apply',
  );
});

test('applyOwnedIfChanged refuses (409) to apply an older desired state over a child applied from a newer owner generation', async () => {
  const sent: KubeObject[] = [];
  const apply = async (_kind: KindRef, child: KubeObject) => {
    sent.push(child);
    return stored(child);
  };
  const newer = appliedFrom(3, full(desired(5)));
  const fence = fenceAt(3);
  await assert.rejects(applyOwnedIfChanged(apply, ownerAt(2), DEPLOY, desired(3), newer, fence), (err: unknown) => {
    assert.ok(isConflict(err), 'a conflict: retried with fresh state');
    assert.match(String(err), /generation 3 of Owner o, newer than the generation 2/);
    return true;
  });
  assert.equal(sent.length, 0, 'nothing sent');
  assert.equal(fence.ownerReads, 1, 'the claim was checked against the live owner');
  const drifted = appliedFrom(3, full(desired()));
  (drifted.spec as { replicas: number }).replicas = 9;
  const repaired = await applyOwnedIfChanged(apply, ownerAt(2), DEPLOY, desired(), drifted, fenceAt(3));
  assert.equal(repaired.applied, 'drifted', 'the same desired state (same hash) is no step back: the drift is repaired');
  assert.equal(sent.at(-1)?.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '3', 'the recorded generation never goes down');
  const ahead = fenceAt(4);
  const forward = await applyOwnedIfChanged(apply, ownerAt(4), DEPLOY, desired(6), newer, ahead);
  assert.equal(forward.applied, 'desired-changed');
  assert.equal(sent.at(-1)?.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '4');
  assert.equal(sent.at(-1)?.metadata.resourceVersion, '7');
  assert.equal(ahead.ownerReads, 0, 'no claim above what was read: no extra request');
});

test("applyOwnedIfChanged: a forged generation (above the live owner's, under our own manager and operation) refuses nothing and is replaced", async () => {
  const sent: KubeObject[] = [];
  const apply = async (_kind: KindRef, child: KubeObject) => {
    sent.push(child);
    return stored(child);
  };
  const forged = appliedFrom(999_999_999_999, full(desired(1)), MANAGER);
  const fence = fenceAt(2);
  const applied = await applyOwnedIfChanged(apply, ownerAt(2), DEPLOY, desired(3), forged, fence);
  assert.equal(applied.applied, 'desired-changed', 'the child follows the owner');
  assert.equal(sent.at(-1)?.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '2', 'the forged value is replaced by the live generation');
  assert.equal(fence.ownerReads, 1);
  // The fence's guarantee stays: a reconcile of an older generation is still refused.
  await assert.rejects(applyOwnedIfChanged(apply, ownerAt(1), DEPLOY, desired(3), forged, fenceAt(2)), /newer than the generation 1/);
});

test('applyOwnedIfChanged with reread: a lost precondition is decided once more against the child read again, never past the fence', async () => {
  const lost = () => new KubeApiError({ status: 409, reason: 'Conflict', message: 'the object has been modified', request: 'APPLY' });
  // Two invocations of one new object both read it missing; the other one created it first.
  const createdMeanwhile = appliedFrom(2, full(desired()));
  let applies = 0;
  let reads = 0;
  const conflicting = async () => {
    applies++;
    throw lost();
  };
  const same = await applyOwnedIfChanged(
    conflicting,
    ownerAt(2),
    DEPLOY,
    desired(),
    undefined,
    fenceAt(2, async () => {
      reads++;
      return createdMeanwhile;
    }),
  );
  assert.deepEqual(
    [same.applied, same.object, applies, reads],
    [undefined, createdMeanwhile, 1, 1],
    'the child now matches: no retry of the reconcile, no second apply',
  );
  await assert.rejects(
    applyOwnedIfChanged(conflicting, ownerAt(2), DEPLOY, desired(), undefined, fenceAt(2)),
    isConflict,
    'without reread the 409 goes to the runtime as before',
  );

  // Written meanwhile from an older desired state: applied again with the fresh resourceVersion.
  const sent: KubeObject[] = [];
  let first = true;
  const applyOnce = async (_kind: KindRef, child: KubeObject) => {
    if (first) {
      first = false;
      throw lost();
    }
    sent.push(child);
    return stored(child);
  };
  const older = { ...appliedFrom(1, full(desired(1))), metadata: { ...appliedFrom(1, full(desired(1))).metadata, resourceVersion: '42' } };
  const again = await applyOwnedIfChanged(
    applyOnce,
    ownerAt(2),
    DEPLOY,
    desired(3),
    undefined,
    fenceAt(2, async () => older),
  );
  assert.equal(again.applied, 'desired-changed');
  assert.equal(sent.at(-1)?.metadata.resourceVersion, '42', "the precondition is the fresh child's");

  // Meanwhile a newer generation applied it: the fence still refuses, with its own 409.
  const newer = appliedFrom(3, full(desired(5)));
  await assert.rejects(
    applyOwnedIfChanged(
      conflicting,
      ownerAt(2),
      DEPLOY,
      desired(3),
      undefined,
      fenceAt(3, async () => newer),
    ),
    /newer than the generation 2/,
  );
  // Created meanwhile under another controller: no take-over here, the API server's 409 goes back.
  const foreign = {
    ...stored(full(desired())),
    metadata: { ...stored(full(desired())).metadata, ownerReferences: [{ apiVersion: 'v1', kind: 'Owner', name: 'x', uid: 'other', controller: true }] },
  };
  await assert.rejects(
    applyOwnedIfChanged(
      conflicting,
      ownerAt(2),
      DEPLOY,
      desired(3),
      undefined,
      fenceAt(2, async () => foreign),
    ),
    /has been modified/,
  );
  // A second lost precondition is not retried again.
  const before = applies;
  await assert.rejects(
    applyOwnedIfChanged(
      conflicting,
      ownerAt(2),
      DEPLOY,
      desired(3),
      undefined,
      fenceAt(2, async () => older),
    ),
    /has been modified/,
  );
  assert.equal(applies - before, 2, 'one apply, one more after the re-read, no third');
  // Our own fence's 409 is not re-decided (reading again cannot lower a recorded generation).
  let rereads = 0;
  await assert.rejects(
    applyOwnedIfChanged(
      conflicting,
      ownerAt(2),
      DEPLOY,
      desired(3),
      newer,
      fenceAt(3, async () => {
        rereads++;
        return newer;
      }),
    ),
    /newer than the generation 2/,
  );
  assert.equal(rereads, 0);
});

test('applyOwnedIfChanged called the old way (a re-read function as the last argument) refuses with a message, never runs without its fence', async () => {
  const apply = async (_kind: KindRef, child: KubeObject) => stored(child);
  const oldWay = (async () => undefined) as unknown as ChildFence<KubeObject>;
  await assert.rejects(applyOwnedIfChanged(apply, ownerAt(2), DEPLOY, desired(), undefined, oldWay), /needs \{ fieldManager, readOwner, reread\? \}/);
});
