/**
 * EKS `DescribeCluster` against a local HTTP server speaking the EKS API's shape
 * (`GET /clusters/{name}` → `{ cluster: { endpoint, certificateAuthority: { data } } }`), which
 * recomputes the SigV4 signature of the request as it arrived (host, path, the signed headers)
 * with the AWS SDK's signer (@smithy/signature-v4) and refuses a mismatch. Also: the errors a
 * function's cold start can meet (denied, not ACTIVE, not JSON, no answer), and `eksAccess`
 * reaching the server through `AWS_ENDPOINT_URL_EKS`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import { describeCluster, eksAccess } from '../../../src/kube/eks.ts';

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'SESSION' };
const REGION = 'eu-west-1';
const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');

/** The signature AWS would compute for this request, with the SDK's signer; undefined when the header is malformed. */
async function expectedSignature(req: http.IncomingMessage): Promise<{ signature: string; got: string } | undefined> {
  const auth = String(req.headers.authorization ?? '');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return undefined;
  const [, accessKeyId, , region, service, signedHeaders, got] = m;
  if (accessKeyId !== CREDENTIALS.accessKeyId || region !== REGION || service !== 'eks') return undefined;
  const headers: Record<string, string> = {};
  for (const name of signedHeaders!.split(';')) headers[name] = String(req.headers[name] ?? '');
  const stamp = String(req.headers['x-amz-date']);
  const date = new Date(`${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 15)}Z`);
  const signer = new SignatureV4({ credentials: CREDENTIALS, region: REGION, service: 'eks', sha256: Sha256, applyChecksum: false });
  const url = new URL(req.url ?? '/', 'http://placeholder');
  const signed = await signer.sign(
    {
      method: req.method ?? 'GET',
      protocol: 'http:',
      hostname: headers.host!.split(':')[0]!,
      port: Number(headers.host!.split(':')[1]),
      path: url.pathname,
      headers,
      query: {},
    },
    { signingDate: date, signableHeaders: new Set(signedHeaders!.split(';')) },
  );
  const signature = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization))?.[1] ?? '';
  return { signature, got: got! };
}

let server: http.Server;
let endpoint: string;
const seen: { path: string; verified: boolean }[] = [];

before(async () => {
  server = http.createServer(async (req, res) => {
    const check = await expectedSignature(req);
    const verified = check !== undefined && check.signature === check.got;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    seen.push({ path, verified });
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (!verified) return reply(403, { message: 'The request signature we calculated does not match the signature you provided.' });
    const name = decodeURIComponent(path.replace(/^\/clusters\//, ''));
    if (name === 'prod')
      return reply(200, { cluster: { name, status: 'ACTIVE', endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com', certificateAuthority: { data: CA } } });
    if (name === 'creating') return reply(200, { cluster: { name, status: 'CREATING' } });
    if (name === 'garbled') return reply(200, '<html>');
    if (name === 'hangs') return; // accepted, never answered
    return reply(404, { message: `No cluster found for name: ${name}.` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('DescribeCluster: a SigV4-signed GET /clusters/{name} (checked by the SDK signer) returns the endpoint and CA', async () => {
  const info = await describeCluster('prod', REGION, CREDENTIALS, { endpoint });
  assert.deepEqual(info, { endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com', caData: CA });
  assert.deepEqual(seen.at(-1), { path: '/clusters/prod', verified: true });
});

test('DescribeCluster: a request signed with the wrong secret is refused and the error names eks:DescribeCluster', async () => {
  await assert.rejects(
    describeCluster('prod', REGION, { ...CREDENTIALS, secretAccessKey: 'wrong' }, { endpoint }),
    /DescribeCluster prod in eu-west-1 failed: 403 .*signature.*eks:DescribeCluster/,
  );
  assert.equal(seen.at(-1)?.verified, false);
});

test('DescribeCluster: unknown, not ACTIVE, not JSON and never answering each fail with their own message', async () => {
  await assert.rejects(describeCluster('missing', REGION, CREDENTIALS, { endpoint }), /failed: 404 .*No cluster found/);
  await assert.rejects(describeCluster('creating', REGION, CREDENTIALS, { endpoint }), /returned no endpoint\/CA \(is the cluster ACTIVE\?\)/);
  await assert.rejects(describeCluster('garbled', REGION, CREDENTIALS, { endpoint }), /returned a body that is not JSON: <html>/);
  await assert.rejects(
    describeCluster('hangs', REGION, CREDENTIALS, { endpoint, timeoutMs: 300 }),
    /DescribeCluster hangs in eu-west-1 at http:\/\/127\.0\.0\.1:\d+ got no answer within 300 ms/,
  );
});

test('eksAccess: DescribeCluster through AWS_ENDPOINT_URL_EKS gives the cluster endpoint, its CA and a bearer token', async () => {
  const auth = await eksAccess('prod', REGION, {
    AWS_ENDPOINT_URL_EKS: endpoint,
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_SESSION_TOKEN: CREDENTIALS.sessionToken,
  });
  assert.equal(auth.server, 'https://ABC.gr7.eu-west-1.eks.amazonaws.com');
  assert.equal(String((await auth.credentials()).ca), Buffer.from(CA, 'base64').toString());
  assert.match(await auth.bearerToken!(), /^k8s-aws-v1\./);
  assert.deepEqual(seen.at(-1), { path: '/clusters/prod', verified: true });
});
