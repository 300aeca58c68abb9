import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { encodeMessage, followUp, newMessage, reasonPriority, type Reason, type ReconcileMessage } from '../../../../src/contract/message.ts';
import { forLiveObject, groupBatch, representative } from '../../../../src/core/reconcile/batch.ts';
import { fcParameters } from '../../../support/fast-check.ts';

const NOW = 1_700_000_000_000;
let id = 0;
const record = (body: string): SQSRecord => ({
  messageId: `m-${++id}`,
  receiptHandle: 'rh',
  body,
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:eu-west-1:1:q',
  awsRegion: 'eu-west-1',
  attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 's', ApproximateFirstReceiveTimestamp: '0' },
  messageAttributes: {},
});
const msg = (name: string, extra: Partial<ReconcileMessage> = {}): ReconcileMessage => ({
  ...newMessage({ cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name }, 'Modified', NOW - 1000),
  ...extra,
});

test('records for one object become one group; poison records are set aside with the reason', () => {
  const rs = [record(encodeMessage(msg('a'))), record('not json'), record(encodeMessage(msg('b'))), record(encodeMessage(msg('a', { reason: 'Owned' })))];
  const { groups, poison } = groupBatch(rs, NOW);
  assert.equal(groups.length, 2);
  assert.deepEqual(
    groups.map((g) => g.records.length),
    [2, 1],
  );
  assert.equal(groups[0]?.message.name, 'a');
  assert.equal(poison.length, 1);
  assert.equal(poison[0]?.record, rs[1]);
  assert.match(poison[0]?.error ?? '', /not JSON/);
});

test('the same name in another cluster, namespace or kind is another key', () => {
  const rs = [msg('a'), msg('a', { cluster: 'd' }), msg('a', { namespace: 'other' }), msg('a', { kind: 'Secret' })].map((m) => record(encodeMessage(m)));
  assert.equal(groupBatch(rs, NOW).groups.length, 4);
});

test('the representative has the highest attempt (events do not reset backoff), then the newest observedAt', () => {
  const fresh = msg('a', { observedAt: NOW - 10 });
  const retry = followUp(msg('a', { observedAt: NOW - 5000 }), { reason: 'Retry', attempt: 3 });
  assert.equal(representative([fresh, retry]), retry);
  const older = msg('a', { observedAt: NOW - 500 });
  assert.equal(representative([older, fresh]), fresh);
});

test("a group of Owned events names the union of their children's kinds, or none when one of them names none", () => {
  const service = msg('a', { reason: 'Owned', resourceVersion: '700', ownedKinds: ['Service'], observedAt: NOW - 500 });
  const deployment = msg('a', { reason: 'Owned', resourceVersion: '701', ownedKinds: ['Deployment'], observedAt: NOW - 100 });
  const [both] = groupBatch([record(encodeMessage(service)), record(encodeMessage(deployment))], NOW).groups;
  assert.deepEqual(both!.message.ownedKinds, ['Deployment', 'Service']);
  const [twice] = groupBatch([record(encodeMessage(deployment)), record(encodeMessage({ ...deployment, resourceVersion: '702' }))], NOW).groups;
  assert.deepEqual(twice!.message.ownedKinds, ['Deployment']);
  const unknown = msg('a', { reason: 'Owned', resourceVersion: '699', observedAt: NOW - 900 });
  const [mixed] = groupBatch([record(encodeMessage(unknown)), record(encodeMessage(deployment))], NOW).groups;
  assert.equal(mixed!.message.ownedKinds, undefined, 'an Owned from an older producer may be any child');
});

test('a group of events with different resourceVersions is represented without one; the same version twice keeps it', () => {
  const service = msg('a', { reason: 'Owned', resourceVersion: '700', observedAt: NOW - 500 });
  const deployment = msg('a', { reason: 'Owned', resourceVersion: '701', observedAt: NOW - 100 });
  const [mixed] = groupBatch([record(encodeMessage(service)), record(encodeMessage(deployment))], NOW).groups;
  assert.equal(mixed!.message.reason, 'Owned');
  assert.equal(mixed!.message.resourceVersion, undefined, "two children's events: no single version names them");
  assert.equal(mixed!.body, encodeMessage(deployment), 'the raw body of the representative is kept (for the DLQ)');
  const [same] = groupBatch([record(encodeMessage(deployment)), record(encodeMessage(deployment))], NOW).groups;
  assert.equal(same!.message.resourceVersion, '701');
  const [single] = groupBatch([record(encodeMessage(service))], NOW).groups;
  assert.equal(single!.message.resourceVersion, '700');
});

