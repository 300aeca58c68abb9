/**
 * The handover: what a leader tells its successor through the Lease it renews anyway. With
 * every write of the Lease (acquire, renew, release) the leader publishes its *watermark*: per
 * watch stream (its collection path), the resourceVersion through which it has forwarded
 * everything it saw. A warm follower (source/standby.ts) reads it with each election round,
 * forgets what it covers, and on takeover forwards again only what came after it.
 *
 * The annotation is written by the leader and read by everyone who may read the Lease, so
 * reading it trusts nothing: anything but a JSON object of strings (at most `MAX_STREAMS`
 * entries) reads as no watermark at all, with the reason — the successor then resyncs, which
 * is the answer that loses nothing.
 *
 * Guarantees: `decodeWatermark(encodeWatermark(m))` equals `m`; `decodeWatermark` never
 * throws; `withWatermark` changes only the one annotation. Pure.
 */
import type { Lease } from '../../kube/lease.ts';

export const WATERMARK_ANNOTATION = 'operless.dev/forwarded-through';

/** The most streams a watermark names (one per watch and namespace; the annotation stays far below the API server's 256 KiB). */
export const MAX_STREAMS = 2_000;

/** Per stream (collection path), the resourceVersion through which the leader forwarded everything. */
export type Watermark = ReadonlyMap<string, string>;

export function encodeWatermark(watermark: Watermark): string {
  return JSON.stringify(Object.fromEntries(watermark));
}

/** The watermark a Lease carries: `watermark` (empty when none) and, when it could not be read, `problem`. */
export function decodeWatermark(lease: Lease | undefined): { readonly watermark: Watermark; readonly problem?: string } {
  const annotations = lease?.metadata.annotations;
  const raw = annotations && typeof annotations === 'object' ? (annotations as Record<string, unknown>)[WATERMARK_ANNOTATION] : undefined;
  if (raw === undefined) return { watermark: new Map() };
  if (typeof raw !== 'string') return { watermark: new Map(), problem: `${WATERMARK_ANNOTATION} is not a string` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { watermark: new Map(), problem: `${WATERMARK_ANNOTATION} is not JSON` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { watermark: new Map(), problem: `${WATERMARK_ANNOTATION} is not a JSON object` };
  const entries = Object.entries(parsed);
  if (entries.length > MAX_STREAMS) return { watermark: new Map(), problem: `${WATERMARK_ANNOTATION} names more than ${MAX_STREAMS} streams` };
  if (!entries.every(([, v]) => typeof v === 'string')) return { watermark: new Map(), problem: `${WATERMARK_ANNOTATION} has a value that is not a string` };
  return { watermark: new Map(entries as [string, string][]) };
}

/** `metadata` with the watermark annotation set to `watermark` (removed when undefined), every other field kept. */
export function withWatermark(metadata: Lease['metadata'], watermark: Watermark | undefined): Lease['metadata'] {
  const current = metadata.annotations && typeof metadata.annotations === 'object' ? (metadata.annotations as Record<string, string>) : {};
  const { [WATERMARK_ANNOTATION]: _previous, ...others } = current;
  const annotations = watermark === undefined ? others : { ...others, [WATERMARK_ANNOTATION]: encodeWatermark(watermark) };
  const { annotations: _old, ...rest } = metadata;
  return Object.keys(annotations).length > 0 ? { ...rest, annotations } : (rest as Lease['metadata']);
}
