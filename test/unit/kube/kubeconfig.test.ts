import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kubeConfigAuth, loadKubeConfig } from '../../../src/kube/kubeconfig.ts';

const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n');
const config = (cluster: string, user: string) => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { ${cluster} } }]
users: [{ name: u, user: { ${user} } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

test('token user with a CA: bearer header and the CA for TLS', async () => {
  const kc = await loadKubeConfig();
  kc.loadFromString(config(`server: "https://api:6443", certificate-authority-data: "${CA.toString('base64')}"`, 'token: abc'));
  const auth = kubeConfigAuth(kc);
  assert.equal(auth.server, 'https://api:6443');
  const c = await auth.credentials();
  assert.equal(c.headers.Authorization, 'Bearer abc');
  assert.deepEqual(c.ca, CA);
  assert.equal(c.rejectUnauthorized, undefined);
});

test('insecure-skip-tls-verify and basic auth', async () => {
  const kc = await loadKubeConfig();
  kc.loadFromString(config('server: "https://api:6443", insecure-skip-tls-verify: true', 'username: me, password: pw'));
  const c = await kubeConfigAuth(kc).credentials();
  assert.equal(c.rejectUnauthorized, false);
  assert.equal(c.headers.Authorization, `Basic ${Buffer.from('me:pw').toString('base64')}`);
});

test('client certificates are passed on for mutual TLS', async () => {
  const kc = await loadKubeConfig();
  const cert = Buffer.from('CERT');
  const key = Buffer.from('KEY');
  kc.loadFromString(
    config('server: "https://api:6443"', `client-certificate-data: "${cert.toString('base64')}", client-key-data: "${key.toString('base64')}"`),
  );
  const c = await kubeConfigAuth(kc).credentials();
  assert.deepEqual(c.cert, cert);
  assert.deepEqual(c.key, key);
  assert.equal(c.headers.Authorization, undefined);
});

test('unsupported or incomplete kubeconfigs are explained', async () => {
  const kc = await loadKubeConfig();
  kc.loadFromString(config('server: "https://api:6443", proxy-url: "http://proxy:3128"', 'token: t'));
  assert.throws(() => kubeConfigAuth(kc), /uses proxy-url, which Operless does not support/);
  const empty = await loadKubeConfig();
  assert.throws(() => kubeConfigAuth(empty), /has no current cluster/);
});
