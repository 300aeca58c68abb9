/**
 * The API server's own request counter, `apiserver_request_total`, scraped from `/metrics`
 * with the admin's credentials: snapshots, and the delta between two snapshots by
 * verb and resource (watches excluded: they are long-lived streams, not per-reconcile work).
 */
import https from 'node:https';

export type RequestCounts = Map<string, number>;

/** One sample of a Prometheus text exposition: its labels and value. */
export interface MetricSample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of metric `name` in a Prometheus text exposition (`name{labels} value`). Pure. */
export function metricSamples(text: string, name: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const open = line.indexOf('{');
    const close = open === -1 ? name.length : line.lastIndexOf('}');
    const labels: Record<string, string> = {};
    if (open !== -1) for (const m of line.slice(open + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!;
    const value = Number(
      line
        .slice(close + 1)
        .trim()
        .split(/\s+/)[0],
    );
    if (Number.isFinite(value)) samples.push({ labels, value });
  }
  return samples;
}

/** Parses `apiserver_request_total` samples into `VERB resource[/subresource]` → count. Pure. */
export function parseRequestTotals(text: string): RequestCounts {
  const counts: RequestCounts = new Map();
  for (const { labels, value } of metricSamples(text, 'apiserver_request_total')) {
    const resource = labels.subresource ? `${labels.resource}/${labels.subresource}` : (labels.resource ?? '');
    const key = `${labels.verb ?? '?'} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

/** after − before, without watches and zero rows. Pure. */
export function requestDelta(before: RequestCounts, after: RequestCounts): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [key, value] of after) {
    if (key.startsWith('WATCH ')) continue;
    const d = value - (before.get(key) ?? 0);
    if (d > 0) delta[key] = d;
  }
  return delta;
}

/**
 * The requests the API server answered with `code` (e.g. "409": conflicts — a precondition or an
 * optimistic-concurrency write that lost), by `VERB resource[/subresource]`. Pure.
 */
export function parseRequestsWithCode(text: string, code: string): RequestCounts {
  const counts: RequestCounts = new Map();
  for (const { labels, value } of metricSamples(text, 'apiserver_request_total')) {
    if (labels.code !== code) continue;
    const resource = labels.subresource ? `${labels.resource}/${labels.subresource}` : (labels.resource ?? '');
    const key = `${labels.verb ?? '?'} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

/**
 * The resources the Memcached operators write (either system): the primary, its status and the
 * children they apply. Conflicts on anything else (`deployments/status`, `replicasets/status`)
 * are the controller manager's own, alike for every system.
 */
const OPERATOR_WRITTEN = new Set(['memcacheds', 'memcacheds/status', 'deployments', 'services']);

/** Of the 409s by `VERB resource`, those on what the operator writes. Pure. */
export function operatorConflicts(conflicts: Readonly<Record<string, number>>): number {
  return Object.entries(conflicts).reduce((sum, [key, n]) => sum + (OPERATOR_WRITTEN.has(key.split(' ')[1] ?? '') ? n : 0), 0);
}

/** One scrape of the API server's request counters: every answer, and the conflicts (409) alone. */
export interface RequestSnapshot {
  readonly all: RequestCounts;
  readonly conflicts: RequestCounts;
}

export async function scrapeRequestTotals(server: string, token: string, caPem: string): Promise<RequestCounts> {
  return parseRequestTotals(await scrapeMetrics(server, token, caPem));
}

export async function scrapeRequestSnapshot(server: string, token: string, caPem: string): Promise<RequestSnapshot> {
  const text = await scrapeMetrics(server, token, caPem);
  return { all: parseRequestTotals(text), conflicts: parseRequestsWithCode(text, '409') };
}

export async function scrapeMetrics(server: string, token: string, caPem: string): Promise<string> {
  const url = new URL('/metrics', server);
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.get(url, { headers: { Authorization: `Bearer ${token}` }, ca: caPem }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`GET /metrics answered ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
  });
  return text;
}
