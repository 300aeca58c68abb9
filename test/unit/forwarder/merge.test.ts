import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { newMessage, REASONS, type Reason, type ReconcileMessage } from '../../../src/contract/message.ts';
import { Coalescer } from '../../../src/forwarder/coalesce/coalescer.ts';
import { mergeMessages } from '../../../src/forwarder/coalesce/merge.ts';
import { fcParameters } from '../../support/fast-check.ts';

/** One key (Gadget ns/a); `uid` names which object of that name the message speaks of. */
const msg = (reason: Reason, at: number, uid: string | undefined, resourceVersion = String(at)): ReconcileMessage =>
  newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name: 'a', ...(uid ? { uid } : {}), resourceVersion }, reason, at);

/** What the reconciler does with a message when the live object has `liveUid` (row 11 of docs/semantics.md). */
const skipped = (m: ReconcileMessage, liveUid: string) => m.uid !== undefined && m.uid !== liveUid;
const fold = (messages: readonly ReconcileMessage[]) => messages.reduce((merged, m) => mergeMessages(merged, m));

test('merge of one object (same uid): the uid stays; Added stays Added until Deleted; otherwise the newer reason', () => {
  assert.equal(mergeMessages(msg('Added', 1, 'A'), msg('Modified', 2, 'A')).uid, 'A');
  assert.equal(mergeMessages(msg('Added', 1, 'A'), msg('Owned', 2, 'A')).reason, 'Added');
  assert.equal(mergeMessages(msg('Added', 1, 'A'), msg('Deleted', 2, 'A')).reason, 'Deleted');
  assert.equal(mergeMessages(msg('Modified', 1, 'A'), msg('Owned', 2, 'A')).reason, 'Owned');
  assert.equal(mergeMessages(msg('Owned', 1, 'A'), msg('Owned', 2, 'A')).uid, 'A');
});

test('ownedKinds: the union when both parts name their children, none when a part does not say', () => {
  const owned = (at: number, kinds?: string[]) =>
    newMessage(
      {
        cluster: 'c',
        apiVersion: 'example.com/v1',
        kind: 'Gadget',
        namespace: 'ns',
        name: 'a',
        uid: 'A',
        resourceVersion: String(at),
        ...(kinds ? { ownedKinds: kinds } : {}),
      },
      'Owned',
      at,
    );
  assert.deepEqual(mergeMessages(owned(1, ['Service']), owned(2, ['Deployment'])).ownedKinds, ['Deployment', 'Service']);
  assert.deepEqual(mergeMessages(owned(1, ['Deployment']), owned(2, ['Deployment'])).ownedKinds, ['Deployment']);
  assert.equal(mergeMessages(owned(1, ['Deployment']), owned(2)).ownedKinds, undefined, 'an Owned of an older producer may be any child');
  assert.equal(mergeMessages(owned(1, ['Deployment']), msg('Requeue', 2, 'A')).ownedKinds, undefined);
  assert.equal(mergeMessages(msg('Added', 1, 'A'), owned(2, ['Deployment'])).ownedKinds, undefined);
});

test('delete and recreate: the old Deleted then the new Added merge into a reconcile of whatever lives (no uid), reason Added', () => {
  const merged = mergeMessages(msg('Deleted', 1, 'A'), msg('Added', 2, 'B'));
  assert.equal(merged.uid, undefined);
  assert.equal(merged.reason, 'Added');
  assert.equal(merged.observedAt, 1);
  assert.equal(merged.resourceVersion, undefined);
});

test("a garbage-collected child of the old object (Owned, old uid) after the new object's Added does not hide it", () => {
  const merged = mergeMessages(msg('Added', 2, 'B'), msg('Owned', 3, 'A'));
  assert.equal(merged.uid, undefined, "the old owner uid must not replace the new object's");
  assert.equal(merged.reason, 'Added', "a child's event does not demote the creation of another object");
  assert.equal(skipped(merged, 'B'), false);
});

