import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Coalescer } from '../../../src/forwarder/coalescer.ts';
import { mergeMessages } from '../../../src/forwarder/merge.ts';
import { newMessage, type Reason } from '../../../src/contract/message.ts';

const msg = (name: string, reason: Reason, at: number, uid = `uid-${name}`) =>
  newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'ns', name, uid, resourceVersion: String(at) }, reason, at);

test('changes of one key within the window leave as one message', () => {
  const c = new Coalescer(500);
  assert.equal(c.offer(msg('a', 'Modified', 1000), 1000), false);
  assert.equal(c.offer(msg('a', 'Modified', 1100), 1100), true);
  assert.equal(c.offer(msg('a', 'Modified', 1400), 1400), true);
  assert.deepEqual(c.takeDue(1499), []);
  const due = c.takeDue(1500);
  assert.equal(due.length, 1);
  assert.equal(due[0]!.resourceVersion, '1400', 'newest state named');
  assert.equal(due[0]!.observedAt, 1000, 'lag measured from the first change');
  assert.equal(c.size, 0);
});

test('the window does not restart on every change (no starvation under a steady stream)', () => {
  const c = new Coalescer(500);
  let sent = 0;
  for (let t = 0; t <= 5000; t += 100) {
    c.offer(msg('hot', 'Modified', t), t);
    sent += c.takeDue(t).length;
  }
  // The window opens at the first change after a send: one message per (window + gap) = 600 ms.
  assert.ok(sent >= Math.floor(5000 / 600), `a steady stream is forwarded about once per window, got ${sent}`);
});

test('keys are independent and leave in first-seen order; nextDueAt and takeAll', () => {
  const c = new Coalescer(100);
  c.offer(msg('b', 'Added', 10), 10);
  c.offer(msg('a', 'Added', 20), 20);
  assert.equal(c.nextDueAt(), 110);
  assert.deepEqual(c.takeDue(200).map((m) => m.name), ['b', 'a']);
  c.offer(msg('x', 'Added', 300), 300);
  assert.deepEqual(c.takeAll().map((m) => m.name), ['x']);
  assert.equal(c.nextDueAt(), undefined);
});

test('merge: Added stays Added for the same uid; Deleted and a new uid win', () => {
  assert.equal(mergeMessages(msg('a', 'Added', 1), msg('a', 'Modified', 2)).reason, 'Added');
  assert.equal(mergeMessages(msg('a', 'Added', 1), msg('a', 'Owned', 2)).reason, 'Added');
  assert.equal(mergeMessages(msg('a', 'Added', 1), msg('a', 'Deleted', 2)).reason, 'Deleted');
  assert.equal(mergeMessages(msg('a', 'Modified', 1), msg('a', 'Deleted', 2)).reason, 'Deleted');
  const recreated = mergeMessages(msg('a', 'Deleted', 1, 'u1'), msg('a', 'Added', 2, 'u2'));
  assert.equal(recreated.reason, 'Added');
  assert.equal(recreated.uid, 'u2');
  assert.equal(mergeMessages(msg('a', 'Added', 1, 'u1'), msg('a', 'Modified', 2, 'u2')).reason, 'Modified', 'different uid: newest wins');
});
