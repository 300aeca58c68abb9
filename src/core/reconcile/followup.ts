/**
 * What to send after a reconcile: the decision from how it ended (a result, the object being
 * gone, or a thrown error) to a follow-up — nothing, a delayed message back to the work
 * queue, or a dead letter. Pure: the handler performs the send and acknowledges the records
 * only when it succeeded.
 *
 * | ending                                   | follow-up                                              |
 * | ---------------------------------------- | ------------------------------------------------------ |
 * | `done()` / gone / superseded / paused    | nothing                                                |
 * | `requeueAfter(s)`                        | `Requeue`, attempt 0, delay s (notBefore if > 900 s)   |
 * | `TerminalError`                          | DLQ `TerminalError` (no retry)                         |
 * | 409 Conflict                             | `Retry`, attempt + 1, delay 1 s (fresh state, soon)    |
 * | 429 with Retry-After                     | `Retry`, attempt unchanged, delay Retry-After (≤ 300 s)|
 * | 5xx with Retry-After                     | `Retry`, attempt + 1, delay Retry-After (≤ 300 s)      |
 * | any other error                          | `Retry`, attempt + 1, delay backoff(attempt + 1)       |
 * | any error when attempt + 1 ≥ maxAttempts | DLQ `RetriesExhausted` (429 excepted: not our failure) |
 *
 * `attempt` counts failed runs before this one; a success resets it (requeue carries 0),
 * like the workqueue's `Forget`. A 429 is the server asking us to slow down, not a failure
 * of this object, so it does not use up attempts.
 *
 * Bounds: a `Retry-After` is honoured up to `MAX_RETRY_AFTER_SECONDS` (src/kube/errors.ts,
 * also for a `KubeApiError` built by hand), and a `requeueAfter` longer than the contract's
 * `MAX_WAIT_SECONDS` waits that long, so every follow-up carries a `notBefore` the contract
 * accepts.
 */
import { MAX_WAIT_SECONDS, followUp, type ReconcileMessage } from '../../contract/message.ts';
import type { DlqReason } from '../../contract/dlq.ts';
import { errorMessage } from '../../observability/log.ts';
import { boundedRetryAfter, isKubeApiError } from '../../kube/errors.ts';
import { backoffSeconds } from '../controller/retry-policy.ts';
import { isTerminalError } from '../controller/errors.ts';
import type { ReconcileResult } from '../controller/result.ts';
import { scheduleAfter, scheduleUntil } from '../invocation/schedule.ts';
import type { RetryPolicy } from '../controller/types.ts';

/** Delay of a retry after a 409 Conflict: soon, with fresh state. */
export const CONFLICT_RETRY_SECONDS = 1;

/**
 * How one reconcile of a key ended: the author's `ReconcileResult`, the object gone, the message
 * superseded or paused, or an error (thrown or of the read) — what `decideFollowUp` decides from.
 */
export type ReconcileEnding =
  | { readonly type: 'result'; readonly result: ReconcileResult }
  /** The primary no longer exists (404, or a different uid: the object was recreated). */
  | { readonly type: 'gone'; readonly why: 'NotFound' | 'UidChanged' }
  /** Per-key mode: a `Requeue` a later one replaced (per-key/requeue-merge.ts); not reconciled. */
  | { readonly type: 'superseded' }
  /** `operless.dev/paused: "true"` on the live primary (pause.ts); not reconciled. */
  | { readonly type: 'paused' }
  | { readonly type: 'error'; readonly error: unknown };

/** Result label, matching controller-runtime's `reconcile_total{result}` values where they exist. */
export type OutcomeLabel =
  | 'success'
  | 'requeue_after'
  | 'error'
  | 'conflict'
  | 'throttled'
  | 'terminal_error'
  | 'retries_exhausted'
  /** Received before its `notBefore`: re-delayed without reconciling. */
  | 'not_due'
  /** Not started for lack of time left in this invocation: handed back to the queue. */
  | 'deferred'
  /** Per-key mode: a `requeueAfter` merged into the key's pending requeue (per-key/requeue-merge.ts): nothing sent. */
  | 'requeue_merged'
  /** Per-key mode: a `Requeue` a later one replaced, acknowledged without a reconcile. */
  | 'superseded'
  /** The primary is paused (`operless.dev/paused`): acknowledged without a reconcile. */
  | 'paused'
  /** The controller's rate limit had no place left in this second: handed back for later, not counted as an attempt (controller/rate-limit.ts). */
  | 'rate_limited'
  /** A timer's tick found its object gone, being deleted or paused, or the timer no longer declared: its chain ends (controller/timer.ts). */
  | 'timer_stopped';

