import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { StandbyJournal, WarmStandby, merged, revisionOf, type StandbyStream } from '../../../src/forwarder/source/standby.ts';
import { snapshotOf, type ObjectSnapshot } from '../../../src/forwarder/source/snapshot.ts';
import type { Change } from '../../../src/forwarder/source/store.ts';
import { decodeWatermark, encodeWatermark, withWatermark, WATERMARK_ANNOTATION } from '../../../src/forwarder/control/handover.ts';
import type { Lease } from '../../../src/kube/lease.ts';
import { fcParameters } from '../../support/fast-check.ts';

function snap(uid: string, resourceVersion: string, generation = 1): ObjectSnapshot {
  return snapshotOf({ metadata: { uid, name: uid, namespace: 'ns', resourceVersion, generation } }, [])!;
}
const added = (uid: string, rv: string): Change => ({ type: 'ADDED', current: snap(uid, rv) });
const modified = (uid: string, from: string, rv: string): Change => ({ type: 'MODIFIED', old: snap(uid, from), current: snap(uid, rv) });
const deleted = (uid: string, from: string, rv: string): Change => ({ type: 'DELETED', old: snap(uid, from), current: snap(uid, rv) });

test('revisionOf: decimal etcd revisions only', () => {
  assert.equal(revisionOf('12345'), 12345n);
  assert.equal(revisionOf(''), undefined);
  assert.equal(revisionOf('abc'), undefined);
  assert.equal(revisionOf('1e5'), undefined);
  assert.equal(revisionOf(undefined), undefined);
});

test('merged: one entry per uid keeps the first old and the newest current', () => {
  assert.deepEqual(merged(modified('u', '1', '2'), modified('u', '2', '3')), modified('u', '1', '3'));
  assert.deepEqual(merged(added('u', '2'), modified('u', '2', '3')), added('u', '3'));
  assert.deepEqual(merged(modified('u', '1', '2'), deleted('u', '2', '4')), deleted('u', '1', '4'));
  assert.deepEqual(merged(added('u', '2'), deleted('u', '2', '4')), deleted('u', '2', '4'));
});

test('the journal replays what came after the watermark, and resyncs when it cannot tell', () => {
  const j = new StandbyJournal();
  assert.equal(j.takeover('10').action, 'resync', 'not listed yet');
  j.reset('10');
  j.record(added('a', '11'), '11');
  j.record(modified('b', '5', '12'), '12');
  j.record(modified('a', '11', '13'), '13');
  assert.equal(j.size, 2);
  const all = j.takeover('10');
  assert.equal(all.action, 'replay');
  assert.deepEqual(all.action === 'replay' && all.changes, [modified('b', '5', '12'), added('a', '13')], 'in the order last seen');
  const after12 = j.takeover('12');
  assert.deepEqual(after12.action === 'replay' && after12.changes.map((c) => c.current.uid), ['a']);
  assert.deepEqual(j.takeover('13'), { action: 'replay', changes: [], gap: false });
  // Listed (at 10) after the watermark (8): the store's objects changed since are replayed too.
  const gap = j.takeover('8', () => [snap('old', '7'), snap('since', '9'), snap('a', '13')]);
  assert.deepEqual(gap.action === 'replay' && [gap.gap, gap.changes.map((c) => `${c.type} ${c.current.uid}`)], [
    true,
    ['ADDED since', 'MODIFIED b', 'ADDED a'],
  ]);
  assert.match(JSON.stringify(j.takeover(undefined)), /published no watermark/);
  assert.match(JSON.stringify(j.takeover('x')), /not an etcd revision/);
  j.confirm('12');
  assert.equal(j.size, 1);
  assert.equal(j.completeAfter, 12n);
  const confirmed = j.takeover('11');
  assert.deepEqual(
    confirmed.action === 'replay' && [confirmed.gap, confirmed.changes.map((c) => c.current.uid)],
    [true, ['a']],
    'confirmed changes are forgotten: before the journal, only the store tells',
  );
  j.record(added('c', 'opaque'), 'opaque');
  assert.match(JSON.stringify(j.takeover('13')), /cannot compare/);
});

