/**
 * Queue routing: which queue a reconcile message goes to. Each primary kind has one queue
 * (its watch's `queueUrl`, defaulted to the top-level `queue.url` by the config), and a
 * message always names a primary — an owned object's message names its owner — so routing
 * by the message's kind sends an owned object's change to its owner's queue.
 *
 * A primary kind may also have a bulk queue (its watch's `bulkQueueUrl`, config.ts): the queue
 * its backlog traffic — resyncs and relists — goes to, so that SQS, which has no priority,
 * never puts a live change behind them; the functions consume it at a lower concurrency
 * (docs/forwarder.md, "Live changes before the backlog").
 *
 * Guarantees: pure; every message gets exactly one queue (a kind no primary declares — which
 * the router never produces — goes to the default queue); backlog traffic of a kind without a
 * bulk queue goes to its queue (`bulkQueueFor` falls back to `queueFor`); `queueLabels` gives every queue a
 * short, distinct metric label without account ids (its queue name, with a digest of its URL
 * when two queues share a name).
 */
import { createHash } from 'node:crypto';
import type { ObjectRef } from '../../contract/message.ts';
import type { WatchRole } from '../config/config.ts';
import { apiGroup } from '../../kube/paths.ts';

/** What routing needs of a watch. */
export interface RoutedWatch {
  readonly role: WatchRole;
  readonly apiVersion: string;
  readonly kind: string;
  readonly queueUrl?: string;
  readonly bulkQueueUrl?: string;
}

export interface QueueRoutes {
  /** Distinct queue URLs, default first, then in order of the primaries, then their bulk queues. */
  readonly urls: readonly string[];
  /** The queue for a live message about this primary object. */
  queueFor(ref: Pick<ObjectRef, 'apiVersion' | 'kind'>): string;
  /** The queue for a backlog message (resync, relist) about this primary object: its bulk queue, else its queue. */
  bulkQueueFor(ref: Pick<ObjectRef, 'apiVersion' | 'kind'>): string;
}

/** Kinds are matched by group and kind, any version (as owner references are). */
const kindKey = (ref: { apiVersion: string; kind: string }) => `${apiGroup(ref.apiVersion)} ${ref.kind}`;

export function queueRoutes(defaultQueueUrl: string, watches: readonly RoutedWatch[]): QueueRoutes {
  const byKind = new Map<string, string>();
  const bulkByKind = new Map<string, string>();
  for (const w of watches) {
    if (w.role !== 'primary') continue;
    byKind.set(kindKey(w), w.queueUrl ?? defaultQueueUrl);
    if (w.bulkQueueUrl !== undefined) bulkByKind.set(kindKey(w), w.bulkQueueUrl);
  }
  const used = new Set(byKind.values());
  // The default queue leads the list only when some primary uses it (or no primary is known yet).
  const urls = [...new Set([...(used.has(defaultQueueUrl) || used.size === 0 ? [defaultQueueUrl] : []), ...byKind.values(), ...bulkByKind.values()])];
  const queueFor = (ref: Pick<ObjectRef, 'apiVersion' | 'kind'>) => byKind.get(kindKey(ref)) ?? defaultQueueUrl;
  return { urls, queueFor, bulkQueueFor: (ref) => bulkByKind.get(kindKey(ref)) ?? queueFor(ref) };
}

/** The queue name of a queue URL: its last path segment. */
export function queueName(url: string): string {
  const path = url.replace(/[?#].*$/, '').replace(/\/+$/, '');
  return path.slice(path.lastIndexOf('/') + 1) || url;
}

/** The first 8 hex digits of the SHA-256 of a queue URL: tells queues of one name apart without showing the URL. */
export function queueUrlDigest(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 8);
}

/**
 * Metric label per queue URL: the queue name, unless two of the URLs share it — then
 * `<name>#<digest>` (`queueUrlDigest`): distinct, and still free of account ids and endpoints
 * (`printf %s <url> | sha256sum` finds which queue it is).
 */
export function queueLabels(urls: readonly string[]): Map<string, string> {
  const counts = new Map<string, number>();
  for (const url of new Set(urls)) counts.set(queueName(url), (counts.get(queueName(url)) ?? 0) + 1);
  return new Map(urls.map((url) => [url, counts.get(queueName(url))! > 1 ? `${queueName(url)}#${queueUrlDigest(url)}` : queueName(url)]));
}