test('a due message supersedes a pending long requeue of the same key', () => {
  const pending = msg('a', { reason: 'Requeue', notBefore: NOW + 3_600_000 });
  const fresh = msg('a');
  const { groups } = groupBatch([record(encodeMessage(pending)), record(encodeMessage(fresh))], NOW);
  assert.equal(groups[0]?.notDue, false);
  assert.equal(groups[0]?.message.reason, 'Modified');
});

test('a group with nothing due is notDue, represented by the earliest notBefore', () => {
  const later = msg('a', { reason: 'Requeue', notBefore: NOW + 7_200_000 });
  const sooner = msg('a', { reason: 'Requeue', notBefore: NOW + 3_600_000 });
  const { groups } = groupBatch([record(encodeMessage(later)), record(encodeMessage(sooner))], NOW);
  assert.equal(groups[0]?.notDue, true);
  assert.equal(groups[0]?.message.notBefore, sooner.notBefore);
  assert.equal(groups[0]?.body, encodeMessage(sooner));
});

test("a batch reconciles changes of the objects themselves first, then children's events, then resyncs; otherwise in arrival order", () => {
  const rs = [
    msg('resync', { reason: 'Resync' }),
    msg('owned-1', { reason: 'Owned' }),
    msg('edited', { reason: 'Modified' }),
    msg('owned-2', { reason: 'Owned' }),
    msg('retry', { reason: 'Retry', attempt: 2 }),
    msg('created', { reason: 'Added' }),
    msg('owned-then-edited', { reason: 'Owned' }),
    msg('owned-then-edited', { reason: 'Modified' }),
  ].map((m) => record(encodeMessage(m)));
  assert.deepEqual(
    groupBatch(rs, NOW).groups.map((g) => g.message.name),
    ['edited', 'created', 'owned-then-edited', 'owned-1', 'owned-2', 'retry', 'resync'],
  );
  const delayed = [msg('later', { reason: 'Modified', notBefore: NOW + 60_000 }), msg('now', { reason: 'Owned' })].map((m) => record(encodeMessage(m)));
  assert.deepEqual(
    groupBatch(delayed, NOW).groups.map((g) => g.message.name),
    ['later', 'now'],
    'a group with nothing due keeps the priority of its messages (it is only re-delayed)',
  );
});

test('property: every record lands in exactly one group or in poison', () => {
  const names = fc.constantFrom('a', 'b', 'c');
  const body = fc.oneof(
    names.map((n) => encodeMessage(msg(n))),
    fc.tuple(names, fc.integer({ min: 0, max: 9 })).map(([n, a]) => encodeMessage(msg(n, { attempt: a, reason: 'Retry' }))),
    fc.string(),
  );
  fc.assert(
    fc.property(fc.array(body, { maxLength: 30 }), (bodies) => {
      const rs = bodies.map(record);
      const { groups, poison } = groupBatch(rs, NOW);
      const seen = [...groups.flatMap((g) => g.records), ...poison.map((p) => p.record)].map((r) => r.messageId).sort();
      assert.deepEqual(seen, rs.map((r) => r.messageId).sort());
      assert.equal(new Set(groups.map((g) => g.key)).size, groups.length);
      const priorities = groups.map((g) => Math.min(...g.records.map((r) => reasonPriority((JSON.parse(r.body) as ReconcileMessage).reason))));
      assert.deepEqual(
        priorities,
        [...priorities].sort((a, b) => a - b),
        'groups are in priority order',
      );
    }),
    fcParameters(),
  );
});

// A key is a name: the old object (uid A) was deleted and a new one (uid B) created under it.
const skipped = (m: ReconcileMessage, liveUid: string) => m.uid !== undefined && m.uid !== liveUid;

test("a pending Retry of the old uid beside the new object's Added: the group carries no uid, so the new object is reconciled", () => {
  const retryOfOld = followUp(msg('a', { uid: 'A', reason: 'Added', observedAt: NOW - 60_000 }), { reason: 'Retry', attempt: 3 });
  const addedNew = msg('a', { uid: 'B', reason: 'Added' });
  const [group] = groupBatch([record(encodeMessage(retryOfOld)), record(encodeMessage(addedNew))], NOW).groups;
  assert.equal(group!.message.reason, 'Retry', 'the representative is still the highest attempt');
  assert.equal(group!.message.uid, undefined, 'the old uid must not stand for the group: the new object would be skipped');
  assert.equal(skipped(group!.message, 'B'), false);
  assert.equal(group!.body, encodeMessage(retryOfOld), "the raw body stays the representative's");
});

