/**
 * Users of a test control plane: the admin, least-privilege users with client certificates from
 * the test CA, and ServiceAccounts with TokenRequest tokens — each with its own kubeconfig.
 *
 * Guarantees:
 * - An identity has exactly the name and groups asked for; what it may do is what RBAC grants
 *   those (nothing is added). Minting one restarts nothing.
 * - Each identity's kubeconfig verifies the API server against the test CA and is written with
 *   mode 0600 under the control plane's data dir.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { apiMessage, ensureObject } from './admin-api.ts';
import type { AdminApi } from './admin-api.ts';
import { kubeconfigYaml } from './config.ts';
import { jsonBody } from './http.ts';
import { issueCertificate } from './x509.ts';
import type { KeyPair } from './x509.ts';

/** Credentials for one user of the control plane. */
export interface Identity {
  /** The user name the API server sees (e.g. `system:serviceaccount:ns:name`). */
  readonly user: string;
  readonly groups: readonly string[];
  readonly kubeConfig: KubeConfig;
  readonly kubeconfigPath: string;
  readonly kubeconfigYaml: string;
  /** The bearer token, for token identities (the admin and service accounts). */
  readonly token?: string;
}

/** What minting identities needs of one control plane: where kubeconfigs go, the server, its CA and the admin's API calls. */
export interface IdentityIssuer {
  readonly dir: string;
  readonly server: string;
  readonly ca: KeyPair;
  readonly api: AdminApi;
}

/** A user with a client certificate from the test CA: `name` and `groups`, nothing else. */
export async function certificateIdentity(issuer: IdentityIssuer, name: string, groups: readonly string[], serial: number): Promise<Identity> {
  const { ca } = issuer;
  const cert = await issueCertificate(ca, { commonName: name, organizations: groups, usage: 'client' });
  return makeIdentity(issuer.dir, `user-${serial}`, issuer.server, ca.certPem, name, groups, {
    clientCertPem: cert.certPem,
    clientKeyPem: cert.keyPem,
  });
}

/** A ServiceAccount (created if missing, namespace too) and a token for it from the TokenRequest API. */
export async function serviceAccountIdentity(
  issuer: IdentityIssuer,
  namespace: string,
  name: string,
  expirationSeconds: number,
  serial: number,
): Promise<Identity> {
  const { api } = issuer;
  await ensureObject(api, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await ensureObject(api, `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace },
  });
  const res = await api(`/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
    method: 'POST',
    contentType: 'application/json',
    body: JSON.stringify({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds },
    }),
  });
  if (res.status !== 201) throw new Error(`TokenRequest for ServiceAccount ${namespace}/${name} failed: HTTP ${res.status}: ${apiMessage(res)}`);
  const token = jsonBody<{ status: { token: string } }>(res).status.token;
  const user = `system:serviceaccount:${namespace}:${name}`;
  return makeIdentity(
    issuer.dir,
    `sa-${namespace}-${name}-${serial}`,
    issuer.server,
    issuer.ca.certPem,
    user,
    ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
    { token },
  );
}

/** Writes the identity's kubeconfig (mode 0600) and loads it. */
export function makeIdentity(
  dir: string,
  fileName: string,
  server: string,
  caPem: string,
  user: string,
  groups: readonly string[],
  credentials: { token: string } | { clientCertPem: string; clientKeyPem: string },
): Identity {
  const yaml = kubeconfigYaml({ server, caPem, user, credentials });
  const path = join(dir, `${fileName}.kubeconfig`);
  writeFileSync(path, yaml, { mode: 0o600 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(yaml);
  return { user, groups, kubeConfig, kubeconfigPath: path, kubeconfigYaml: yaml, ...('token' in credentials ? { token: credentials.token } : {}) };
}
