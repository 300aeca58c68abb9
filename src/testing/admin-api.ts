/**
 * The admin's requests to a test control plane's API server: the one HTTP path the harness uses
 * to install CRDs, probe readiness and create namespaces and ServiceAccounts.
 *
 * Guarantees:
 * - Every request carries the admin's bearer token and verifies the API server's certificate
 *   against the test CA (no `insecure`).
 * - `apiMessage` never throws: it quotes the Status message, or the body's start when it is not JSON.
 */
import { httpCall } from './http.ts';
import type { HttpResponse } from './http.ts';

/** One request as the admin; resolves with any status (the caller decides what is a failure). */
export type AdminApi = (path: string, init?: { method?: string; body?: string; contentType?: string }) => Promise<HttpResponse>;

/** Requests to the API server as the admin, verifying its certificate against the test CA. */
export function adminApi(server: string, caPem: string, adminToken: string): AdminApi {
  return (path, init = {}) =>
    httpCall(`${server}${path}`, {
      method: init.method ?? 'GET',
      ca: caPem,
      headers: {
        authorization: `Bearer ${adminToken}`,
        accept: 'application/json',
        ...(init.contentType ? { 'content-type': init.contentType } : {}),
      },
      ...(init.body !== undefined ? { body: init.body } : {}),
    });
}

/** Creates the object in `collection`; one that already exists (409) is fine. */
export async function ensureObject(api: AdminApi, collection: string, body: object): Promise<void> {
  const res = await api(collection, { method: 'POST', body: JSON.stringify(body), contentType: 'application/json' });
  if (res.status !== 201 && res.status !== 409) throw new Error(`creating ${collection} failed: HTTP ${res.status}: ${apiMessage(res)}`);
}

export function apiMessage(res: HttpResponse): string {
  try {
    return (JSON.parse(res.body) as { message?: string }).message ?? res.body.slice(0, 300);
  } catch {
    return res.body.slice(0, 300);
  }
}