test("forLiveObject: once the live uid is known, the group runs as the live object's own messages (its attempt, its reason)", () => {
  const retryOfOld = followUp(msg('a', { uid: 'A' }), { reason: 'Retry', attempt: 3 });
  const addedNew = msg('a', { uid: 'B', reason: 'Added', resourceVersion: '9' });
  const [group] = groupBatch([record(encodeMessage(retryOfOld)), record(encodeMessage(addedNew))], NOW).groups;
  const forB = forLiveObject(group!, 'B');
  assert.equal(forB.attempt, 0, "the old object's failures do not count against the new one (backoff, maxAttempts)");
  assert.equal(forB.reason, 'Added');
  assert.equal(forB.uid, undefined, 'it still stands for the whole group');
  assert.equal(forB.resourceVersion, undefined);
  assert.equal(forLiveObject(group!, 'A').attempt, 3, 'if the old object were the live one, its retry would go on');
  assert.equal(forLiveObject(group!, 'C'), group!.message, "no message names the live uid: the group's own message");
  assert.equal(forLiveObject(group!, undefined), group!.message);
  const [single] = groupBatch([record(encodeMessage(addedNew)), record(encodeMessage(msg('a', { uid: 'B', reason: 'Owned' })))], NOW).groups;
  assert.equal(single!.message.uid, 'B', 'one uid throughout: kept');
  assert.equal(forLiveObject(single!, 'B'), single!.message);
});

test('nothing due, requeues of two uids: the one re-delayed carries no uid (it stands for both)', () => {
  const oldRequeue = msg('a', { uid: 'A', reason: 'Requeue', notBefore: NOW + 3_600_000 });
  const newRequeue = msg('a', { uid: 'B', reason: 'Requeue', notBefore: NOW + 7_200_000 });
  const [group] = groupBatch([record(encodeMessage(oldRequeue)), record(encodeMessage(newRequeue))], NOW).groups;
  assert.equal(group!.notDue, true);
  assert.equal(group!.message.notBefore, oldRequeue.notBefore);
  assert.equal(group!.message.uid, undefined, "the new object's requeue is dropped as a duplicate: the survivor must not be the old uid's alone");
  const [same] = groupBatch([record(encodeMessage(newRequeue)), record(encodeMessage({ ...newRequeue, notBefore: NOW + 3_600_000 }))], NOW).groups;
  assert.equal(same!.message.uid, 'B');
});

test('property: for any group of one key, if a due message names the live uid U (or none), the group is reconciled when U lives, with the highest attempt among those messages', () => {
  const part = fc.record({
    uid: fc.constantFrom<string | undefined>('A', 'B', 'C', undefined),
    reason: fc.constantFrom<Reason>('Added', 'Modified', 'Deleted', 'Owned', 'Resync', 'Requeue', 'Retry'),
    attempt: fc.integer({ min: 0, max: 9 }),
    observedAt: fc.integer({ min: NOW - 10_000, max: NOW }),
    notBefore: fc.option(fc.constantFrom(NOW - 1, NOW + 3_600_000), { nil: undefined }),
  });
  fc.assert(
    fc.property(fc.array(part, { minLength: 1, maxLength: 10 }), (parts) => {
      const messages = parts.map((p) =>
        msg('a', {
          reason: p.reason,
          attempt: p.attempt,
          observedAt: p.observedAt,
          ...(p.uid ? { uid: p.uid } : {}),
          ...(p.notBefore !== undefined ? { notBefore: p.notBefore } : {}),
        }),
      );
      const [group] = groupBatch(
        messages.map((m) => record(encodeMessage(m))),
        NOW,
      ).groups;
      const due = messages.filter((m) => m.notBefore === undefined || m.notBefore <= NOW);
      assert.equal(group!.notDue, due.length === 0);
      for (const live of ['A', 'B', 'C', 'D']) {
        const current = (group!.notDue ? messages : due).filter((m) => !skipped(m, live));
        if (current.length === 0) continue;
        assert.equal(skipped(group!.message, live), false, `live ${live}: the group carries uid ${group!.message.uid}`);
        if (!group!.notDue) assert.equal(forLiveObject(group!, live).attempt, Math.max(...current.map((m) => m.attempt)));
      }
    }),
    fcParameters(),
  );
});
