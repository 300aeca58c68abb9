/**
 * The EKS bearer token and the SigV4 signatures behind EKS access (src/kube/eks.ts): the SDK's
 * signer as eks.ts configures it reproduces AWS's published SigV4 test vector; the token is
 * `k8s-aws-v1.` + base64url of a presigned STS GetCallerIdentity URL of the documented shape,
 * with a signature fixed for fixed inputs (a known vector); tokens are cached and re-minted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { awsSigner, cachedToken, eksToken, signedHeaders, TOKEN_PREFIX } from '../../../src/kube/eks.ts';

test('the signer eks.ts configures reproduces AWS\'s published "get-vanilla" SigV4 test vector', async () => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
  const headers = await signedHeaders(
    awsSigner('us-east-1', 'service', credentials),
    { method: 'GET', host: 'example.amazonaws.com', path: '/' },
    new Date('2015-08-30T12:36:00Z'),
  );
  assert.equal(
    headers.authorization,
    'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  );
  assert.equal(headers['x-amz-date'], '20150830T123600Z');
  assert.equal(headers.host, 'example.amazonaws.com');
});

// A known vector: the signature of this token's URL, computed once for these inputs (it is what
// the hand-written signer Operless had before the SDK's produced, and what the SDK's produces).
const STS_VECTOR = {
  credentials: { accessKeyId: 'AKID', secretAccessKey: 'SECRET', sessionToken: 'TOKEN' },
  date: new Date('2026-11-20T10:00:00Z'),
  signature: 'a4a1da4eb2791e5d22ba63bcbbb2e74088aa0a3fbd3abefcb0ccd1412177e0e7',
};

test('EKS token: k8s-aws-v1. + base64url of the presigned STS GetCallerIdentity URL with x-k8s-aws-id signed', async () => {
  const token = await eksToken('my-cluster', 'eu-west-1', STS_VECTOR.credentials, STS_VECTOR.date);
  assert.ok(token.startsWith(TOKEN_PREFIX));
  const body = token.slice(TOKEN_PREFIX.length);
  assert.doesNotMatch(body, /[+/=]/, 'base64url without padding');
  const url = new URL(Buffer.from(body, 'base64url').toString('utf8'));
  assert.equal(url.protocol, 'https:');
  assert.equal(url.host, 'sts.eu-west-1.amazonaws.com');
  assert.equal(url.pathname, '/');
  assert.deepEqual([...url.searchParams.keys()].sort(), [
    'Action',
    'Version',
    'X-Amz-Algorithm',
    'X-Amz-Credential',
    'X-Amz-Date',
    'X-Amz-Expires',
    'X-Amz-Security-Token',
    'X-Amz-Signature',
    'X-Amz-SignedHeaders',
  ]);
  assert.equal(url.searchParams.get('Action'), 'GetCallerIdentity');
  assert.equal(url.searchParams.get('Version'), '2011-06-15');
  assert.equal(url.searchParams.get('X-Amz-Algorithm'), 'AWS4-HMAC-SHA256');
  assert.equal(url.searchParams.get('X-Amz-Date'), '20261120T100000Z');
  assert.equal(url.searchParams.get('X-Amz-Expires'), '60');
  assert.equal(url.searchParams.get('X-Amz-SignedHeaders'), 'host;x-k8s-aws-id');
  assert.equal(url.searchParams.get('X-Amz-Security-Token'), 'TOKEN');
  assert.equal(url.searchParams.get('X-Amz-Credential'), 'AKID/20261120/eu-west-1/sts/aws4_request');
  assert.equal(url.searchParams.get('X-Amz-Signature'), STS_VECTOR.signature);
});

test('EKS token: the URL escapes what RFC 3986 reserves (a session token with + / =) and has no header in it', async () => {
  const token = await eksToken('my-cluster', 'eu-west-1', { ...STS_VECTOR.credentials, sessionToken: 'a+b/c=' }, STS_VECTOR.date);
  const text = Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString('utf8');
  assert.match(text, /X-Amz-Security-Token=a%2Bb%2Fc%3D(&|$)/);
  assert.equal(new URL(text).searchParams.get('X-Amz-Security-Token'), 'a+b/c=');
  assert.doesNotMatch(text, /x-k8s-aws-id=/i, 'the cluster name travels as a signed header, not in the URL');
});

test('EKS token without a session token: no X-Amz-Security-Token', async () => {
  const { sessionToken: _, ...longTerm } = STS_VECTOR.credentials;
  const token = await eksToken('my-cluster', 'eu-west-1', longTerm, STS_VECTOR.date);
  const url = new URL(Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString('utf8'));
  assert.equal(url.searchParams.get('X-Amz-Security-Token'), null);
  assert.notEqual(url.searchParams.get('X-Amz-Signature'), STS_VECTOR.signature);
});

test('tokens are cached and re-minted after the refresh interval', async () => {
  let now = 0;
  let minted = 0;
  const token = cachedToken(
    async () => `t${++minted}`,
    () => now,
    600_000,
  );
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
