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
  applyOwnedIfChanged,
  applyReason,
  isSubsetOf,
  withAppliedHash,
  withControllerReference,
} from '../../../src/kube/owned.ts';

const DEPLOY: KindRef = { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
const owner: KubeObject = { apiVersion: 'x.io/v1', kind: 'Owner', metadata: { name: 'o', namespace: 'ns', uid: 'u1' } };

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
      template: { spec: { ...spec.template.spec, restartPolicy: 'Always', containers: spec.template.spec.containers.map((c) => ({ ...c, terminationMessagePath: '/dev/termination-log' })) } },
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
  assert.ok(isSubsetOf(after, { ...live, metadata: { ...live.metadata, annotations: after.metadata.annotations } }), 'field-wise the live object still "contains" the new desired one');
  assert.equal(applyReason(after, live), 'desired-changed');
});

test('applyOwnedIfChanged sends an apply only when needed, with owner reference and hash', async () => {
  const sent: KubeObject[] = [];
  const apply = async (_kind: KindRef, child: KubeObject) => {
    sent.push(child);
    return stored(child);
  };
  const first = await applyOwnedIfChanged(apply, owner, DEPLOY, desired(), undefined);
  assert.equal(first.applied, 'missing');
  assert.equal(sent.length, 1);
  assert.equal(sent[0]?.metadata.ownerReferences?.[0]?.uid, 'u1');
  assert.ok(sent[0]?.metadata.annotations?.[APPLIED_HASH_ANNOTATION]);

  const again = await applyOwnedIfChanged(apply, owner, DEPLOY, desired(), first.object);
  assert.equal(again.applied, undefined);
  assert.equal(again.object, first.object, 'the live child is returned as read');
  assert.equal(sent.length, 1, 'no request for a child that matches');

  const changed = await applyOwnedIfChanged(apply, owner, DEPLOY, desired(2), first.object);
  assert.equal(changed.applied, 'desired-changed');
  assert.equal(sent.length, 2);
});

