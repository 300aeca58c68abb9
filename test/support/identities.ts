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
 * Namespace-scoped operation (docs/security.md): the forwarder's chart rendered with
 * `namespaces`, and the function's RBAC as `operless rbac --namespaces` rewrites it.
 *
 * Used by the security tests (permission matrix, secret-leak pipeline, soak), the fault suite
 * and the Memcached e2e, so every one of them proves the same RBAC.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { ControlPlane, Identity } from '../../src/testing/index.ts';
import { provision } from '../../src/testing/provision.ts';
import { EXAMPLE_VALUES, MANIFESTS_PATH, renderChart } from '../../src/build/forwarder-chart.ts';
import { namespacedRbac, type RbacObject } from '../../src/kube/rbac-scope.ts';
import { readRbacObjects } from '../../src/cli/commands/rbac.ts';

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
  return applyForwarderObjects(cp, forwarderManifests(), MANIFESTS_PATH);
}

/** The namespace-scoped forwarder's release: its own name and namespace, beside the shipped one. */
export const SCOPED_FORWARDER_RELEASE = { release: 'operless-scoped', namespace: 'operless-scoped' } as const;

/**
 * The chart rendered (by the pinned helm) with the example values and `namespaces`: the
 * forwarder's namespace-scoped RBAC exactly as `helm install --set namespaces=...` makes it.
 * Its release namespace is created; the listed namespaces must exist.
 */
export async function applyScopedForwarderIdentity(
  cp: ControlPlane,
  namespaces: readonly string[],
): Promise<ForwarderIdentity & { readonly objects: ManifestObject[] }> {
  const { helm } = await provision({ targets: ['helm'] });
  assert.ok(helm, 'provision() returned a helm binary');
  const rendered = await renderChart(helm, { ...SCOPED_FORWARDER_RELEASE, valuesFiles: [EXAMPLE_VALUES], values: { namespaces: [...namespaces] } });
  assert.equal(rendered.code, 0, `helm template with namespaces failed: ${rendered.stderr}`);
  const objects = parseAllDocuments(rendered.stdout)
    .map((d) => d.toJS() as ManifestObject | null)
    .filter((o): o is ManifestObject => o !== null && typeof o === 'object');
  const created = await cp.kubectl(['create', 'namespace', SCOPED_FORWARDER_RELEASE.namespace]);
  assert.ok(created.code === 0 || /AlreadyExists/.test(created.stderr), created.stderr);
  return { ...(await applyForwarderObjects(cp, objects, 'helm template --set namespaces')), objects };
}

export const SCOPED_FUNCTION_GROUP = 'operless:memcached-scoped';
export const SCOPED_FUNCTION_USER = 'memcached-function-scoped';

/**
 * The function's RBAC for `namespaces` as `operless rbac --namespaces` prints it (the one rule
 * file, rewritten by kube/rbac-scope.ts), bound to its own group so it can sit beside the
 * cluster-wide binding in one cluster.
 */
export function scopedFunctionRbac(namespaces: readonly string[], group = SCOPED_FUNCTION_GROUP): RbacObject[] {
  const { objects } = readRbacObjects(dirname(MEMCACHED_FUNCTION_RBAC));
  return namespacedRbac(objects, namespaces).map((o) =>
    o.subjects ? { ...o, subjects: o.subjects.map((s) => (s.kind === 'Group' && s.name === MEMCACHED_FUNCTION_GROUP ? { ...s, name: group } : s)) } : o,
  );
}

/** Applies `scopedFunctionRbac(namespaces)`; returns a user in its group and the objects. */
export async function applyScopedFunctionIdentity(cp: ControlPlane, namespaces: readonly string[]): Promise<{ identity: Identity; objects: RbacObject[] }> {
  const objects = scopedFunctionRbac(namespaces);
  const applied = await cp.kubectl(['apply', '-f', '-'], { input: objects.map((o) => JSON.stringify(o)).join('\n') });
  assert.equal(applied.code, 0, `applying the function's namespace-scoped RBAC failed: ${applied.stderr}`);
  return { identity: await cp.identity(SCOPED_FUNCTION_USER, [SCOPED_FUNCTION_GROUP]), objects };
}

async function applyForwarderObjects(cp: ControlPlane, objects: readonly ManifestObject[], source: string): Promise<ForwarderIdentity> {
  const rbac = objects.filter((o) => RBAC_KINDS.test(o.kind));
  const applied = await cp.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => JSON.stringify(o)).join('\n') });
  assert.equal(applied.code, 0, `applying the forwarder's shipped RBAC failed: ${applied.stderr}`);
  const sa = objects.find((o) => o.kind === 'ServiceAccount');
  assert.ok(sa?.metadata.namespace, `the forwarder's manifests (${source}) carry a namespaced ServiceAccount`);
  const cm = objects.find((o) => o.kind === 'ConfigMap') as (ManifestObject & { data?: Record<string, string> }) | undefined;
  const shipped = cm?.data?.['forwarder.yaml'];
  assert.ok(shipped, `the forwarder's manifests (${source}) carry a ConfigMap with forwarder.yaml`);
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
