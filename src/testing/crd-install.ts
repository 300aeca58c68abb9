/**
 * Installing CustomResourceDefinitions into a test control plane, and waiting until they serve.
 *
 * Guarantees:
 * - `installCrdsInto` server-side applies every CRD (a re-install is an update, not an error),
 *   then resolves only when each is `Established` and a LIST of each served version answers 200 —
 *   Established alone is not yet usable (the watch cache answers 429 for a moment).
 * - A bad manifest (unreadable file, YAML error, not a CRD, refused by the API server) fails with
 *   the file, document or CRD name and the API server's message; not being ready in time fails
 *   with `ComponentNotReadyError` and the last conditions seen.
 * - `loadCrdDocuments` and `crdListPaths` are pure (unit-tested).
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { apiMessage } from './admin-api.ts';
import type { AdminApi } from './admin-api.ts';
import { jsonBody } from './http.ts';
import type { HttpResponse } from './http.ts';
import { sleep } from './process.ts';
import { ComponentNotReadyError } from './readiness.ts';

const FIELD_MANAGER = 'operless-testenv';

/** Server-side applies each CRD, then waits until each is Established and every served version lists. */
export async function installCrdsInto(api: AdminApi, crds: readonly (string | object)[], timeoutMs: number): Promise<void> {
  const objects = crds.flatMap(loadCrdDocuments);
  for (const crd of objects) {
    const name = crdName(crd);
    const res = await api(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(name)}?fieldManager=${FIELD_MANAGER}&force=true`, {
      method: 'PATCH',
      contentType: 'application/apply-patch+yaml',
      body: JSON.stringify(crd),
    });
    if (res.status >= 300) throw new Error(`installing CRD ${name} failed: HTTP ${res.status}: ${apiMessage(res)}. Fix the CRD manifest.`);
  }
  for (const crd of objects) {
    await waitEstablished(api, crdName(crd), timeoutMs);
    // Established is not yet usable: the new resource's storage (watch cache) answers
    // 429 "storage is (re)initializing" for a moment. Wait until a LIST of each served version succeeds.
    for (const path of crdListPaths(crd)) await waitServed(api, path, timeoutMs);
  }
}

/** Reads CRD manifests: a path (YAML, multi-document) or an object. Exported for unit tests. */
export function loadCrdDocuments(source: string | object): Record<string, unknown>[] {
  if (typeof source !== 'string') return [source as Record<string, unknown>];
  let text: string;
  try {
    text = readFileSync(source, 'utf8');
  } catch (err) {
    throw new Error(`cannot read CRD file ${source}: ${(err as Error).message}`);
  }
  return parseAllDocuments(text).flatMap((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`CRD file ${source}, document ${i + 1}: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return [];
    return [value as Record<string, unknown>];
  });
}

function crdName(crd: Record<string, unknown>): string {
  const kind = crd.kind;
  const name = (crd.metadata as { name?: unknown } | undefined)?.name;
  if (kind !== 'CustomResourceDefinition' || typeof name !== 'string') {
    throw new Error(`expected a CustomResourceDefinition with metadata.name, got kind "${String(kind)}" name "${String(name)}"`);
  }
  return name;
}

async function waitEstablished(api: (path: string) => Promise<HttpResponse>, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const res = await api(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    if (res.status === 200) {
      const conditions = jsonBody<{ status?: { conditions?: { type: string; status: string; message?: string }[] } }>(res).status?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) return;
      last = conditions.map((c) => `${c.type}=${c.status}${c.message ? ` (${c.message})` : ''}`).join(', ');
    }
    await sleep(100);
  }
  throw new ComponentNotReadyError(`CRD ${name} was not Established within ${timeoutMs / 1000} s (conditions: ${last || 'none'}). Check its names and schema.`);
}

/** A LIST path per served version of a CRD. Exported for unit tests. */
export function crdListPaths(crd: Record<string, unknown>): string[] {
  const spec = crd.spec as { group?: string; names?: { plural?: string }; versions?: { name?: string; served?: boolean }[] } | undefined;
  if (!spec?.group || !spec.names?.plural) return [];
  return (spec.versions ?? []).filter((v) => v.served !== false && v.name).map((v) => `/apis/${spec.group}/${v.name}/${spec.names?.plural}?limit=1`);
}

async function waitServed(api: (path: string) => Promise<HttpResponse>, path: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: HttpResponse | undefined;
  while (Date.now() < deadline) {
    last = await api(path);
    if (last.status === 200) return;
    await sleep(100);
  }
  throw new ComponentNotReadyError(
    `the CRD resource ${path} was Established but not served within ${timeoutMs / 1000} s (last: HTTP ${last?.status}: ${last ? apiMessage(last) : ''})`,
  );
}
