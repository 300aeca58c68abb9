/**
 * The least-privilege identities of Operless's components, exactly as the project ships
 * them, for tests that run the components against a real API server (never as admin):
 *
 * - the forwarder: the Namespace, ServiceAccount, ClusterRole/ClusterRoleBinding (get, list,
 *   watch on what it watches) and Role/RoleBinding (its leader-election Lease) of the
 *   rendered manifests (`infra/forwarder/manifests/operless-forwarder.yaml`, what
 *   `helm template` of the chart gives), applied as they are; the identity is a real
 *   ServiceAccount token. The shipped forwarder config (the ConfigMap's `forwarder.yaml`) comes
 *   with it, so a test uses the Lease name and namespace the Role allows.
 * - the Memcached function: `infra/rbac/memcached-function.yaml` bound to the group
 *   `operless:memcached`; the identity is a client-certificate user in that group (as an EKS
 *   access entry maps the function's IAM role).
 *
 * Used by the security tests (permission matrix, secret-leak pipeline, soak) and the fault
 * suite, so every one of them proves the same RBAC.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { ControlPlane, Identity } from '../../src/testing/index.ts';
import { MANIFESTS_PATH } from '../../src/build/forwarder-chart.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
export const MEMCACHED_FUNCTION_RBAC = join(ROOT, 'infra/rbac/memcached-function.yaml');
export const MEMCACHED_FUNCTION_USER = 'memcached-function';
export const MEMCACHED_FUNCTION_GROUP = 'operless:memcached';

/** One object of a YAML manifest. */
export interface ManifestObject {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly [field: string]: unknown;
}

const RBAC_KINDS = /^(Namespace|ServiceAccount|ClusterRole|ClusterRoleBinding|Role|RoleBinding)$/;

/** The objects of the forwarder's rendered manifests. */
export function forwarderManifests(): ManifestObject[] {
  return parseAllDocuments(readFileSync(MANIFESTS_PATH, 'utf8'))
    .map((d) => d.toJS() as ManifestObject | null)
    .filter((o): o is ManifestObject => o !== null && typeof o === 'object');
}

export interface ForwarderIdentity {
  /** A ServiceAccount token for the shipped ServiceAccount. */
  readonly identity: Identity;
  /** The forwarder's namespace: its ServiceAccount's, and where its Role allows its Lease. */
  readonly namespace: string;
  readonly serviceAccount: string;
  /** The forwarder config the manifests ship (the ConfigMap's `forwarder.yaml`). */
  readonly config: Record<string, unknown>;
  /** The Lease name of the shipped config (the only one the Role lets it get and update). */
  readonly leaseName: string;
}

/** Applies the forwarder's Namespace, ServiceAccount and RBAC as shipped; returns its identity. */
export async function applyForwarderIdentity(cp: ControlPlane): Promise<ForwarderIdentity> {
  const objects = forwarderManifests();
  const rbac = objects.filter((o) => RBAC_KINDS.test(o.kind));
  const applied = await cp.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => JSON.stringify(o)).join('\n') });
  assert.equal(applied.code, 0, `applying the forwarder's shipped RBAC failed: ${applied.stderr}`);
  const sa = objects.find((o) => o.kind === 'ServiceAccount');
  assert.ok(sa?.metadata.namespace, `the forwarder's manifests (${MANIFESTS_PATH}) carry a namespaced ServiceAccount`);
  const cm = objects.find((o) => o.kind === 'ConfigMap') as (ManifestObject & { data?: Record<string, string> }) | undefined;
  const shipped = cm?.data?.['forwarder.yaml'];
  assert.ok(shipped, `the forwarder's manifests (${MANIFESTS_PATH}) carry a ConfigMap with forwarder.yaml`);
  const config = parseAllDocuments(shipped)[0]?.toJS() as Record<string, unknown>;
  const leaseName = (config.leaderElection as { leaseName?: unknown } | undefined)?.leaseName;
  assert.equal(typeof leaseName, 'string', 'the shipped forwarder config names its Lease (leaderElection.leaseName)');
  return {
    identity: await cp.serviceAccount(sa.metadata.namespace, sa.metadata.name),
    namespace: sa.metadata.namespace,
    serviceAccount: sa.metadata.name,
    config,
    leaseName: leaseName as string,
  };
}

/** Applies the Memcached function's RBAC as shipped; returns a user in its group. */
export async function applyMemcachedFunctionIdentity(cp: ControlPlane): Promise<Identity> {
  const applied = await cp.kubectl(['apply', '-f', MEMCACHED_FUNCTION_RBAC]);
  assert.equal(applied.code, 0, `applying ${MEMCACHED_FUNCTION_RBAC} failed: ${applied.stderr}`);
  return cp.identity(MEMCACHED_FUNCTION_USER, [MEMCACHED_FUNCTION_GROUP]);
}
