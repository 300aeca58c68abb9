/**
 * A ConversionReview larger than one Lambda invocation: a review may carry many objects (the
 * API says so; kube-apiserver v1.34 was measured converting a LIST's items one per review, see
 * docs/architecture.md, "Large lists"), but a synchronous invocation carries at most 6 MB each
 * way. `splitConversions(invoke)` is a `WebhookInvoker` that passes every other payload through
 * unchanged and invokes a large ConversionReview in chunks of `request.objects`.
 *
 * Guarantees:
 * - A ConversionReview whose invocation payload fits `chunkBytes` is invoked once, as given.
 * - Otherwise its objects are cut, in order, into chunks whose invocation payload (the review
 *   with that chunk, wrapped as `{ route, review }`) is at most `chunkBytes` (default half of
 *   Lambda's 6 MB limit, so a conversion may grow an object up to 2× and its answer still fits
 *   the response limit); an object larger than that on its own travels alone. Each chunk is the
 *   same review (same uid and desired version) with fewer objects; at most `concurrency`
 *   (default 4) are in flight, all bounded by the caller's signal.
 * - The answer is one ConversionReview with the original uid and the converted objects in the
 *   original order. The first chunk to fail decides the answer: an invocation error is
 *   answered as it came (status, message naming the chunk's objects), so is a `{ problem }`; a
 *   `Failure` result, or an answer that does not hold exactly its chunk's objects under the
 *   review's uid, fails the whole review with that chunk's message; the chunks still running
 *   are aborted and no further chunk is sent.
 * - Pure planning (`planChunks`); nothing here reads the HTTP request, so the endpoint's body
 *   limit is its own concern.
 */
import type { InvokeOutcome, WebhookInvoker } from './server.ts';

/** Lambda's synchronous invocation limit, request and response (RequestTooLargeException above it). */
export const LAMBDA_PAYLOAD_LIMIT_BYTES = 6_291_456;
export const DEFAULT_CHUNK_BYTES = Math.floor(LAMBDA_PAYLOAD_LIMIT_BYTES / 2);
export const DEFAULT_CHUNK_CONCURRENCY = 4;

export interface SplitOptions {
  readonly chunkBytes?: number;
  readonly concurrency?: number;
}

/**
 * Cuts items of `sizes` bytes (each JSON-encoded, without the separating comma) into
 * consecutive [start, end) ranges, each costing at most `budget` bytes with `overhead` added
 * (an item over the budget alone gets a range of its own). Pure.
 */
export function planChunks(sizes: readonly number[], overhead: number, budget: number): [number, number][] {
  const ranges: [number, number][] = [];
  let start = 0;
  let used = overhead;
  for (let i = 0; i < sizes.length; i++) {
    const cost = (sizes[i] as number) + (i > start ? 1 : 0);
    if (i > start && used + cost > budget) {
      ranges.push([start, i]);
      start = i;
      used = overhead + (sizes[i] as number);
    } else {
      used += cost;
    }
  }
  if (sizes.length > 0) ranges.push([start, sizes.length]);
  return ranges;
}

interface ConversionPayload {
  readonly route: 'convert';
  readonly review: {
    readonly apiVersion?: unknown;
    readonly request: { readonly uid: string; readonly objects: readonly unknown[] } & Record<string, unknown>;
  } & Record<string, unknown>;
}

function isLargeConversion(payload: object): payload is ConversionPayload {
  const p = payload as { route?: unknown; review?: { request?: { uid?: unknown; objects?: unknown } } };
  return p.route === 'convert' && typeof p.review?.request?.uid === 'string' && Array.isArray(p.review.request.objects) && p.review.request.objects.length > 1;
}

