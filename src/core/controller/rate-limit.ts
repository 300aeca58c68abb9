/**
 * A rate limit toward an external API, shared by every invocation of a controller
 * (`ControllerSpec.rateLimit: { perSecond }`, Crossplane's `--max-reconcile-rate`): at most
 * `perSecond` reconciles of the kind start in any one second, counted in one shared window
 * (docs/semantics.md, "A rate limit shared by all invocations", says why this means).
 *
 * The state is a fixed window — the second (ms / 1000, rounded down) and how many reconciles
 * it admitted — kept on a Lease in the cluster (controls/rate-limit-lease.ts) and advanced only by
 * a write guarded by the Lease's resourceVersion: two invocations can never both take the
 * last place of a window. A window of another invocation whose clock runs ahead is used as it
 * is (never reset backwards), so the count per window holds whatever the clocks — within
 * `RATE_WINDOW_SKEW_SECONDS`: a window further ahead cannot be a function's and is counted
 * over, so an edit of the Lease cannot park the kind.
 *
 * A key that finds its window full is not failed: it goes back to the queue unchanged (same
 * reason, same attempt: not counted toward `maxAttempts`), due after the window ends plus a
 * jitter of up to `RATE_LIMIT_SPREAD_SECONDS` so the excess of one second does not all return
 * in the same one. Pure.
 */
import { isDnsLabel } from '../../contract/names.ts';

export interface RateLimit {
  /** Reconciles of this controller that may start per second, across every invocation: a whole number from 1 to 1000. */
  readonly perSecond: number;
  /** Namespace of the Lease that holds the shared count (default `default`); the function needs get/create/patch on Leases there. */
  readonly namespace?: string;
}

export interface ResolvedRateLimit {
  readonly perSecond: number;
  readonly namespace: string;
}

export const RATE_LIMIT_MAX_PER_SECOND = 1000;
export const RATE_LIMIT_DEFAULT_NAMESPACE = 'default';
/** The jitter added to the wait of a key that found its window full, whole seconds. */
export const RATE_LIMIT_SPREAD_SECONDS = 3;

/** The validated rate limit (undefined when absent), or throws a TypeError naming the field. */
export function resolveRateLimit(value: unknown): ResolvedRateLimit | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new TypeError(`rateLimit must be an object like { perSecond: 5 }, got ${JSON.stringify(value)}`);
  const extra = Object.keys(value).filter((k) => k !== 'perSecond' && k !== 'namespace');
  if (extra.length > 0) throw new TypeError(`rateLimit has unknown field(s) ${extra.join(', ')}; only perSecond and namespace are allowed`);
  const { perSecond, namespace } = value as { perSecond?: unknown; namespace?: unknown };
  if (typeof perSecond !== 'number' || !Number.isInteger(perSecond) || perSecond < 1 || perSecond > RATE_LIMIT_MAX_PER_SECOND) {
    throw new TypeError(`rateLimit.perSecond must be a whole number from 1 to ${RATE_LIMIT_MAX_PER_SECOND}, got ${JSON.stringify(perSecond)}`);
  }
  if (namespace !== undefined && (typeof namespace !== 'string' || !isDnsLabel(namespace))) {
    throw new TypeError(`rateLimit.namespace must be a namespace name (a DNS-1123 label), got ${JSON.stringify(namespace)}`);
  }
  return Object.freeze({ perSecond, namespace: namespace ?? RATE_LIMIT_DEFAULT_NAMESPACE });
}

/** The shared count: the window (whole seconds since the epoch) and the reconciles it admitted. */
export interface RateWindow {
  readonly second: number;
  readonly admitted: number;
}

export type Admission =
  | { readonly admit: true; readonly next: RateWindow }
  /** The window is full: try again in `waitMs` (when it ends). */
  | { readonly admit: false; readonly waitMs: number };

/**
 * How far ahead of this clock a stored window may be and still be counted: clock skew between
 * invocations. One further ahead was not written by a function (an edit of the Lease) and is
 * counted over, so no value on the Lease can hold reconciles back for longer than a second.
 */
export const RATE_WINDOW_SKEW_SECONDS = 60;

/** Whether a reconcile may start at `now` given the stored window (undefined: none yet). */
export function admission(storedWindow: RateWindow | undefined, now: number, perSecond: number): Admission {
  const current = Math.floor(now / 1000);
  const stored = storedWindow && storedWindow.second <= current + RATE_WINDOW_SKEW_SECONDS ? storedWindow : undefined;
  const second = Math.max(current, stored?.second ?? 0);
  const admitted = stored?.second === second ? stored.admitted : 0;
  if (admitted < perSecond) return { admit: true, next: { second, admitted: admitted + 1 } };
  return { admit: false, waitMs: Math.max(0, (second + 1) * 1000 - now) };
}

/** The delay, whole seconds (at least 1), of a key that found its window full and must wait `waitMs`. */
export function rateLimitedDelaySeconds(waitMs: number, random: () => number): number {
  return Math.max(1, Math.ceil(waitMs / 1000)) + Math.floor(random() * (RATE_LIMIT_SPREAD_SECONDS + 1));
}
