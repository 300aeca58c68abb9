import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planChunks, splitConversions } from '../../../src/forwarder/webhook/conversion-split.ts';
import type { InvokeOutcome, WebhookInvoker } from '../../../src/forwarder/webhook/server.ts';

test('planChunks: consecutive ranges within the budget (commas counted); an oversized item alone', () => {
  assert.deepEqual(planChunks([], 10, 100), []);
  assert.deepEqual(planChunks([40, 40, 40], 10, 100), [
    [0, 2],
    [2, 3],
  ]); // 10+40+1+40 = 91; +41 > 100
  assert.deepEqual(planChunks([40, 40, 40], 10, 91), [
    [0, 2],
    [2, 3],
  ]);
  assert.deepEqual(planChunks([40, 40, 40], 10, 90), [
    [0, 1],
    [1, 2],
    [2, 3],
  ]);
  assert.deepEqual(planChunks([500, 10, 10], 10, 100), [
    [0, 1],
    [1, 3],
  ]);
  assert.deepEqual(planChunks([10, 500, 10], 10, 100), [
    [0, 1],
    [1, 2],
    [2, 3],
  ]);
});

const object = (i: number, pad = 0) => ({ apiVersion: 'g.example.com/v1', kind: 'K', metadata: { name: `o${i}` }, pad: 'x'.repeat(pad) });
const payload = (count: number, pad: number) => ({
  route: 'convert',
  review: {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid: 'u-1', desiredAPIVersion: 'g.example.com/v2', objects: Array.from({ length: count }, (_, i) => object(i, pad)) },
  },
});

/** A converting function: echoes each object at the desired version; records each payload's size and object names. */
function converter(fail?: (names: string[]) => InvokeOutcome | undefined) {
  const calls: { bytes: number; names: string[] }[] = [];
  const invoke: WebhookInvoker = async (_name, p) => {
    const review = (p as ReturnType<typeof payload>).review;
    const names = Array.isArray(review.request.objects) ? review.request.objects.map((o) => o.metadata.name) : [];
    calls.push({ bytes: Buffer.byteLength(JSON.stringify(p)), names });
    if (!Array.isArray(review.request.objects)) return { ok: true, payload: { review: {} } };
    await new Promise((r) => setImmediate(r));
    const failed = fail?.(names);
    if (failed) return failed;
    return {
      ok: true,
      payload: {
        review: {
          apiVersion: review.apiVersion,
          kind: 'ConversionReview',
          response: {
            uid: review.request.uid,
            convertedObjects: review.request.objects.map((o) => ({ ...o, apiVersion: review.request.desiredAPIVersion })),
            result: { status: 'Success' },
          },
        },
      },
    };
  };
  return { calls, invoke };
}

test('a review that fits is invoked once, as given; admission payloads pass through', async () => {
  const { calls, invoke } = converter();
  const split = splitConversions(invoke, { chunkBytes: 10_000 });
  const out = await split('f', payload(5, 100), AbortSignal.timeout(5000));
  assert.equal(calls.length, 1);
  assert.ok(out.ok);
  const admission = await split('f', { route: 'validate', review: { request: { uid: 'x' } } }, AbortSignal.timeout(5000));
  assert.ok(admission.ok);
  assert.equal(calls.length, 2);
});

test('a large review is invoked in chunks within the budget and reassembled in order under the original uid', async () => {
  const { calls, invoke } = converter();
  const out = await splitConversions(invoke, { chunkBytes: 5_000, concurrency: 3 })('f', payload(40, 900), AbortSignal.timeout(5000));
  assert.ok(calls.length > 5, `chunked: ${calls.length} invocations`);
  assert.ok(
    calls.every((c) => c.bytes <= 5_000),
    'every chunk within the budget',
  );
  assert.deepEqual(calls.flatMap((c) => c.names).sort(), Array.from({ length: 40 }, (_, i) => `o${i}`).sort(), 'each object sent once');
  assert.ok(out.ok);
  const response = (
    out.payload as {
      review: {
        apiVersion: string;
        response: { uid: string; convertedObjects: { apiVersion: string; metadata: { name: string } }[]; result: { status: string } };
      };
    }
  ).review;
  assert.equal(response.apiVersion, 'apiextensions.k8s.io/v1');
  assert.equal(response.response.uid, 'u-1');
  assert.equal(response.response.result.status, 'Success');
  assert.deepEqual(
    response.response.convertedObjects.map((o) => o.metadata.name),
    Array.from({ length: 40 }, (_, i) => `o${i}`),
  );
  assert.ok(response.response.convertedObjects.every((o) => o.apiVersion === 'g.example.com/v2'));
});

test('one failing chunk fails the review with its message; an invocation error answers as it came', async () => {
  const failing = converter((names) =>
    names.includes('o17')
      ? { ok: true, payload: { review: { response: { uid: 'u-1', convertedObjects: [], result: { status: 'Failure', message: 'K o17: cannot convert' } } } } }
      : undefined,
  );
  const out = await splitConversions(failing.invoke, { chunkBytes: 5_000, concurrency: 2 })('f', payload(40, 900), AbortSignal.timeout(5000));
  assert.ok(out.ok);
  assert.deepEqual((out.payload as { review: { response: unknown } }).review.response, {
    uid: 'u-1',
    convertedObjects: [],
    result: { status: 'Failure', message: 'K o17: cannot convert' },
  });

  const down = converter((names) => (names.includes('o30') ? { ok: false, status: 503, message: 'cannot invoke it: down' } : undefined));
  const refused = await splitConversions(down.invoke, { chunkBytes: 5_000, concurrency: 2 })('f', payload(40, 900), AbortSignal.timeout(5000));
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.status, 503);
  assert.match(!refused.ok ? refused.message : '', /cannot invoke it: down \(converting objects \d+–\d+ of 40\)/);

  const short = converter((names) =>
    names.includes('o5') ? { ok: true, payload: { review: { response: { uid: 'u-1', convertedObjects: [], result: { status: 'Success' } } } } } : undefined,
  );
  const wrong = await splitConversions(short.invoke, { chunkBytes: 5_000 })('f', payload(40, 900), AbortSignal.timeout(5000));
  assert.match(JSON.stringify(wrong), /answered 0 objects for \d+ under the review's uid/);
});

test("no chunk is sent once the caller's signal has fired", async () => {
  const { calls, invoke } = converter();
  const controller = new AbortController();
  controller.abort();
  const out = await splitConversions(invoke, { chunkBytes: 5_000 })('f', payload(40, 900), controller.signal);
  assert.equal(calls.length, 0);
  assert.equal(!out.ok && out.status, 504);
});
