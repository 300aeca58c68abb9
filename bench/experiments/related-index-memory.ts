/**
 * The memory of the forwarder's reverse index of related objects (src/forwarder/route/related-index.ts)
 * at `N` primaries (default 10,000) in 100 namespaces referring to 500 ConfigMaps by
 * `spec.configMapRef.name`: `heapUsed` after GC before and after indexing, so the snapshots the
 * streams keep anyway are not counted. Run: `node --expose-gc bench/experiments/related-index-memory.ts`.
 */
import { RelatedIndex } from '../../src/forwarder/route/related-index.ts';
import { snapshotOf, type ObjectSnapshot } from '../../src/forwarder/source/snapshot.ts';

const N = Number(process.env.N ?? 10_000);
const FIELD = 'spec.configMapRef.name';
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const snapshots: ObjectSnapshot[] = [];
for (let i = 0; i < N; i++) {
  const object = {
    metadata: { uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`, name: `memcached-${i}`, namespace: `ns-${i % 100}`, resourceVersion: String(i) },
    spec: { configMapRef: { name: `settings-${i % 500}` } },
  };
  const s = snapshotOf(object, [FIELD]);
  if (s) snapshots.push(s);
}
gc();
gc();
const before = process.memoryUsage().heapUsed;
const index = new RelatedIndex();
index.replace('cache.example.com/Memcached', 'stream', snapshots);
gc();
gc();
const bytes = process.memoryUsage().heapUsed - before;
console.log(JSON.stringify({ primaries: index.size, indexBytes: bytes, bytesPerPrimary: Math.round(bytes / index.size) }));
