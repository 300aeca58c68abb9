/**
 * What a resync repaired: whether a reconcile changed anything in the cluster. A `Resync`
 * message exists for what no event covered (docs/semantics.md, "Resync period"), so a resync
 * whose reconcile wrote a change found drift the events had missed — the figure that says
 * whether the resync period is worth its cost (`resync_repaired_total`, metrics.ts).
 *
 * A write changed something when the API server accepted it (2xx) and it is:
 * - a POST (a create) or a DELETE;
 * - a PATCH or PUT whose answer carries another `resourceVersion` than the object had — the
 *   one the request named as its precondition, else the one this reconcile last read or wrote
 *   for that object (its status and other subresources are the same object); when neither is
 *   known, the write counts as a change (an unconditional apply not preceded by a read);
 * Events (`events`, `events.k8s.io`) record, they repair nothing: never counted.
 *
 * The runtime's own writes skip what would change nothing (an unchanged status is not
 * written, `applyOwnedIfChanged` skips an unchanged child), and a server-side apply that
 * changes nothing keeps the object's `resourceVersion`, so a reconcile that found everything
 * as desired counts as no repair.
 *
 * Guarantees: `writeChanged` is pure; `watchWrites` never changes a request or its answer and
 * never throws of its own (a response without metadata is simply not a known version).
 */
import { createKubeClient, type BoundKubeClient } from '../../kube/client.ts';
import type { KubeRequest, KubeResponse, KubeTransport } from '../../kube/transport.ts';

/** The object a request path names: no query, no subresource (`/status`, `/scale`). Pure. */
export function objectPathOf(path: string): string {
  const bare = path.replace(/[?#].*$/, '');
  return bare.replace(/\/(status|scale|ephemeralcontainers|resize)$/, '');
}

const isEventPath = (path: string): boolean => /\/events(\/|$)/.test(path.replace(/[?#].*$/, ''));

function resourceVersionOf(body: unknown): string | undefined {
  const metadata = typeof body === 'object' && body !== null ? (body as { metadata?: unknown }).metadata : undefined;
  const rv = typeof metadata === 'object' && metadata !== null ? (metadata as { resourceVersion?: unknown }).resourceVersion : undefined;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

/** Whether an accepted request changed an object, given the version of it known before (`known`). Pure. */
export function writeChanged(
  req: Pick<KubeRequest, 'method' | 'path' | 'body'>,
  res: Pick<KubeResponse, 'status' | 'body'>,
  known: string | undefined,
): boolean {
  if (req.method === 'GET' || res.status < 200 || res.status >= 300 || isEventPath(req.path)) return false;
  if (req.method === 'POST' || req.method === 'DELETE') return true;
  const before = resourceVersionOf(req.body) ?? known;
  const after = resourceVersionOf(res.body);
  return before === undefined || after === undefined || before !== after;
}

/** What one reconcile wrote, as far as `writeChanged` can tell. */
export class WriteWatch {
  #changed = false;
  readonly #versions = new Map<string, string>();

  /** True once an accepted write changed something. */
  get changed(): boolean {
    return this.#changed;
  }

  /** Takes one request and its answer. */
  observe(req: KubeRequest, res: KubeResponse): void {
    const path = objectPathOf(req.path);
    if (writeChanged(req, res, this.#versions.get(path))) this.#changed = true;
    const rv = resourceVersionOf(res.body);
    if (rv !== undefined && req.method !== 'DELETE') this.#versions.set(path, rv);
  }
}

/** The client with every request it sends shown to `watch` (answers unchanged). */
export function watchWrites(client: BoundKubeClient, watch: WriteWatch): BoundKubeClient {
  const transport = client.transport;
  const watched: KubeTransport = {
    server: transport.server,
    request: async (req) => {
      const res = await transport.request(req);
      watch.observe(req, res);
      return res;
    },
    watch: transport.watch.bind(transport),
    list: transport.list.bind(transport),
    close: transport.close.bind(transport),
  };
  return createKubeClient(watched, { fieldManager: client.fieldManager });
}
