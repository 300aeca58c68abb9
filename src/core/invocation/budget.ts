/**
 * Stage src/core/invocation/ — one Lambda invocation's limits: its time budget (this file),
 * the answer deadline (deadline.ts), bounded concurrency (concurrency.ts) and SQS's delay limit
 * (schedule.ts). Guarantees: pure arithmetic on the clock and SQS's limits, shared by the
 * reconcile handler and the delay mover; it imports only the author's retry policy constants.
 *
 * The time budget of one invocation. A Lambda function is killed at its timeout, and a
 * killed invocation acknowledges nothing, so the whole batch would come back after the
 * visibility timeout. To avoid that, the handler keeps a reserve of time for sending
 * follow-ups and returning its response:
 *
 * - a key is started only while more than `reserveMs` remain; keys not started are handed
 *   back to the queue (see `deferred` in reconcile/followup.ts), not failed;
 * - a running reconcile's `signal` is aborted when only half the reserve remains, so a
 *   cooperative reconcile (one that passes `ctx.signal` on) stops and its follow-up is still
 *   sent in time;
 * - a reconcile that ignores its aborted signal is abandoned when a quarter of the reserve
 *   remains: it counts as a failed reconcile (retried, in the end dead-lettered) and its
 *   follow-up is sent in the time left;
 * - when a tenth of the reserve remains the handler answers with what it has: records whose
 *   key has not finished (a follow-up still being sent, a key not started) are reported as
 *   failures so SQS delivers them again; nothing waits into the function timeout.
 *
 * Default reserve: 20% of the time the invocation started with, at least 500 ms and at most
 * 10 s (a 60 s function keeps 10 s, a 3 s function keeps 600 ms).
 *
 * A configured reserve at or above the time an invocation starts with (the function's
 * timeout) could never let a key start: every record would be handed back to the queue,
 * forever, and never reach the DLQ. `reserveProblem` names that configuration; the handler
 * refuses to run with it. `packagedReserveProblem` finds the same configuration earlier, from
 * a function's `timeout` and `OPERLESS_BUDGET_RESERVE_MS` in serverless.yml (`operless doctor`
 * and the package step refuse it).
 */

export const MIN_RESERVE_MS = 500;
export const MAX_RESERVE_MS = 10_000;

export function resolveReserveMs(initialRemainingMs: number, configuredMs?: number): number {
  if (configuredMs !== undefined) return Math.max(0, configuredMs);
  return Math.round(Math.min(MAX_RESERVE_MS, Math.max(MIN_RESERVE_MS, initialRemainingMs * 0.2)));
}

/** May a new reconcile start now? */
export function canStart(remainingMs: number, reserveMs: number): boolean {
  return remainingMs > reserveMs;
}

/** Milliseconds a reconcile may run from now before its signal is aborted. */
export function reconcileAllowanceMs(remainingMs: number, reserveMs: number): number {
  return Math.max(0, remainingMs - reserveMs / 2);
}

/** Milliseconds from now until a reconcile that ignores its aborted signal is abandoned. */
export function abandonAfterMs(remainingMs: number, reserveMs: number): number {
  return Math.max(0, remainingMs - reserveMs / 4);
}

/** Milliseconds from now until the handler answers with what it has (unfinished keys failed). */
export function answerAfterMs(remainingMs: number, reserveMs: number): number {
  return Math.max(0, remainingMs - reserveMs / 10);
}

/**
 * Why a configured reserve cannot work with an invocation that starts with
 * `initialRemainingMs` (≈ the function's timeout), or undefined when it can. `source` names
 * where the reserve came from (`OPERLESS_BUDGET_RESERVE_MS` or the handler option). Pure.
 */
export function reserveProblem(initialRemainingMs: number, configuredMs: number | undefined, source: string): string | undefined {
  if (configuredMs === undefined || !Number.isFinite(initialRemainingMs)) return undefined;
  if (reserveFits(configuredMs, initialRemainingMs)) return undefined;
  return (
    `${source} is ${configuredMs} ms, at or above the ${Math.round(initialRemainingMs)} ms this invocation started with ` +
    "(the function's timeout): no reconcile could ever start and every record would be handed back to the queue forever. " +
    `Set ${source} well below the function's timeout (serverless.yml \`timeout\`), or unset it for the default ` +
    `(20% of the time, ${MIN_RESERVE_MS}–${MAX_RESERVE_MS} ms)`
  );
}

/** Can a reconcile ever start with this reserve in an invocation of `timeoutMs`? */
function reserveFits(reserveMs: number, timeoutMs: number): boolean {
  return reserveMs < timeoutMs;
}

/** A reconcile function as packaged: its name, `timeout` and `OPERLESS_BUDGET_RESERVE_MS` as written. */
export interface PackagedBudget {
  readonly name: string;
  /** Seconds; a string that is not a number (a `${param:…}` variable) cannot be checked. */
  readonly timeout: number | string;
  readonly reserve: string | undefined;
}

const RESERVE_VARIABLE = 'OPERLESS_BUDGET_RESERVE_MS';

/**
 * Why a packaged function's reserve can never work with its timeout — the configuration every
 * invocation would refuse (`reserveProblem`) or a reserve that is not a number (the handler
 * refuses that too) — naming the function and both values; undefined when it can work or a
 * value is a variable resolved only at deploy time. Pure.
 */
export function packagedReserveProblem(fn: PackagedBudget): string | undefined {
  const raw = fn.reserve?.trim();
  if (raw === undefined || raw === '' || raw.includes('${')) return undefined;
  const reserveMs = Number(raw);
  if (!Number.isFinite(reserveMs) || reserveMs < 0) {
    return `function "${fn.name}": ${RESERVE_VARIABLE} must be a non-negative number of milliseconds, got ${JSON.stringify(fn.reserve)}; every invocation would refuse it`;
  }
  const timeoutSeconds = typeof fn.timeout === 'number' ? fn.timeout : Number(fn.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) return undefined;
  if (reserveFits(reserveMs, timeoutSeconds * 1000)) return undefined;
  return (
    `function "${fn.name}": ${RESERVE_VARIABLE} is ${reserveMs} ms, at or above its timeout of ${timeoutSeconds} s (serverless.yml \`timeout\`): ` +
    'no reconcile could ever start and every record would be handed back to the queue forever (every invocation refuses it). ' +
    `Set ${RESERVE_VARIABLE} well below ${timeoutSeconds * 1000} ms, or unset it for the default (20% of the time, ${MIN_RESERVE_MS}–${MAX_RESERVE_MS} ms)`
  );
}

/** The problems of every reconcile function (one with an SQS event) of a serverless.yml, as `parseServerlessYaml` reads them. Pure. */
export function packagedReserveProblems(
  functions: readonly { name: string; sqs: boolean; timeout: number | string; environment: Readonly<Record<string, string>> }[],
): string[] {
  return functions
    .filter((fn) => fn.sqs)
    .flatMap((fn) => packagedReserveProblem({ name: fn.name, timeout: fn.timeout, reserve: fn.environment[RESERVE_VARIABLE] }) ?? []);
}
