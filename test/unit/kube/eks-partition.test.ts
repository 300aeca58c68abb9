/**
 * EKS access beyond the commercial partition and its failure paths: the STS/EKS hostnames and
 * the token's signing region/host per partition (aws, aws-cn, aws-us-gov); an overridden
 * endpoint must be https (http only to a loopback test server); a 401 from the API server drops
 * the cached token so the next request carries a fresh one (through the real transport, against
 * a local HTTP server that accepts only the second token).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  cachedToken,
  describeCluster,
  eksAccess,
  eksEndpoint,
  eksToken,
  partitionOf,
  secureEndpoint,
  serviceHost,
  TOKEN_PREFIX,
} from '../../../src/kube/eks.ts';
import { isKubeApiError } from '../../../src/kube/errors.ts';
import { createTransport } from '../../../src/kube/transport.ts';

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

test('partitions: cn-* is aws-cn on amazonaws.com.cn, us-gov-* is aws-us-gov, the rest aws', () => {
  assert.deepEqual(partitionOf('eu-west-1'), { partition: 'aws', dnsSuffix: 'amazonaws.com' });
  assert.deepEqual(partitionOf('cn-northwest-1'), { partition: 'aws-cn', dnsSuffix: 'amazonaws.com.cn' });
  assert.deepEqual(partitionOf('us-gov-west-1'), { partition: 'aws-us-gov', dnsSuffix: 'amazonaws.com' });
  assert.equal(serviceHost('eks', 'cn-north-1'), 'eks.cn-north-1.amazonaws.com.cn');
  assert.equal(serviceHost('sts', 'us-gov-east-1'), 'sts.us-gov-east-1.amazonaws.com');
});

test("the token is a presigned URL to the region's STS host, signed for that region, in each partition", async () => {
  const date = new Date('2026-01-02T03:04:05Z');
  for (const [region, host] of [
    ['cn-north-1', 'sts.cn-north-1.amazonaws.com.cn'],
    ['us-gov-west-1', 'sts.us-gov-west-1.amazonaws.com'],
    ['ap-south-2', 'sts.ap-south-2.amazonaws.com'],
  ] as const) {
    const url = new URL(Buffer.from((await eksToken('prod', region, CREDENTIALS, date)).slice(TOKEN_PREFIX.length), 'base64url').toString('utf8'));
    assert.equal(url.host, host);
    assert.equal(url.protocol, 'https:');
    assert.match(url.searchParams.get('X-Amz-Credential') ?? '', new RegExp(`^AKIDEXAMPLE/20260102/${region}/sts/aws4_request$`));
  }
});

test('an overridden endpoint must be https; plain http only to loopback; the error names the variable', async () => {
  assert.equal(secureEndpoint('https://vpce-1.eks.eu-west-1.vpce.amazonaws.com', 'AWS_ENDPOINT_URL_EKS').host, 'vpce-1.eks.eu-west-1.vpce.amazonaws.com');
  assert.equal(secureEndpoint('http://127.0.0.1:9000', 'X').port, '9000');
  assert.throws(
    () => secureEndpoint('http://eks.internal:80', 'AWS_ENDPOINT_URL_EKS'),
    /AWS_ENDPOINT_URL_EKS=http:\/\/eks.internal:80 must be an https:\/\/ URL/,
  );
  assert.throws(() => secureEndpoint('eks.internal', 'AWS_ENDPOINT_URL_EKS'), /AWS_ENDPOINT_URL_EKS=eks.internal is not a URL/);
  await assert.rejects(
    describeCluster('prod', 'eu-west-1', CREDENTIALS, { endpoint: 'http://10.0.0.5' }),
    /AWS_ENDPOINT_URL_EKS=http:\/\/10.0.0.5 must be an https/,
  );
  const env = { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' };
  await assert.rejects(
    eksAccess('prod', 'eu-west-1', { ...env, OPERLESS_EKS_ENDPOINT: 'http://ABC.gr7.eu-west-1.eks.amazonaws.com', OPERLESS_EKS_CA: 'Zm9v' }),
    /OPERLESS_EKS_ENDPOINT=.* must be an https/,
  );
  const ok = await eksAccess('prod', 'eu-west-1', { ...env, OPERLESS_EKS_ENDPOINT: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com', OPERLESS_EKS_CA: 'Zm9v' });
  assert.equal(ok.server, 'https://ABC.gr7.eu-west-1.eks.amazonaws.com');
});

let server: http.Server;
let url: string;
const seenTokens: string[] = [];
before(async () => {
  server = http.createServer((req, res) => {
    const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    seenTokens.push(token);
    if (token === 'revoked-1') {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url?.includes('watch=true') ? '' : JSON.stringify({ kind: 'NamespaceList', items: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('a 401 from the API server drops the cached token: the next request mints and carries a fresh one', async () => {
  let minted = 0;
  const token = cachedToken(async () => (++minted === 1 ? 'revoked-1' : `fresh-${minted}`));
  const transport = createTransport(eksEndpoint({ endpoint: url, caData: 'Zm9v' }, token, token.invalidate));
  try {
    await assert.rejects(transport.request({ method: 'GET', path: '/api/v1/namespaces' }), (err: unknown) => isKubeApiError(err) && err.status === 401);
    const ok = await transport.request({ method: 'GET', path: '/api/v1/namespaces' });
    assert.equal(ok.status, 200);
    assert.deepEqual(seenTokens.slice(-2), ['revoked-1', 'fresh-2']);
    // Without a 401 the token stays cached.
    await transport.request({ method: 'GET', path: '/api/v1/namespaces' });
    assert.equal(minted, 2);
  } finally {
    await transport.close();
  }
});

test('a watch refused with 401 drops the cached token too', async () => {
  let minted = 0;
  const token = cachedToken(async () => (++minted === 1 ? 'revoked-1' : `fresh-${minted}`));
  const transport = createTransport(eksEndpoint({ endpoint: url, caData: 'Zm9v' }, token, token.invalidate));
  try {
    const stop = new AbortController();
    await assert.rejects(
      transport.watch({ path: '/api/v1/namespaces', signal: stop.signal }, () => {}),
      (err: unknown) => isKubeApiError(err) && err.status === 401,
    );
    const watch = await transport.watch({ path: '/api/v1/namespaces', signal: stop.signal }, () => {});
    stop.abort();
    await watch.ended.catch(() => undefined);
    assert.equal(seenTokens.at(-1), 'fresh-2');
  } finally {
    await transport.close();
  }
});