test("a watermark between an object's last two changes leaves only the newest (an edit after a sent Added is Modified)", () => {
  const j = new StandbyJournal();
  j.reset('10');
  j.record(added('a', '11'), '11');
  j.record(modified('a', '11', '13'), '13');
  j.record(modified('b', '5', '12'), '12');
  j.record(modified('b', '12', '14'), '14');
  const replay = j.takeover('12');
  assert.deepEqual(replay.action === 'replay' && replay.changes, [modified('a', '11', '13'), modified('b', '12', '14')]);
  j.confirm('12');
  assert.deepEqual(j.takeover('12'), replay);
  assert.deepEqual(
    j.takeover('10'),
    { action: 'replay', changes: [modified('a', '11', '13'), modified('b', '12', '14')], gap: true },
    'once confirmed, the merged history before the watermark is gone',
  );
});

test('the journal is bounded: past its cap it forgets the oldest and no longer reaches back before it', () => {
  const j = new StandbyJournal(3);
  j.reset('100');
  for (let i = 1; i <= 5; i++) j.record(added(`u${i}`, String(100 + i)), String(100 + i));
  assert.equal(j.size, 3);
  assert.equal(j.completeAfter, 102n);
  assert.match(JSON.stringify(j.takeover('101')), /does not reach back/);
  const replay = j.takeover('102');
  assert.deepEqual(replay.action === 'replay' && replay.changes.map((c) => c.current.uid), ['u3', 'u4', 'u5']);
});

/**
 * Nothing is lost: a leader sees a stream's changes and sends them in order, publishing its
 * watermark now and then (only what it sent); a follower journals the same changes (listing
 * at some point, its journal capped), confirms the watermarks it reads, and takes over when
 * the leader dies. Every object changed after what the leader sent is replayed, or the takeover
 * resyncs (which forwards every object).
 */
test('property: a warm takeover replays every change the dead leader had not sent (but a deletion before the follower listed), or resyncs', () => {
  const op = fc.oneof(
    fc.record({ op: fc.constant('change' as const), uid: fc.constantFrom('a', 'b', 'c', 'd', 'e'), del: fc.boolean() }),
    fc.record({ op: fc.constant('send' as const), n: fc.nat(4) }),
    fc.constant({ op: 'publish' as const }),
    fc.constant({ op: 'read' as const }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), fc.nat(20), fc.integer({ min: 1, max: 6 }), (ops, listAt, cap) => {
      let revision = 100;
      const log: { uid: string; rv: number; change: Change }[] = [];
      const live = new Map<string, string>();
      let sent = 0; // the leader sent log[0..sent)
      let published: string | undefined;
      const journal = new StandbyJournal(cap);
      let listed = false;
      let listedAt = 0;
      ops.forEach((o, i) => {
        if (!listed && i >= listAt) {
          journal.reset(String(revision));
          listed = true;
          listedAt = revision;
        }
        if (o.op === 'change') {
          revision += 1;
          const rv = String(revision);
          const before = live.get(o.uid);
          const change: Change = before === undefined ? added(o.uid, rv) : o.del ? deleted(o.uid, before, rv) : modified(o.uid, before, rv);
          if (change.type === 'DELETED') live.delete(o.uid);
          else live.set(o.uid, rv);
          log.push({ uid: o.uid, rv: revision, change });
          if (listed) journal.record(change, rv);
        } else if (o.op === 'send') sent = Math.min(log.length, sent + o.n);
        else if (o.op === 'publish') published = sent === log.length ? String(revision) : sent > 0 ? String(log[sent - 1]!.rv) : published;
        else if (o.op === 'read' && published !== undefined) journal.confirm(published);
      });
      if (!listed) {
        journal.reset(String(revision));
        listedAt = revision;
      }
      const store = () => [...live].map(([uid, rv]) => snap(uid, rv)); // The acquiring round reads the Lease as the dead leader last wrote it.
      const takeover = journal.takeover(published, store);
      if (takeover.action === 'resync') return;
      const through = BigInt(published ?? '0');
      // A deletion between the watermark and the follower's list is not known to it (as to a cold leader's resync).
      const lastChange = new Map(log.map((e) => [e.uid, e]));
      const unsent = new Set(
        log
          .filter((e) => BigInt(e.rv) > through)
          .map((e) => e.uid)
          .filter((uid) => {
            const last = lastChange.get(uid)!;
            return !(last.change.type === 'DELETED' && last.rv <= listedAt);
          }),
      );
      const replayed = new Set(takeover.changes.map((c) => c.current.uid));
      for (const uid of unsent) assert.ok(replayed.has(uid), `${uid} changed after the watermark ${through} and was not replayed`);
    }),
    fcParameters(),
  );
});

