import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Coalescer } from '../../../src/forwarder/coalesce/coalescer.ts';
import { mergeMessages } from '../../../src/forwarder/coalesce/merge.ts';
import fc from 'fast-check';
import { fcParameters } from '../../support/fast-check.ts';
import { newMessage, type Reason, type ReconcileMessage } from '../../../src/contract/message.ts';

const msg = (name: string, reason: Reason, at: number, uid = `uid-${name}`) =>
  newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name, uid, resourceVersion: String(at) }, reason, at);

test('an isolated change leaves at once; changes inside its window leave as one trailing message', () => {
  const c = new Coalescer(500);
  const first = c.offer(msg('a', 'Added', 1000), 1000);
  assert.equal(first.send?.resourceVersion, '1000', 'the leading edge is sent immediately');
  assert.equal(first.coalesced, false);
  assert.deepEqual(c.offer(msg('a', 'Modified', 1100), 1100), { send: undefined, coalesced: false, heldUntil: 1500 });
  assert.deepEqual(c.offer(msg('a', 'Modified', 1400), 1400), { send: undefined, coalesced: true, heldUntil: 1500 });
  assert.equal(c.size, 1);
  assert.deepEqual(c.takeDue(1499), []);
  const due = c.takeDue(1500);
  assert.equal(due.length, 1);
  assert.equal(due[0]!.reason, 'Modified');
  assert.equal(due[0]!.resourceVersion, undefined, 'it stands for two events: no single resourceVersion');
  assert.equal(due[0]!.observedAt, 1100, 'lag measured from the first held change');
  assert.equal(c.size, 0);
});

test('a quiet key sends its next change at once again', () => {
  const c = new Coalescer(500);
  assert.ok(c.offer(msg('a', 'Modified', 0), 0).send);
  assert.deepEqual(c.takeDue(600), [], 'nothing was held');
  assert.ok(c.offer(msg('a', 'Modified', 700), 700).send, 'after the window the next change leads again');
});

test('a burst costs at most two messages; a steady stream at most one per window (no starvation)', () => {
  const c = new Coalescer(500);
  let sent = 0;
  for (let t = 0; t <= 200; t += 20) {
    if (c.offer(msg('burst', 'Modified', t), t).send) sent++;
  }
  sent += c.takeDue(1000).length;
  assert.equal(sent, 2, '11 changes in 200 ms: the first at once, the rest as one trailing message');

  const s = new Coalescer(500);
  let streamed = 0;
  for (let t = 0; t <= 5000; t += 100) {
    if (s.offer(msg('hot', 'Modified', t), t).send) streamed++;
    streamed += s.takeDue(t).length;
  }
  assert.ok(streamed >= Math.floor(5000 / 500), `a steady stream is forwarded about once per window, got ${streamed}`);
  assert.ok(streamed <= Math.ceil(5000 / 500) + 1, `and not more often, got ${streamed}`);
});

test('keys are independent and held ones leave in first-held order; nextDueAt and takeAll', () => {
  const c = new Coalescer(100);
  c.offer(msg('b', 'Added', 10), 10);
  c.offer(msg('a', 'Added', 20), 20);
  assert.equal(c.nextDueAt(), undefined, 'leading edges are not held');
  c.offer(msg('b', 'Modified', 30), 30);
  c.offer(msg('a', 'Modified', 40), 40);
  assert.equal(c.nextDueAt(), 110);
  assert.deepEqual(
    c.takeDue(200).map((m) => m.name),
    ['b', 'a'],
  );
  c.offer(msg('x', 'Added', 300), 300);
  c.offer(msg('x', 'Modified', 310), 310);
  assert.deepEqual(
    c.takeAll().map((m) => m.name),
    ['x'],
  );
  assert.equal(c.nextDueAt(), undefined);
  assert.equal(c.size, 0);
});

test('nothing is lost: every change is sent at once or in exactly one trailing message naming the newest state', () => {
  const c = new Coalescer(50);
  const newest = new Map<string, number>();
  const delivered = new Map<string, number>();
  let t = 0;
  for (let i = 0; i < 2000; i++) {
    t += (i * 7919) % 13;
    const name = `k${(i * 31) % 17}`;
    newest.set(name, t);
    const { send } = c.offer(msg(name, 'Modified', t), t);
    for (const m of [...(send ? [send] : []), ...c.takeDue(t)]) delivered.set(m.name, Math.max(delivered.get(m.name) ?? -1, Number(m.resourceVersion)));
  }
  for (const m of c.takeDue(t + 1000)) delivered.set(m.name, Math.max(delivered.get(m.name) ?? -1, Number(m.resourceVersion)));
  assert.deepEqual(delivered, newest, 'the newest change of every key was delivered');
});