export function splitConversions(invoke: WebhookInvoker, options: SplitOptions = {}): WebhookInvoker {
  const budget = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const concurrency = Math.max(1, options.concurrency ?? DEFAULT_CHUNK_CONCURRENCY);
  return async (functionName, payload, signal) => {
    if (!isLargeConversion(payload)) return invoke(functionName, payload, signal);
    const objects = payload.review.request.objects;
    const sizes = objects.map((o) => Buffer.byteLength(JSON.stringify(o) ?? 'null'));
    const overhead = Buffer.byteLength(JSON.stringify(withObjects(payload, [])));
    if (overhead + sizes.reduce((a, b) => a + b, 0) + objects.length - 1 <= budget) return invoke(functionName, payload, signal);
    const ranges = planChunks(sizes, overhead, budget);
    const uid = payload.review.request.uid;
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const results: (ChunkResult | undefined)[] = new Array(ranges.length);
    let failed: ChunkResult | undefined;
    let next = 0;
    const worker = async () => {
      while (next < ranges.length && !controller.signal.aborted) {
        const index = next++;
        const [start, end] = ranges[index] as [number, number];
        const outcome = await invoke(functionName, withObjects(payload, objects.slice(start, end)), controller.signal);
        if (failed) return; // aborted by another chunk's failure: that one answers
        const result = readChunk(outcome, uid, end - start, `objects ${start + 1}–${end} of ${objects.length}`);
        results[index] = result;
        if (result.type !== 'converted') {
          failed = result;
          controller.abort();
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(concurrency, ranges.length) }, worker));
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    const converted: unknown[] = [];
    for (const result of failed ? [failed] : results) {
      // Unset only when the caller's signal fired before every chunk was sent.
      if (result === undefined) return { ok: false, status: 504, message: "no answer before the API server's timeout (a chunked conversion of a large list)" };
      if (result.type === 'outcome') return result.outcome;
      if (result.type === 'failure') return { ok: true, payload: { review: conversionAnswer(payload, uid, { failure: result.message }) } };
      converted.push(...result.objects);
    }
    return { ok: true, payload: { review: conversionAnswer(payload, uid, { convertedObjects: converted }) } };
  };
}

type ChunkResult =
  | { readonly type: 'converted'; readonly objects: readonly unknown[] }
  | { readonly type: 'failure'; readonly message: string }
  | { readonly type: 'outcome'; readonly outcome: InvokeOutcome };

/** What one chunk's invocation answered. Pure. */
function readChunk(outcome: InvokeOutcome, uid: string, count: number, which: string): ChunkResult {
  if (!outcome.ok) return { type: 'outcome', outcome: { ...outcome, message: `${outcome.message} (converting ${which})` } };
  const payload = outcome.payload as {
    review?: { response?: { uid?: unknown; convertedObjects?: unknown; result?: { status?: unknown; message?: unknown } } };
    problem?: unknown;
  } | null;
  if (typeof payload?.problem === 'string') return { type: 'outcome', outcome };
  const response = payload?.review?.response;
  if (response?.result?.status === 'Failure')
    return { type: 'failure', message: typeof response.result.message === 'string' ? response.result.message : `the conversion of ${which} failed` };
  if (response?.uid !== uid || !Array.isArray(response.convertedObjects) || response.convertedObjects.length !== count) {
    return {
      type: 'failure',
      message: `the conversion of ${which} answered ${Array.isArray(response?.convertedObjects) ? response.convertedObjects.length : 'no'} objects for ${count} under ${response?.uid === uid ? "the review's uid" : 'another uid'}`,
    };
  }
  return { type: 'converted', objects: response.convertedObjects };
}

function withObjects(payload: ConversionPayload, objects: readonly unknown[]): ConversionPayload {
  return { ...payload, review: { ...payload.review, request: { ...payload.review.request, objects } } };
}

function conversionAnswer(
  payload: ConversionPayload,
  uid: string,
  outcome: { readonly convertedObjects: readonly unknown[] } | { readonly failure: string },
): Record<string, unknown> {
  const response =
    'failure' in outcome
      ? { uid, convertedObjects: [], result: { status: 'Failure', message: outcome.failure } }
      : { uid, convertedObjects: outcome.convertedObjects, result: { status: 'Success' } };
  return {
    apiVersion: typeof payload.review.apiVersion === 'string' ? payload.review.apiVersion : 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    response,
  };
}
