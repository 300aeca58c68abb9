import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createEventRecorder, resetEventMemory } from '../../../src/kube/events.ts';
import type { KubeClient, KubeObject } from '../../../src/kube/types.ts';

/** A client that accepts every Event create and counts them (no other call is expected). */
function countingClient(): { client: KubeClient; created: string[] } {
  const created: string[] = [];
  const unexpected = async (): Promise<never> => {
    throw new Error('unexpected call');
  };
  const client: KubeClient = {
    get: unexpected,
    list: unexpected,
    apply: unexpected,
    applyStatus: unexpected,
    mergePatch: unexpected,
    delete: unexpected,
    async create<T extends KubeObject>(_kind: unknown, object: KubeObject) {
      created.push(object.metadata.name);
      return object as T;
    },
  };
  return { client, created };
}

const object = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', uid: `uid-${name}` } });
const note = { type: 'Normal', reason: 'Scaled', action: 'Reconcile', note: 'scaled to 3' } as const;

afterEach(() => resetEventMemory());

test('a repeat within the window is folded, also from another recorder (the handler makes one per key and invocation)', async () => {
  const { client, created } = countingClient();
  const at = new Date('2026-01-01T00:00:00Z');
  const make = () => createEventRecorder({ client, controller: 'c', instance: 'i', now: () => at });
  await make().record(object('a'), note);
  await make().record(object('a'), note);
  await make().record(object('a'), note);
  assert.equal(created.length, 1);
});

test('the process-wide memory of recent Events is bounded: the oldest is forgotten after 1000 newer ones', async () => {
  const { client, created } = countingClient();
  const at = new Date('2026-01-01T00:00:00Z');
  const recorder = createEventRecorder({ client, controller: 'c', instance: 'i', now: () => at });
  await recorder.record(object('first'), note);
  for (let i = 0; i < 1000; i++) await recorder.record(object(`other-${i}`), note);
  assert.equal(created.length, 1001);
  // Still within the window, but no longer remembered: written again rather than kept forever.
  await recorder.record(object('first'), note);
  assert.equal(created.length, 1002);
  // The most recent ones are still remembered and folded.
  await recorder.record(object('other-999'), note);
  assert.equal(created.length, 1002);
});
