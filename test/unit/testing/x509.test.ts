/** The test CA: certificates Node's own X.509 parser accepts, with the fields Kubernetes reads. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createCertificateAuthority, issueCertificate } from '../../../src/testing/x509.ts';

test('a CA is self-signed, marked CA, and valid now', async () => {
  const ca = new X509Certificate((await createCertificateAuthority('test-ca')).certPem);
  assert.equal(ca.ca, true);
  assert.equal(ca.subject, 'CN=test-ca');
  assert.equal(ca.issuer, 'CN=test-ca');
  assert.ok(ca.verify(ca.publicKey));
  assert.ok(new Date(ca.validFrom) <= new Date() && new Date() <= new Date(ca.validTo));
});

test('a client certificate carries the user as CN and groups as O, for client auth, signed by the CA', async () => {
  const ca = await createCertificateAuthority('test-ca');
  const caCert = new X509Certificate(ca.certPem);
  const client = await issueCertificate(ca, { commonName: 'alice', organizations: ['dev', 'system:masters'], usage: 'client' });
  const cert = new X509Certificate(client.certPem);
  assert.equal(cert.subject, 'CN=alice\nO=dev\nO=system:masters');
  assert.equal(cert.issuer, 'CN=test-ca');
  assert.equal(cert.ca, false);
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.2']);
  assert.ok(cert.checkIssued(caCert));
  assert.ok(cert.verify(caCert.publicKey));
  assert.ok(cert.checkPrivateKey(createPrivateKey(client.keyPem)));
});

test('a serving certificate lists its hosts as SANs and is for server auth', async () => {
  const ca = await createCertificateAuthority('test-ca');
  const cert = new X509Certificate(
    (await issueCertificate(ca, { commonName: 'kube-apiserver', hosts: ['127.0.0.1', 'localhost', '::1'], usage: 'server' })).certPem,
  );
  assert.equal(cert.subjectAltName, 'IP Address:127.0.0.1, DNS:localhost, IP Address:0:0:0:0:0:0:0:1');
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
  assert.equal(cert.checkHost('localhost'), 'localhost');
  assert.equal(cert.checkHost('example.com'), undefined);
});

test('a certificate from another CA does not verify', async () => {
  const a = await createCertificateAuthority('a');
  const b = new X509Certificate((await createCertificateAuthority('b')).certPem);
  const cert = new X509Certificate((await issueCertificate(a, { commonName: 'x', usage: 'client' })).certPem);
  assert.equal(cert.verify(b.publicKey), false);
});
