/**
 * A test control plane's etcd through its HTTP gateway: health, and compaction of its history.
 *
 * Guarantees: `compactEtcd` compacts physically up to the current revision and returns it; a
 * revision already compacted is not an error; any other failure names the revision and quotes etcd.
 */
import { httpCall, jsonBody } from './http.ts';

export async function etcdHealthy(etcdEndpoint: string): Promise<boolean> {
  const res = await httpCall(`${etcdEndpoint}/health`, { timeoutMs: 2000 });
  return res.status === 200 && jsonBody<{ health?: string }>(res).health === 'true';
}

/** Compacts etcd up to its current revision (physical); returns that revision. */
export async function compactEtcd(etcdEndpoint: string): Promise<number> {
  const range = await httpCall(`${etcdEndpoint}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: 'AA==', limit: 1 }) });
  const revision = Number(jsonBody<{ header?: { revision?: string } }>(range).header?.revision);
  if (!Number.isFinite(revision) || revision < 1) throw new Error(`etcd did not report its revision: ${range.body.slice(0, 200)}`);
  const res = await httpCall(`${etcdEndpoint}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: String(revision), physical: true }) });
  if (res.status !== 200 && !res.body.includes('required revision has been compacted')) {
    throw new Error(`etcd compaction at revision ${revision} failed: HTTP ${res.status}: ${res.body.slice(0, 300)}`);
  }
  return revision;
}
