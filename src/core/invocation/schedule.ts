/**
 * Waits longer than SQS allows: a message can be delayed at most 900 s, so a wait that ends
 * later is sent with the maximum delay and a `notBefore` time; a consumer that receives it
 * early re-delays it (without reconciling) until it is due. Every hop is one more
 * SendMessage, so a 1 h requeue costs four messages.
 *
 * Guarantees: `delaySeconds` is an integer in [0, max]; `notBefore` is set exactly when the
 * due time is more than max seconds away; re-delaying a not-yet-due message converges on the
 * due time and never delays past it by more than one second of rounding. The max is SQS's
 * unless configured lower (`OPERLESS_MAX_DELAY_SECONDS`, `resolveMaxDelaySeconds`): a test
 * runs the whole re-delay chain of a long wait in seconds, with the code paths a 16-minute
 * wait takes.
 */
import { MAX_DELAY_SECONDS } from '../controller/retry-policy.ts';

export interface Schedule {
  /** SQS `DelaySeconds` for the send. */
  readonly delaySeconds: number;
  /** Due time (ms) to carry in the message when the wait is longer than one delay. */
  readonly notBefore?: number;
}

/** The variable that lowers the longest single delay (tests; never needed in production). */
export const MAX_DELAY_VARIABLE = 'OPERLESS_MAX_DELAY_SECONDS';

/**
 * The longest single delay to use: `value` (from `source`, named in the error) when set, else
 * SQS's 900 s. Refuses anything but a whole number of seconds in [1, 900]. Pure.
 */
export function resolveMaxDelaySeconds(value: number | string | undefined, source: string = MAX_DELAY_VARIABLE): number {
  if (value === undefined || value === '') return MAX_DELAY_SECONDS;
  const n = typeof value === 'number' ? value : /^\d+$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_DELAY_SECONDS) {
    throw new TypeError(`${source} must be a whole number of seconds from 1 to ${MAX_DELAY_SECONDS} (SQS's longest delay), got ${JSON.stringify(value)}`);
  }
  return n;
}

/** How to send a message that should be handled `seconds` from `now` (ms). */
export function scheduleAfter(seconds: number, now: number, maxDelaySeconds: number = MAX_DELAY_SECONDS): Schedule {
  const whole = Math.max(0, Math.ceil(seconds));
  if (whole <= maxDelaySeconds) return { delaySeconds: whole };
  return { delaySeconds: maxDelaySeconds, notBefore: now + whole * 1000 };
}

/** How to re-send a message whose `notBefore` is still in the future. */
export function scheduleUntil(notBefore: number, now: number, maxDelaySeconds: number = MAX_DELAY_SECONDS): Schedule {
  const remaining = Math.max(0, Math.ceil((notBefore - now) / 1000));
  if (remaining <= maxDelaySeconds) return { delaySeconds: remaining };
  return { delaySeconds: maxDelaySeconds, notBefore };
}

/** True when the message may be handled now (no `notBefore`, or it has passed). */
export function isDue(notBefore: number | undefined, now: number): boolean {
  return notBefore === undefined || notBefore <= now;
}
