/**
 * Waits longer than SQS allows: a message can be delayed at most 900 s, so a wait that ends
 * later is sent with the maximum delay and a `notBefore` time; a consumer that receives it
 * early re-delays it (without reconciling) until it is due. Every hop is one more
 * SendMessage, so a 1 h requeue costs four messages.
 *
 * Guarantees: `delaySeconds` is an integer in [0, 900]; `notBefore` is set exactly when the
 * due time is more than 900 s away; re-delaying a not-yet-due message converges on the due
 * time and never delays past it by more than one second of rounding.
 */
import { MAX_DELAY_SECONDS } from './backoff.ts';

export interface Schedule {
  /** SQS `DelaySeconds` for the send. */
  readonly delaySeconds: number;
  /** Due time (ms) to carry in the message when the wait is longer than one delay. */
  readonly notBefore?: number;
}

/** How to send a message that should be handled `seconds` from `now` (ms). */
export function scheduleAfter(seconds: number, now: number): Schedule {
  const whole = Math.max(0, Math.ceil(seconds));
  if (whole <= MAX_DELAY_SECONDS) return { delaySeconds: whole };
  return { delaySeconds: MAX_DELAY_SECONDS, notBefore: now + whole * 1000 };
}

/** How to re-send a message whose `notBefore` is still in the future. */
export function scheduleUntil(notBefore: number, now: number): Schedule {
  const remaining = Math.max(0, Math.ceil((notBefore - now) / 1000));
  if (remaining <= MAX_DELAY_SECONDS) return { delaySeconds: remaining };
  return { delaySeconds: MAX_DELAY_SECONDS, notBefore };
}

/** True when the message may be handled now (no `notBefore`, or it has passed). */
export function isDue(notBefore: number | undefined, now: number): boolean {
  return notBefore === undefined || notBefore <= now;
}