const ownerAt = (generation: number): KubeObject => ({ ...owner, metadata: { ...owner.metadata, generation } });
/** The stored child of `d` (owned by `owner`, uid u1) with the owner generation it was applied from. */
const appliedFrom = (generation: number | string, d: KubeObject, manager = 'operless-widget'): KubeObject => {
  const s = stored(d);
  const managedFields = [{ manager, operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:annotations': { [`f:${OWNER_GENERATION_ANNOTATION}`]: {} } } } }];
  return { ...s, metadata: { ...s.metadata, managedFields, annotations: { ...s.metadata.annotations, [OWNER_GENERATION_ANNOTATION]: String(generation) } } };
};

test('a recorded generation written by anyone but an Operless field manager fences nothing (a tenant cannot stop the owner\'s reconciles)', () => {
  const want = full(desired());
  assert.equal(isOvertaken(ownerAt(2), appliedFrom(999_999, want, 'kubectl-edit')), false);
  assert.equal(isOvertaken(ownerAt(2), appliedFrom(3, want)), true, 'our own recorded generation still fences');
  const bare = appliedFrom(3, want);
  assert.equal(isOvertaken(ownerAt(2), { ...bare, metadata: { ...bare.metadata, managedFields: undefined } }), false, 'no managedFields: nothing to trust');
  assert.equal(isOvertaken(ownerAt(2), { ...bare, metadata: { ...bare.metadata, managedFields: [null, 'x', { fieldsV1: 7 }] } }), false, 'malformed entries are not ours');
  assert.equal(fencedApply(want, ownerAt(2), appliedFrom(999_999, want, 'kubectl-edit')).metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '2', 'a foreign value is replaced by ours');
});

test('isOvertaken: only a live child applied from a newer generation of the same owner; unannotated, unreadable or another owner\'s never refuse', () => {
  const live = appliedFrom(3, full(desired()));
  assert.equal(appliedOwnerGeneration(live), 3);
  assert.equal(generationAppliedBy(ownerAt(2), live), 3);
  assert.equal(isOvertaken(ownerAt(2), live), true);
  assert.equal(isOvertaken(ownerAt(3), live), false, 'the same generation (a duplicate, or a related object changed) is not older');
  assert.equal(isOvertaken(ownerAt(4), live), false);
  assert.equal(isOvertaken(owner, live), false, 'an owner without generation cannot be compared');
  assert.equal(isOvertaken(ownerAt(2), undefined), false);
  assert.equal(isOvertaken(ownerAt(2), stored(full(desired()))), false, 'a child applied before the annotation existed');
  const adopter = { ...ownerAt(1), metadata: { ...ownerAt(1).metadata, uid: 'u2' } };
  assert.equal(generationAppliedBy(adopter, live), undefined, 'recorded by another owner (uid u1)');
  assert.equal(isOvertaken(adopter, live), false, 'an orphaned child adopted by a new owner of the same name is applied');
  const orphan = { ...live, metadata: { ...live.metadata, ownerReferences: [] } };
  assert.equal(isOvertaken(ownerAt(2), orphan), false, 'no controller: nobody to compare with');
  for (const junk of ['', 'x', '-1', '1e3', '9'.repeat(40)]) assert.equal(appliedOwnerGeneration(appliedFrom(junk, full(desired()))), undefined, junk);
});

test('fencedApply: the owner generation annotation (outside the hash, never lowered) and the resourceVersion precondition', () => {
  const want = full(desired());
  const live = stored(want);
  const body = fencedApply(want, ownerAt(5), live);
  assert.equal(body.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '5');
  assert.equal(body.metadata.annotations?.[APPLIED_HASH_ANNOTATION], want.metadata.annotations?.[APPLIED_HASH_ANNOTATION]);
  assert.equal(body.metadata.resourceVersion, '7', 'the resourceVersion read');
  assert.equal(fencedApply(want, ownerAt(5), undefined).metadata.resourceVersion, NEVER_STORED_RESOURCE_VERSION, 'a missing child: created only if still missing');
  assert.equal(fencedApply(want, owner, live).metadata.annotations?.[OWNER_GENERATION_ANNOTATION], undefined);
  assert.equal(fencedApply(want, ownerAt(2), appliedFrom(3, want)).metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '3', 'never lowered');
  const adopter = { ...ownerAt(1), metadata: { ...ownerAt(1).metadata, uid: 'u2' } };
  assert.equal(fencedApply(want, adopter, appliedFrom(3, want)).metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '1', 'another owner\'s generation is not kept');
  assert.equal(applyReason(want, { ...live, metadata: { ...live.metadata, annotations: body.metadata.annotations } }), undefined, 'a new owner generation alone sends no apply');
});

test('applyOwnedIfChanged refuses (409) to apply an older desired state over a child applied from a newer owner generation', async () => {
  const sent: KubeObject[] = [];
  const apply = async (_kind: KindRef, child: KubeObject) => {
    sent.push(child);
    return stored(child);
  };
  const newer = appliedFrom(3, full(desired(5)));
  await assert.rejects(applyOwnedIfChanged(apply, ownerAt(2), DEPLOY, desired(3), newer), (err: unknown) => {
    assert.ok(isConflict(err), 'a conflict: retried with fresh state');
    assert.match(String(err), /generation 3 of Owner o, newer than the generation 2/);
    return true;
  });
  assert.equal(sent.length, 0, 'nothing sent');
  const drifted = appliedFrom(3, full(desired()));
  (drifted.spec as { replicas: number }).replicas = 9;
  const repaired = await applyOwnedIfChanged(apply, ownerAt(2), DEPLOY, desired(), drifted);
  assert.equal(repaired.applied, 'drifted', 'the same desired state (same hash) is no step back: the drift is repaired');
  assert.equal(sent.at(-1)?.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '3', 'the recorded generation never goes down');
  const forward = await applyOwnedIfChanged(apply, ownerAt(4), DEPLOY, desired(6), newer);
  assert.equal(forward.applied, 'desired-changed');
  assert.equal(sent.at(-1)?.metadata.annotations?.[OWNER_GENERATION_ANNOTATION], '4');
  assert.equal(sent.at(-1)?.metadata.resourceVersion, '7');
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
  const same = await applyOwnedIfChanged(conflicting, ownerAt(2), DEPLOY, desired(), undefined, async () => {
    reads++;
    return createdMeanwhile;
  });
  assert.deepEqual([same.applied, same.object, applies, reads], [undefined, createdMeanwhile, 1, 1], 'the child now matches: no retry of the reconcile, no second apply');
  await assert.rejects(applyOwnedIfChanged(conflicting, ownerAt(2), DEPLOY, desired(), undefined), isConflict, 'without reread the 409 goes to the runtime as before');

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
  const again = await applyOwnedIfChanged(applyOnce, ownerAt(2), DEPLOY, desired(3), undefined, async () => older);
  assert.equal(again.applied, 'desired-changed');
  assert.equal(sent.at(-1)?.metadata.resourceVersion, '42', 'the precondition is the fresh child\'s');

  // Meanwhile a newer generation applied it: the fence still refuses, with its own 409.
  const newer = appliedFrom(3, full(desired(5)));
  await assert.rejects(applyOwnedIfChanged(conflicting, ownerAt(2), DEPLOY, desired(3), undefined, async () => newer), /newer than the generation 2/);
  // Created meanwhile under another controller: no take-over here, the API server's 409 goes back.
  const foreign = { ...stored(full(desired())), metadata: { ...stored(full(desired())).metadata, ownerReferences: [{ apiVersion: 'v1', kind: 'Owner', name: 'x', uid: 'other', controller: true }] } };
  await assert.rejects(applyOwnedIfChanged(conflicting, ownerAt(2), DEPLOY, desired(3), undefined, async () => foreign), /has been modified/);
  // A second lost precondition is not retried again.
  const before = applies;
  await assert.rejects(applyOwnedIfChanged(conflicting, ownerAt(2), DEPLOY, desired(3), undefined, async () => older), /has been modified/);
  assert.equal(applies - before, 2, 'one apply, one more after the re-read, no third');
  // Our own fence's 409 is not re-decided (reading again cannot lower a recorded generation).
  let rereads = 0;
  await assert.rejects(applyOwnedIfChanged(conflicting, ownerAt(2), DEPLOY, desired(3), newer, async () => {
    rereads++;
    return newer;
  }), /newer than the generation 2/);
  assert.equal(rereads, 0);
});