test('the warm standby publishes only what a drained pipeline covers, and hands the previous watermark on', () => {
  const standby = new WarmStandby();
  const stream = (path: string, over: Partial<Omit<StandbyStream, 'snapshots'>> = {}): StandbyStream => ({
    path,
    synced: true,
    resyncPending: false,
    resourceVersion: '50',
    snapshots: () => [],
    ...over,
  });
  standby.listed('/a', { first: true, changes: [], resourceVersion: '40' });
  standby.changed('/a', added('x', '45'));
  standby.changed('/a', added('y', '48'));
  standby.confirm(new Map([['/a', '45']]));
  assert.equal(standby.journalled, 1);
  assert.deepEqual([...standby.watermark([stream('/a')], true)], [], 'a follower publishes nothing');
  const plan = standby.takeover(
    [stream('/a'), stream('/b', { synced: false })],
    new Map([
      ['/a', '46'],
      ['/c', '1'],
    ]),
  );
  assert.deepEqual(
    plan.map((p) => p.takeover?.action),
    ['replay', undefined],
  );
  assert.deepEqual(plan[0]!.takeover?.action === 'replay' && plan[0]!.takeover.changes.map((c) => c.current.uid), ['y']);
  assert.equal(standby.journalled, 0);
  assert.deepEqual([...standby.watermark([stream('/a')], false)], [['/a', '46']], "not drained: the previous leader's watermark stands");
  assert.deepEqual(
    [...standby.watermark([stream('/a', { resyncPending: true }), stream('/b', { synced: false })], true)],
    [['/a', '46']],
    'a pending resync holds the watermark',
  );
  assert.deepEqual(
    [...standby.watermark([stream('/a'), stream('/b')], true)],
    [
      ['/a', '50'],
      ['/b', '50'],
    ],
  );
  standby.changed('/a', added('z', '51'));
  assert.equal(standby.journalled, 0, 'a leader journals nothing');
  standby.follow([stream('/a', { resourceVersion: '52' })]);
  standby.changed('/a', added('z', '53'));
  const again = standby.takeover([stream('/a')], new Map([['/a', '52']]));
  assert.deepEqual(again[0]!.takeover?.action === 'replay' && again[0]!.takeover.changes.map((c) => c.current.uid), ['z']);
});

test('handover: the watermark round-trips through the Lease, and anything else reads as none, with the reason', () => {
  const lease = (annotations: unknown): Lease => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'l', namespace: 'n', annotations },
  });
  const m = new Map([
    ['/apis/x/v1/gadgets', '123'],
    ['/api/v1/namespaces/a/configmaps', '9'],
  ]);
  assert.deepEqual(decodeWatermark(lease({ [WATERMARK_ANNOTATION]: encodeWatermark(m) })), { watermark: m });
  assert.deepEqual(decodeWatermark(undefined), { watermark: new Map() });
  assert.deepEqual(decodeWatermark(lease({ other: 'x' })), { watermark: new Map() });
  for (const bad of ['{', '[]', '"s"', '{"a":1}', 'null', JSON.stringify(Object.fromEntries(Array.from({ length: 2001 }, (_, i) => [String(i), '1'])))]) {
    const read = decodeWatermark(lease({ [WATERMARK_ANNOTATION]: bad }));
    assert.equal(read.watermark.size, 0, bad.slice(0, 20));
    assert.match(read.problem ?? '', /forwarded-through/);
  }
  assert.match(decodeWatermark(lease({ [WATERMARK_ANNOTATION]: 5 })).problem ?? '', /not a string/);
  const meta = { name: 'l', namespace: 'n', resourceVersion: '7', annotations: { keep: 'me', [WATERMARK_ANNOTATION]: '{}' } };
  assert.deepEqual(withWatermark(meta, m), { ...meta, annotations: { keep: 'me', [WATERMARK_ANNOTATION]: encodeWatermark(m) } });
  assert.deepEqual(withWatermark(meta, undefined), { ...meta, annotations: { keep: 'me' } });
  assert.deepEqual(withWatermark({ name: 'l', namespace: 'n', annotations: { [WATERMARK_ANNOTATION]: '{}' } }, undefined), { name: 'l', namespace: 'n' });
});
