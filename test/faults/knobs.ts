/**
 * The fault suite's knobs: the `OPERLESS_FAULTS_*` environment variables, read and validated
 * in one place.
 *
 * Guarantees: a knob that is set is either used as given or refused with an error naming the
 * variable, the value and what it must be — never silently replaced by a default or shrunk to
 * a value that makes a case vacuous (a zero-length broker outage, a "burst" of one object).
 * An `OPERLESS_FAULTS_*` variable that is not a knob (a typo) is refused too, so a run that
 * was meant to be smaller or longer does not quietly run the defaults. Pure: takes the
 * environment as an argument.
 */
import { asOrdering, ORDERINGS, type Ordering } from '../../src/contract/ordering.ts';

export interface FaultKnobs {
  /** Caps the objects per case (`OPERLESS_FAULTS_OBJECTS`); undefined: each case's default. */
  readonly objects: number | undefined;
  /** How long the broker is down in the broker outage case (`OPERLESS_FAULTS_BROKER_OUTAGE_MS`). */
  readonly brokerOutageMs: number;
  /** How long the broker is blackholed in the blackhole case (`OPERLESS_FAULTS_BLACKHOLE_MS`). */
  readonly blackholeMs: number;
  /** A directory that keeps every process's output (`OPERLESS_FAULTS_LOGS`); undefined: none. */
  readonly logDir: string | undefined;
  /**
   * The one ordering the cases that run in both orderings run in (`OPERLESS_FAULTS_ORDERING`:
   * `unordered` or `per-key`); undefined: both. Cases of one ordering only are not affected.
   */
  readonly ordering: Ordering | undefined;
}

export const DEFAULT_BROKER_OUTAGE_MS = 30_000;
export const DEFAULT_BLACKHOLE_MS = 25_000;

interface IntegerKnob {
  readonly min: number;
  readonly max: number;
  /** Why values outside [min, max] are refused. */
  readonly why: string;
}

/**
 * Fewer than 10 objects would make cases vacuous: the two-invocations case reconciles 10 hot
 * keys, and the SIGKILL case needs a burst still going on when it kills.
 */
export const OBJECTS_KNOB: IntegerKnob = {
  min: 10,
  max: 5000,
  why: 'fewer than 10 objects leave no burst to kill the forwarder in and fewer keys than the two-invocations case reconciles',
};
/**
 * Shorter than 5 s and the forwarder (send backoff up to 3 s) and the runners would hardly
 * retry inside the outage; longer than 5 minutes outlasts the case's own convergence timeout.
 */
export const BROKER_OUTAGE_KNOB: IntegerKnob = {
  min: 5000,
  max: 300_000,
  why: "a shorter outage leaves the forwarder's retries (backoff up to 3 s) and the runners' receive retries untested; a longer one outlasts the case's timeout",
};

/**
 * Shorter than 5 s and a stalled request (the case's send.requestTimeoutMs is 3 s) would hardly
 * time out inside the blackhole; longer than 5 minutes outlasts the case's own timeout.
 */
export const BLACKHOLE_KNOB: IntegerKnob = {
  min: 5000,
  max: 300_000,
  why: "a shorter blackhole ends before the stalled requests time out (3 s in the case), so it tests nothing; a longer one outlasts the case's timeout",
};

const KNOWN = [
  'OPERLESS_FAULTS_OBJECTS',
  'OPERLESS_FAULTS_BROKER_OUTAGE_MS',
  'OPERLESS_FAULTS_BLACKHOLE_MS',
  'OPERLESS_FAULTS_LOGS',
  'OPERLESS_FAULTS_ORDERING',
] as const;

function integer(env: Readonly<Record<string, string | undefined>>, name: string, knob: IntegerKnob): number | undefined {
  const raw = env[name];
  if (raw === undefined) return undefined;
  const value = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < knob.min || value > knob.max) {
    throw new Error(
      `${name}=${JSON.stringify(raw)} is refused: it must be an integer from ${knob.min} to ${knob.max} (${knob.why}). Unset it for the default.`,
    );
  }
  return value;
}

/** Reads and validates every `OPERLESS_FAULTS_*` knob; throws naming the variable on a bad value. */
export function faultKnobs(env: Readonly<Record<string, string | undefined>> = process.env): FaultKnobs {
  const unknown = Object.keys(env).filter((k) => k.startsWith('OPERLESS_FAULTS_') && !(KNOWN as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw new Error(`${unknown.join(', ')}: not a knob of the fault suite (known: ${KNOWN.join(', ')}); a misspelt knob would silently run the defaults`);
  const logDir = env.OPERLESS_FAULTS_LOGS;
  if (logDir !== undefined && logDir.trim() === '')
    throw new Error("OPERLESS_FAULTS_LOGS is set but empty: give a directory to keep every process's output in, or unset it");
  const rawOrdering = env.OPERLESS_FAULTS_ORDERING;
  const ordering = rawOrdering === undefined ? undefined : asOrdering(rawOrdering);
  if (rawOrdering !== undefined && ordering === undefined) {
    throw new Error(
      `OPERLESS_FAULTS_ORDERING=${JSON.stringify(rawOrdering)} is refused: it must be one of ${ORDERINGS.join(', ')} (the one ordering to run the cases of both orderings in). Unset it to run them in both.`,
    );
  }
  return {
    objects: integer(env, 'OPERLESS_FAULTS_OBJECTS', OBJECTS_KNOB),
    brokerOutageMs: integer(env, 'OPERLESS_FAULTS_BROKER_OUTAGE_MS', BROKER_OUTAGE_KNOB) ?? DEFAULT_BROKER_OUTAGE_MS,
    blackholeMs: integer(env, 'OPERLESS_FAULTS_BLACKHOLE_MS', BLACKHOLE_KNOB) ?? DEFAULT_BLACKHOLE_MS,
    logDir,
    ordering,
  };
}
