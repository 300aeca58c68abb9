/**
 * The local Lambda Invoke API's guards (src/local/lambda-invoke-server.ts), against the real
 * server on loopback: a request naming a non-loopback Host (DNS rebinding) or carrying no
 * Authorization header (a browser's cross-site POST) is refused 403 before anything runs; a body
 * over Lambda's 6 MB limit is refused 413 without invoking; the AWS SDK's client still works.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { MAX_INVOKE_BODY_BYTES, startLambdaInvokeServer, type LambdaInvokeServer } from '../../../src/local/lambda-invoke-server.ts';

let server: LambdaInvokeServer;
before(async () => {
  server = await startLambdaInvokeServer({ functions: { fn: (event) => ({ echoed: JSON.stringify(event).length }) } });
});
after(async () => {
  await server.close();
});

/** One raw POST to fn's invocations path. */
function raw(options: {
  host?: string;
  authorization?: boolean;
  bytes: number;
  contentLength?: boolean;
}): Promise<{ status: number; type: string | undefined }> {
  const url = new URL(server.endpoint);
  const body = Buffer.alloc(options.bytes, ' ');
  body.write('{}', 0);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/2015-03-31/functions/fn/invocations',
        agent: false,
        headers: {
          host: options.host ?? url.host,
          'content-type': 'text/plain',
          ...(options.authorization === false
            ? {}
            : { authorization: 'AWS4-HMAC-SHA256 Credential=x/20261203/us-east-1/lambda/aws4_request, SignedHeaders=host, Signature=0' }),
          ...(options.contentLength === false ? { 'transfer-encoding': 'chunked' } : { 'content-length': body.length }),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['x-amzn-errortype'] as string | undefined }));
      },
    );
    req.on('error', (err) =>
      (err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err),
    );
    req.end(body);
  });
}

test('a non-loopback Host or an unsigned request is refused 403 and nothing runs', async () => {
  for (const host of ['evil.example', 'evil.example:80', '127.0.0.1.nip.io']) {
    assert.deepEqual(await raw({ host, bytes: 2 }), { status: 403, type: 'AccessDeniedException' }, host);
  }
  assert.deepEqual(await raw({ authorization: false, bytes: 2 }), { status: 403, type: 'AccessDeniedException' });
  assert.equal(server.invocations.fn ?? 0, 0);
  assert.equal((await raw({ bytes: 2 })).status, 200, 'a loopback, signed request runs');
  assert.equal(server.invocations.fn, 1);
});

test('a body over 6 MB is refused 413 without invoking, declared or chunked', async () => {
  const before = server.invocations.fn ?? 0;
  assert.deepEqual(await raw({ bytes: MAX_INVOKE_BODY_BYTES + 1 }), { status: 413, type: 'RequestEntityTooLargeException' });
  assert.equal((await raw({ bytes: MAX_INVOKE_BODY_BYTES + 1, contentLength: false })).status, 413);
  assert.equal(server.invocations.fn ?? 0, before);
});

test("the AWS SDK's Lambda client invokes as before", async () => {
  const client = new LambdaClient({ endpoint: server.endpoint, region: 'us-east-1', maxAttempts: 1, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const out = await client.send(new InvokeCommand({ FunctionName: 'fn', Payload: new TextEncoder().encode(JSON.stringify({ a: 'x'.repeat(1000) })) }));
  assert.equal(out.FunctionError, undefined);
  assert.ok((JSON.parse(new TextDecoder().decode(out.Payload)) as { echoed: number }).echoed > 1000);
  client.destroy();
});
