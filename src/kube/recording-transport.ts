/**
 * A transport that records every write, for previews and tests: with `dryRun`, every write is
 * also a server-side dry run.
 *
 * Guarantees:
 * - With `dryRun: true`, every request other than a GET carries `dryRun=All`, whichever client
 *   method, module or author's code made it: admission (webhooks, policies, CEL rules),
 *   defaulting and schema validation run as for a real write, and nothing is stored. A caller
 *   cannot opt out: the wrapper sets the parameter over whatever the request carried. Without
 *   it, writes go through as they are (a test's reconcile: `operless/testing` `reconcileTester`).
 * - Each write is recorded in the order it was made, with its answer (the object the server
 *   would have stored) or its refusal (status and message); the refusal is still thrown to the
 *   caller, as a real write's would be.
 * - Reads and watches pass through unchanged, so a reconcile reads the live cluster.
 * - Optionally bounded in rate: every request (reads, writes and watches alike) first waits for
 *   `take`, e.g. one `rateLimiter` shared by the transports of every object of a preview, so a
 *   preview of many objects loads the API server no faster than asked.
 */
import { isKubeApiError } from './errors.ts';
import type { KubeRequest, KubeResponse, KubeTransport } from './transport.ts';

export interface RecordedWrite {
  readonly method: KubeRequest['method'];
  /** The request path (no query), e.g. `/apis/apps/v1/namespaces/ns/deployments/web`. */
  readonly path: string;
  readonly contentType?: string | undefined;
  readonly body?: unknown;
  /** The object the server answered with: what it would have stored. */
  readonly response?: unknown;
  /** The refusal, when the server refused the write (an admission denial, a validation error). */
  readonly refused?: { readonly status: number; readonly message: string };
}

export interface RecordingOptions {
  /** Every write a server-side dry run (`dryRun=All`): previews. */
  readonly dryRun: boolean;
  /** Called once per write, in order, after its answer. */
  readonly record: (write: RecordedWrite) => void;
  /** Resolves when a request may start (a shared `rateLimiter`); none: at once. */
  readonly take?: () => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A token bucket of `perSecond` tokens holding one second's worth: the returned `take()`
 * resolves when a request may start, waiters served in arrival order.
 */
export function rateLimiter(perSecond: number, now: () => number = Date.now, sleep: (ms: number) => Promise<void> = defaultSleep): () => Promise<void> {
  if (!(perSecond > 0)) throw new RangeError(`requests per second must be above 0, got ${perSecond}`);
  let tokens = perSecond;
  let last = now();
  let queue: Promise<void> = Promise.resolve();
  const takeOne = async (): Promise<void> => {
    for (;;) {
      const t = now();
      tokens = Math.min(perSecond, tokens + ((t - last) / 1000) * perSecond);
      last = t;
      if (tokens >= 1) {
        tokens -= 1;
        return;
      }
      await sleep(Math.ceil(((1 - tokens) / perSecond) * 1000));
    }
  };
  // One waiter at a time, in arrival order: fair, and the bucket's state is never raced.
  return () => {
    const turn = queue.then(takeOne);
    queue = turn.catch(() => undefined);
    return turn;
  };
}

export function recordingTransport(inner: KubeTransport, options: RecordingOptions): KubeTransport {
  const take = options.take ?? (async () => {});
  return {
    server: inner.server,
    async request(req: KubeRequest): Promise<KubeResponse> {
      await take();
      if (req.method === 'GET') return inner.request(req);
      const path = req.path.split('?')[0] ?? req.path;
      const base = { method: req.method, path, contentType: req.contentType, body: req.body };
      try {
        const res = await inner.request(options.dryRun ? { ...req, query: { ...req.query, dryRun: 'All' } } : req);
        options.record({ ...base, response: res.body });
        return res;
      } catch (error) {
        const refused = isKubeApiError(error)
          ? { status: error.status, message: error.message }
          : { status: 0, message: error instanceof Error ? error.message : String(error) };
        options.record({ ...base, refused });
        throw error;
      }
    },
    async watch(req, onEvent) {
      await take();
      return inner.watch(req, onEvent);
    },
    async list(req, onItem) {
      await take();
      return inner.list(req, onItem);
    },
    close: () => inner.close(),
  };
}