test("a relist that reports the new uid's ADDED before the old uid's DELETED still reconciles the new object", () => {
  const merged = mergeMessages(msg('Added', 2, 'B'), msg('Deleted', 2, 'A'));
  assert.equal(merged.uid, undefined);
  assert.equal(merged.reason, 'Added', 'the Deleted of the gone object does not replace the Added of the live one');
  assert.equal(mergeMessages(msg('Modified', 2, 'B'), msg('Deleted', 3, 'A')).reason, 'Modified');
  assert.equal(mergeMessages(msg('Deleted', 2, 'A'), msg('Deleted', 3, 'B')).reason, 'Deleted', 'both gone: Deleted');
});

test('a message without uid (hand-sent, any object of that name) is never narrowed to a uid by a merge', () => {
  assert.equal(mergeMessages(msg('Modified', 1, undefined), msg('Owned', 2, 'A')).uid, undefined);
  assert.equal(mergeMessages(msg('Owned', 1, 'A'), msg('Modified', 2, undefined)).uid, undefined);
  assert.equal(mergeMessages(msg('Owned', 1, 'A'), msg('Resync', 2, 'B')).reason, 'Owned', 'different objects: the higher priority reason');
});

test("coalescing window: Deleted (old uid) leads, the new object's Added is held, a GC'd child's Owned (old uid) merges in — the trailing message reconciles the new object", () => {
  const c = new Coalescer(1000);
  assert.equal(c.offer(msg('Deleted', 0, 'A'), 0).send?.uid, 'A', 'the deletion leaves at once');
  assert.equal(c.offer(msg('Added', 10, 'B'), 10).send, undefined, 'the second object change in the window is held');
  c.offer(msg('Owned', 300, 'A'), 300);
  const [trailing] = c.takeDue(1000);
  assert.ok(trailing);
  assert.equal(skipped(trailing, 'B'), false, `the trailing message must reconcile the live object B, got uid ${trailing.uid}`);
  assert.equal(trailing.reason, 'Added');
});

const uids = fc.constantFrom<string | undefined>('A', 'B', 'C', undefined);
const message = fc.record({
  reason: fc.constantFrom(...REASONS.filter((r) => r !== 'Retry' && r !== 'Requeue')),
  uid: uids,
  rv: fc.constantFrom('1', '2', '3'),
});

test('property: for any messages for one key, if one names the live uid U (or none), the merge is not skipped when the live uid is U; one uid throughout is kept', () => {
  fc.assert(
    fc.property(fc.array(message, { minLength: 1, maxLength: 12 }), (parts) => {
      const messages = parts.map((p, i) => msg(p.reason, i, p.uid, p.rv));
      const merged = fold(messages);
      for (const live of ['A', 'B', 'C', 'D']) {
        if (messages.some((m) => !skipped(m, live))) assert.equal(skipped(merged, live), false, `live ${live}: merged uid ${merged.uid}`);
      }
      const first = messages[0]!.uid;
      if (first !== undefined && messages.every((m) => m.uid === first)) assert.equal(merged.uid, first);
      assert.equal(merged.observedAt, 0);
    }),
    fcParameters(),
  );
});

test('property: through the coalescer, every message that a live object U would reconcile is followed by a sent message U reconciles', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(message, fc.integer({ min: 0, max: 400 })), { minLength: 1, maxLength: 30 }), (steps) => {
      const c = new Coalescer(500);
      const offered: { at: number; m: ReconcileMessage }[] = [];
      const sent: { at: number; m: ReconcileMessage }[] = [];
      let t = 0;
      for (const [p, dt] of steps) {
        t += dt;
        for (const m of c.takeDue(t)) sent.push({ at: t, m });
        const m = msg(p.reason, t, p.uid, p.rv);
        offered.push({ at: t, m });
        const { send } = c.offer(m, t);
        if (send) sent.push({ at: t, m: send });
      }
      for (const m of c.takeDue(t + 10_000)) sent.push({ at: t + 10_000, m });
      for (const live of ['A', 'B', 'C', 'D']) {
        for (const o of offered) {
          if (skipped(o.m, live)) continue;
          assert.ok(
            sent.some((s) => s.at >= o.at && !skipped(s.m, live)),
            `live ${live}: ${o.m.reason} uid ${o.m.uid} at ${o.at} was hidden (sent: ${sent.map((s) => `${s.at} ${s.m.reason} ${s.m.uid}`).join(', ')})`,
          );
        }
      }
    }),
    fcParameters(),
  );
});
