/**
 * Heap bytes per child object in the forwarder's snapshot store: 100,000 metadata-only
 * Deployments controlled by a Memcached each, applied to a SnapshotStore, measured with the
 * heap before and after (forced GC). Run: `node --expose-gc bench/experiments/store-heap.ts`.
 * Figures: docs/benchmarks.md ("Forwarder memory with many watched objects").
 */
import { snapshotOf } from '../../src/forwarder/source/snapshot.ts';
import { SnapshotStore } from '../../src/forwarder/source/store.ts';
import { randomUUID } from 'node:crypto';
const N = 100_000;
const exposed = (globalThis as { gc?: () => void }).gc;
if (!exposed) {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const gc = exposed;
gc();
const h0 = process.memoryUsage().heapUsed;
const store = new SnapshotStore();
let rv = 1000;
for (let i = 0; i < N; i++) {
  const owner = `mc-${String(i).padStart(6, '0')}`;
  const text = JSON.stringify({
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadata',
    metadata: {
      name: owner,
      namespace: 'held',
      uid: randomUUID(),
      resourceVersion: String(rv++),
      generation: 1,
      creationTimestamp: '2026-12-02T04:00:00Z',
      labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': owner, 'app.kubernetes.io/managed-by': 'operless' },
      ownerReferences: [
        { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: owner, uid: randomUUID(), controller: true, blockOwnerDeletion: true },
      ],
      managedFields: [
        {
          manager: 'bench',
          operation: 'Update',
          apiVersion: 'apps/v1',
          time: '2026-12-02T04:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': {} } },
        },
      ],
    },
  });
  store.apply('ADDED', snapshotOf(JSON.parse(text))!);
}
gc();
const h1 = process.memoryUsage().heapUsed;
console.log(JSON.stringify({ objects: store.size, bytesPerObject: Math.round((h1 - h0) / N), heapMiB: ((h1 - h0) / 1048576).toFixed(1) }));
