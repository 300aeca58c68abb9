import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffRelist, SnapshotStore } from '../../../src/forwarder/source/store.ts';
import { INTERN_POOL_SIZE, internPoolSize, interned, snapshotOf, type ObjectSnapshot } from '../../../src/forwarder/source/snapshot.ts';

const s = (uid: string, rv: string, name = uid): ObjectSnapshot => snapshotOf({ metadata: { uid, name, resourceVersion: rv } })!;

test('a relist reports only objects whose resourceVersion changed, plus new and vanished ones', () => {
  const stored = new Map([
    ['a', s('a', '1')],
    ['b', s('b', '1')],
    ['c', s('c', '1')],
  ]);
  const changes = diffRelist(stored, [s('a', '1'), s('b', '2'), s('d', '1')]);
  assert.deepEqual(changes.map((c) => `${c.type} ${c.current.uid}`).sort(), ['ADDED d', 'DELETED c', 'MODIFIED b']);
  const modified = changes.find((c) => c.type === 'MODIFIED')!;
  assert.equal(modified.old?.resourceVersion, '1');
});

test('an unchanged relist produces nothing (no re-flood)', () => {
  const list = Array.from({ length: 100 }, (_, i) => s(`u${i}`, `${i}`));
  const store = new SnapshotStore();
  store.replace(list);
  assert.deepEqual(store.replace(list), []);
});

test('a recreated object (same name, new uid) is a DELETED of the old uid and an ADDED of the new', () => {
  const changes = diffRelist(new Map([['old', s('old', '1', 'x')]]), [s('new', '2', 'x')]);
  assert.deepEqual(changes.map((c) => `${c.type} ${c.current.uid}`).sort(), ['ADDED new', 'DELETED old']);
});

test('apply keeps the previous snapshot, and treats MODIFIED of an unknown uid as ADDED', () => {
  const store = new SnapshotStore();
  assert.equal(store.apply('MODIFIED', s('a', '1')).type, 'ADDED');
  const change = store.apply('MODIFIED', s('a', '2'));
  assert.equal(change.type, 'MODIFIED');
  assert.equal(change.old?.resourceVersion, '1');
  assert.equal(store.apply('DELETED', s('a', '3')).old?.resourceVersion, '2');
  assert.equal(store.size, 0);
});

test("a relist reports every DELETED before any ADDED/MODIFIED: a recreated object is the old uid's DELETED, then the new uid's ADDED", () => {
  const stored = new Map([
    ['old', s('old', '1', 'x')],
    ['kept', s('kept', '1', 'k')],
  ]);
  const changes = diffRelist(stored, [s('new', '2', 'x'), s('kept', '2', 'k')]);
  assert.deepEqual(
    changes.map((c) => `${c.type} ${c.current.uid}`),
    ['DELETED old', 'ADDED new', 'MODIFIED kept'],
  );
  const store = new SnapshotStore();
  store.replace([s('old', '1', 'x')]);
  assert.deepEqual(
    store.replace([s('new', '2', 'x')]).map((c) => `${c.type} ${c.current.uid}`),
    ['DELETED old', 'ADDED new'],
  );
});

test('interning keeps snapshots equal, and its pool stays bounded whatever the input', () => {
  const child = (name: string, namespace: string, owner: string) =>
    snapshotOf(
      JSON.parse(
        JSON.stringify({
          metadata: {
            uid: `u-${name}`,
            name,
            namespace,
            resourceVersion: '1',
            ownerReferences: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: owner, uid: `o-${owner}`, controller: true }],
          },
        }),
      ) as Record<string, unknown>,
    )!;
  assert.deepEqual(child('a', 'team', 'a').controller, { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'a', uid: 'o-a' });
  assert.deepEqual(child('b', 'team', 'x').controller, { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'x', uid: 'o-x' });
  assert.equal(child('b', 'team', 'x').namespace, 'team');
  // A controller named like its object, but longer than the contract allows, is still cut (the name is not).
  const long = 'n'.repeat(300);
  const cut = child(long, 'team', long);
  assert.equal(cut.name.length, 300);
  assert.equal(cut.controller!.name.length, 254);
  // Hostile input cannot grow the pool: past INTERN_POOL_SIZE distinct values, new ones are returned as given and not kept.
  for (let i = 0; i < INTERN_POOL_SIZE + 100; i++) assert.equal(interned(`fill-${i}`), `fill-${i}`);
  assert.equal(internPoolSize(), INTERN_POOL_SIZE);
  assert.equal(child('c', 'another-namespace', 'c').namespace, 'another-namespace');
  assert.equal(internPoolSize(), INTERN_POOL_SIZE);
});
