/**
 * The two time formats of the Kubernetes API, in one place: `Time` (RFC 3339, seconds, UTC:
 * conditions' `lastTransitionTime`) and `MicroTime` (RFC 3339 with exactly six fractional
 * digits: an Event's `eventTime`, a Lease's `acquireTime`/`renewTime`). JavaScript dates
 * carry milliseconds, so a MicroTime's last three digits are always 0.
 *
 * Pure; a time is a `Date` or epoch milliseconds.
 */

/** Kubernetes `Time`: RFC 3339, seconds precision, UTC (`2026-01-02T03:04:05Z`). */
export function kubeTime(at: Date | number): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Kubernetes `MicroTime`: RFC 3339 with exactly six fractional digits (`2026-01-02T03:04:05.067000Z`). */
export function microTime(at: Date | number): string {
  return new Date(at).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