test("a change of the object itself does not wait behind its children's window; the second one in a window does", () => {
  const c = new Coalescer(500);
  assert.ok(c.offer(msg('a', 'Owned', 0), 0).send, 'a child event leads and opens a window');
  assert.equal(c.offer(msg('a', 'Owned', 100), 100).heldUntil, 500, 'the next child event is held');
  const edit = c.offer(msg('a', 'Modified', 200), 200);
  assert.equal(edit.send?.reason, 'Modified', 'the spec change leaves at once');
  assert.equal(edit.send?.observedAt, 100, 'carrying the held child event (lag from the first change)');
  assert.equal(edit.coalesced, true);
  assert.equal(c.size, 0, 'nothing is held any more');
  assert.equal(c.offer(msg('a', 'Modified', 300), 300).heldUntil, 500, 'a second spec change in the window is held');
  assert.equal(c.takeDue(500).length, 1);
  assert.equal(
    c.offer(msg('a', 'Modified', 600), 600).heldUntil,
    1000,
    'a window opened by a trailing spec change counts it as its one: a steady stream of edits stays at one message per window',
  );
  assert.equal(c.takeDue(1000).length, 1);
  assert.equal(c.offer(msg('a', 'Owned', 1100), 1100).heldUntil, 1500);
  assert.equal(c.takeDue(1500)[0]?.reason, 'Owned');
  assert.ok(c.offer(msg('a', 'Modified', 1600), 1600).send, 'after a trailing child event, the next edit leads again');
  assert.equal(c.offer(msg('b', 'Resync', 0), 0).send?.reason, 'Resync');
  assert.equal(c.offer(msg('b', 'Resync', 10), 10).heldUntil, 500, 'a resync is not a change of the object: held like a child event');
});

test('property: mixed changes — every change is followed by a message of its key sent no earlier; at most two per window, so any four sends of a key span a window', () => {
  const reasons: Reason[] = ['Owned', 'Modified', 'Owned', 'Resync', 'Added', 'Owned'];
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 120 })), { maxLength: 200 }),
      (steps) => {
        const c = new Coalescer(100);
        const lastChange = new Map<string, number>();
        const sends = new Map<string, number[]>();
        const sent = (m: ReconcileMessage, at: number) => sends.set(m.name, [...(sends.get(m.name) ?? []), at]);
        let t = 0;
        for (const [k, r, dt] of steps) {
          t += dt;
          for (const m of c.takeDue(t)) sent(m, t);
          const name = `k${k}`;
          lastChange.set(name, t);
          const { send } = c.offer(msg(name, reasons[r]!, t), t);
          if (send) sent(send, t);
        }
        for (const m of c.takeDue(t + 1000)) sent(m, t + 1000);
        for (const [name, at] of lastChange)
          assert.ok(
            (sends.get(name) ?? []).some((s) => s >= at),
            `${name}: changed at ${at}, last sent ${sends.get(name)?.at(-1)}`,
          );
        // Windows follow each other (a trailing message opens the next one at the end of the last)
        // and a window's first send is at its opening: with two per window, a span shorter than one
        // window can hold the second send of one window and both of the next — three, never four.
        // (Sliding spans are not windows: a child's trailing message and an object change at the
        // start of the next window may follow an object change late in the last one.)
        for (const times of sends.values()) {
          for (let i = 3; i < times.length; i++)
            assert.ok(times[i]! - times[i - 3]! >= 100 || times[i] === t + 1000, `four sends within one window: ${times.slice(i - 3, i + 1)}`);
        }
      },
    ),
    fcParameters(),
  );
});

test("merge: a resourceVersion survives only when both name the same event (a Service event merged with a later Deployment event must not look like the Deployment's own)", () => {
  const service = { ...msg('a', 'Owned', 1), resourceVersion: '700' };
  const deployment = { ...msg('a', 'Owned', 2), resourceVersion: '701' };
  assert.equal(mergeMessages(service, deployment).resourceVersion, undefined);
  assert.equal(mergeMessages(deployment, { ...deployment, observedAt: 3 }).resourceVersion, '701', 'the same event twice keeps it');
});

test('merge: Added stays Added for the same uid; Deleted wins; a recreate carries no uid (merge.test.ts has every rule)', () => {
  assert.equal(mergeMessages(msg('a', 'Added', 1), msg('a', 'Modified', 2)).reason, 'Added');
  assert.equal(mergeMessages(msg('a', 'Added', 1), msg('a', 'Owned', 2)).reason, 'Added');
  assert.equal(mergeMessages(msg('a', 'Added', 1), msg('a', 'Deleted', 2)).reason, 'Deleted');
  assert.equal(mergeMessages(msg('a', 'Modified', 1), msg('a', 'Deleted', 2)).reason, 'Deleted');
  const recreated = mergeMessages(msg('a', 'Deleted', 1, 'u1'), msg('a', 'Added', 2, 'u2'));
  assert.equal(recreated.reason, 'Added');
  assert.equal(recreated.uid, undefined, 'two objects of one name: the reconcile reads whichever lives');
  assert.equal(
    mergeMessages(msg('a', 'Added', 1, 'u1'), msg('a', 'Modified', 2, 'u2')).reason,
    'Modified',
    'different uids, both changes of an object: the newer',
  );
});

test('forgetEnded drops ended windows with nothing held (a resync leaves no windows behind), keeps held and open ones', () => {
  const c = new Coalescer(500);
  for (let i = 0; i < 5000; i++) c.offer(msg(`obj-${i}`, 'Resync', 0), 0);
  c.offer(msg('held', 'Added', 0), 0);
  c.offer(msg('held', 'Modified', 100), 100);
  c.offer(msg('late', 'Added', 400), 400);
  assert.equal(c.windows, 5002);
  c.forgetEnded(600);
  assert.equal(c.windows, 2, 'the 5000 ended leading-edge windows are gone; the held one and the still open one stay');
  assert.equal(c.size, 1);
  assert.ok(c.offer(msg('late', 'Modified', 650), 650).send === undefined, 'a still open window keeps holding');
  assert.deepEqual(
    c.takeDue(1000).map((m) => m.name),
    ['held', 'late'],
  );
  c.forgetEnded(5000);
  assert.equal(c.windows, 0);
});
