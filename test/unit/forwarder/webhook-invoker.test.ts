/**
 * The webhook endpoint's Lambda invoker (the AWS SDK's Lambda client) against the local
 * Invoke API: a payload, a function error, a Lambda timeout, an unknown function, an
 * unreachable endpoint and the caller's deadline each end in the outcome the endpoint maps to
 * an HTTP status (docs/forwarder.md, "Webhooks").
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { lambdaInvoker } from '../../../src/forwarder/webhook/lambda-invoker.ts';
import { startLambdaInvokeServer, type LambdaInvokeServer } from '../../../src/local/lambda-invoke-server.ts';
import { closedPort } from '../../../src/testing/ports.ts';

let server: LambdaInvokeServer;
const client = (endpoint: string) =>
  new LambdaClient({ endpoint, region: 'us-east-1', maxAttempts: 1, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });

before(async () => {
  server = await startLambdaInvokeServer({
    timeoutMs: 300,
    functions: {
      echo: (event) => ({ got: event }),
      broken: () => {
        throw new TypeError('cannot read spec of undefined');
      },
      slow: () => new Promise((resolve) => setTimeout(resolve, 2000)),
    },
  });
});
after(() => server?.close());

test('a payload comes back as the function returned it; the function name may be an ARN', async () => {
  const invoke = lambdaInvoker({ client: client(server.endpoint) });
  assert.deepEqual(await invoke('echo', { route: 'validate', review: {} }, AbortSignal.timeout(5000)), {
    ok: true,
    payload: { got: { route: 'validate', review: {} } },
  });
  assert.deepEqual(await invoke('arn:aws:lambda:us-east-1:123456789012:function:echo', { a: 1 }, AbortSignal.timeout(5000)), {
    ok: true,
    payload: { got: { a: 1 } },
  });
});

test('a function error is 502 with its message; a Lambda timeout too', async () => {
  const invoke = lambdaInvoker({ client: client(server.endpoint) });
  const broken = await invoke('broken', {}, AbortSignal.timeout(5000));
  assert.deepEqual(broken, { ok: false, status: 502, message: 'the function failed (Unhandled): TypeError: cannot read spec of undefined' });
  const slow = await invoke('slow', {}, AbortSignal.timeout(5000));
  assert.equal(slow.ok, false);
  assert.match((slow as { message: string }).message, /Task timed out after 0\.30 seconds/);
});

test("an unknown function or an unreachable endpoint is 503; the caller's deadline is 504", async () => {
  const missing = await lambdaInvoker({ client: client(server.endpoint) })('nope', {}, AbortSignal.timeout(5000));
  assert.equal((missing as { status: number }).status, 503);
  assert.match((missing as { message: string }).message, /ResourceNotFoundException/);
  const port = await closedPort();
  const down = await lambdaInvoker({ client: client(`http://127.0.0.1:${port}`) })('echo', {}, AbortSignal.timeout(5000));
  assert.equal((down as { status: number }).status, 503);
  const late = await lambdaInvoker({ client: client(server.endpoint) })('slow', {}, AbortSignal.timeout(100));
  assert.equal((late as { status: number }).status, 504);
  assert.match((late as { message: string }).message, /no answer before the API server's timeout/);
});