export type FollowUp =
  | { readonly type: 'none'; readonly label: OutcomeLabel }
  | { readonly type: 'send'; readonly label: OutcomeLabel; readonly message: ReconcileMessage; readonly delaySeconds: number }
  | { readonly type: 'deadLetter'; readonly label: OutcomeLabel; readonly reason: DlqReason; readonly error: string };

export interface DecideInput {
  readonly message: ReconcileMessage;
  readonly ending: ReconcileEnding;
  readonly policy: RetryPolicy;
  /** ms since the epoch. */
  readonly now: number;
  readonly random?: () => number;
  /** The longest single delay (default SQS's 900 s; lower only in tests, invocation/schedule.ts). */
  readonly maxDelaySeconds?: number;
}

export function decideFollowUp({ message, ending, policy, now, random = Math.random, maxDelaySeconds }: DecideInput): FollowUp {
  if (ending.type === 'gone') return { type: 'none', label: 'success' };
  if (ending.type === 'superseded') return { type: 'none', label: 'superseded' };
  if (ending.type === 'paused') return { type: 'none', label: 'paused' };
  if (ending.type === 'result') {
    const result = ending.result;
    if (result.type === 'done') return { type: 'none', label: 'success' };
    const schedule = scheduleAfter(Math.min(Math.max(1, result.seconds), MAX_WAIT_SECONDS), now, maxDelaySeconds);
    return {
      type: 'send',
      label: 'requeue_after',
      message: followUp(message, { reason: 'Requeue', attempt: 0, notBefore: schedule.notBefore }),
      delaySeconds: schedule.delaySeconds,
    };
  }

  const error = ending.error;
  if (isTerminalError(error)) {
    return { type: 'deadLetter', label: 'terminal_error', reason: 'TerminalError', error: errorMessage(error) };
  }
  const retry = (label: OutcomeLabel, attempt: number, seconds: number): FollowUp => {
    const schedule = scheduleAfter(seconds, now, maxDelaySeconds);
    return {
      type: 'send',
      label,
      message: followUp(message, { reason: 'Retry', attempt, notBefore: schedule.notBefore }),
      delaySeconds: schedule.delaySeconds,
    };
  };
  const retryAfter = isKubeApiError(error) ? boundedRetryAfter(error.retryAfterSeconds) : undefined;
  if (isKubeApiError(error) && error.status === 429) {
    return retry('throttled', message.attempt, retryAfter ?? backoffSeconds(message.attempt + 1, policy, random));
  }
  const next = message.attempt + 1;
  if (next >= policy.maxAttempts) {
    return {
      type: 'deadLetter',
      label: 'retries_exhausted',
      reason: 'RetriesExhausted',
      error: `gave up after ${next} attempt${next === 1 ? '' : 's'}: ${errorMessage(error)}`,
    };
  }
  if (isKubeApiError(error) && error.status === 409) return retry('conflict', next, CONFLICT_RETRY_SECONDS);
  if (isKubeApiError(error) && error.status >= 500 && retryAfter !== undefined) {
    return retry('error', next, retryAfter);
  }
  return retry('error', next, backoffSeconds(next, policy, random));
}

/**
 * A message received before its `notBefore`: send it again, unchanged — its `notBefore`
 * included, which names a per-key requeue (per-key/requeue-merge.ts) — until it is due.
 */
export function redelay(message: ReconcileMessage & { notBefore: number }, now: number, maxDelaySeconds?: number): FollowUp {
  const schedule = scheduleUntil(message.notBefore, now, maxDelaySeconds);
  return {
    type: 'send',
    label: 'not_due',
    message: followUp(message, { reason: message.reason, attempt: message.attempt, notBefore: message.notBefore }),
    delaySeconds: schedule.delaySeconds,
  };
}

/**
 * A key the controller's rate limit did not admit this second: the same message (reason,
 * attempt, `notBefore`) again after `delaySeconds` — not a failure, so no attempt is used up
 * (controller/rate-limit.ts).
 */
export function rateLimited(message: ReconcileMessage, delaySeconds: number): FollowUp {
  return {
    type: 'send',
    label: 'rate_limited',
    message: followUp(message, { reason: message.reason, attempt: message.attempt, notBefore: message.notBefore }),
    delaySeconds,
  };
}

/**
 * A key the function had no time left to start: hand it back unchanged (same reason and
 * attempt), for the next invocation to pick up at once. Not a failure, so SQS's receive
 * count is not used up.
 */
export function deferred(message: ReconcileMessage): FollowUp {
  return {
    type: 'send',
    label: 'deferred',
    message: followUp(message, { reason: message.reason, attempt: message.attempt, notBefore: message.notBefore }),
    delaySeconds: 0,
  };
}
