/** The serving certificate check (src/forwarder/webhook/certificates.ts): only a certificate and its own key are served. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pairProblem } from '../../../src/forwarder/webhook/certificates.ts';
import { createCertificateAuthority, issueCertificate } from '../../../src/testing/x509.ts';

test('pairProblem accepts a certificate with its key and refuses a mismatched key, a truncated certificate and an empty file', async () => {
  const ca = await createCertificateAuthority('pair-ca');
  const a = await issueCertificate(ca, { commonName: 'a', hosts: ['127.0.0.1'], usage: 'server' });
  const b = await issueCertificate(ca, { commonName: 'b', hosts: ['127.0.0.1'], usage: 'server' });
  assert.equal(pairProblem(a), undefined);
  assert.match(pairProblem({ certPem: a.certPem, keyPem: b.keyPem }) ?? '', /mismatch/i);
  assert.notEqual(pairProblem({ certPem: a.certPem.slice(0, 200), keyPem: a.keyPem }), undefined);
  assert.notEqual(pairProblem({ certPem: '', keyPem: '' }), undefined);
});
