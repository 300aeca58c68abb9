import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalQuery, presignUrl, signRequest, uriEncode } from '../../../src/kube/sigv4.ts';
import { cachedToken, eksToken, TOKEN_PREFIX } from '../../../src/kube/eks.ts';

test('header signing matches AWS\'s published "get-vanilla" SigV4 test vector', () => {
  const headers = signRequest({
    method: 'GET', host: 'example.amazonaws.com', path: '/', region: 'us-east-1', service: 'service',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
    date: new Date('2015-08-30T12:36:00Z'),
  });
  assert.equal(headers.authorization,
    'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31');
  assert.equal(headers['x-amz-date'], '20150830T123600Z');
});

test('query signing matches the presigned-URL example of the S3 SigV4 documentation', () => {
  const url = presignUrl({
    method: 'GET', host: 'examplebucket.s3.amazonaws.com', path: '/test.txt', region: 'us-east-1', service: 's3',
    credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
    date: new Date('2013-05-24T00:00:00Z'), payloadHash: 'UNSIGNED-PAYLOAD',
  }, 86400);
  assert.ok(url.endsWith('X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404'), url);
});

// Expected signature computed with the AWS SDK's own signer (@smithy/signature-v4 5.7.5
// `presign`, expiresIn 60, signableHeaders host + x-k8s-aws-id) for the same inputs.
const STS_VECTOR = {
  credentials: { accessKeyId: 'AKID', secretAccessKey: 'SECRET', sessionToken: 'TOKEN' },
  date: new Date('2026-11-20T10:00:00Z'),
  signature: 'a4a1da4eb2791e5d22ba63bcbbb2e74088aa0a3fbd3abefcb0ccd1412177e0e7',
};

test('EKS token: k8s-aws-v1. + base64url of the presigned STS GetCallerIdentity URL with x-k8s-aws-id signed', () => {
  const token = eksToken('my-cluster', 'eu-west-1', STS_VECTOR.credentials, STS_VECTOR.date);
  assert.ok(token.startsWith(TOKEN_PREFIX));
  const body = token.slice(TOKEN_PREFIX.length);
  assert.doesNotMatch(body, /[+/=]/, 'base64url without padding');
  const url = new URL(Buffer.from(body, 'base64url').toString('utf8'));
  assert.equal(url.host, 'sts.eu-west-1.amazonaws.com');
  assert.equal(url.searchParams.get('Action'), 'GetCallerIdentity');
  assert.equal(url.searchParams.get('Version'), '2011-06-15');
  assert.equal(url.searchParams.get('X-Amz-Expires'), '60');
  assert.equal(url.searchParams.get('X-Amz-SignedHeaders'), 'host;x-k8s-aws-id');
  assert.equal(url.searchParams.get('X-Amz-Security-Token'), 'TOKEN');
  assert.equal(url.searchParams.get('X-Amz-Credential'), 'AKID/20261120/eu-west-1/sts/aws4_request');
  assert.equal(url.searchParams.get('X-Amz-Signature'), STS_VECTOR.signature);
});

test('tokens are cached and re-minted after the refresh interval', async () => {
  let now = 0;
  let minted = 0;
  const token = cachedToken(async () => `t${++minted}`, () => now, 600_000);
  assert.equal(await token(), 't1');
  now = 599_999;
  assert.equal(await token(), 't1');
  now = 600_000;
  assert.equal(await token(), 't2');
});

test('a failed mint is not cached', async () => {
  let calls = 0;
  const token = cachedToken(async () => {
    calls++;
    if (calls === 1) throw new Error('no credentials');
    return 'ok';
  });
  await assert.rejects(token(), /no credentials/);
  await new Promise((r) => setImmediate(r));
  assert.equal(await token(), 'ok');
});

test('RFC 3986 encoding and canonical query order', () => {
  assert.equal(uriEncode("a b*'()!~"), "a%20b%2A%27%28%29%21~");
  assert.equal(canonicalQuery({ b: '2', a: '1', 'a b': 'x/y' }), 'a=1&a%20b=x%2Fy&b=2');
});
