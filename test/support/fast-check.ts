/**
 * fast-check, fcParameters: every property a test checks runs with `fcParameters()`, so a failure
 * prints the seed and the counterexample path, and the run can be replayed exactly.
 *
 *   OPERLESS_FC_SEED=<seed> [OPERLESS_FC_PATH=<path>] node --test <the test file>
 *
 * Guarantees: on failure the thrown error carries fast-check's own report —
 * counterexample, shrunk value, seed, path — followed by the replay line above with the
 * seed and path filled in; with `OPERLESS_FC_SEED` set every property of the run uses that
 * seed (and `OPERLESS_FC_PATH`, when given, goes straight to the counterexample); a seed or
 * path that is not well formed is refused, naming the variable, rather than silently
 * running random cases. Works for synchronous and asynchronous properties alike.
 */
import fc from 'fast-check';

export interface Replay {
  readonly seed?: number;
  readonly path?: string;
}

/** The replay settings from the environment (pure: takes the environment). */
export function replayFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): Replay {
  const rawSeed = env.OPERLESS_FC_SEED;
  const rawPath = env.OPERLESS_FC_PATH;
  let seed: number | undefined;
  if (rawSeed !== undefined) {
    seed = /^\s*-?\d+\s*$/.test(rawSeed) ? Number(rawSeed) : Number.NaN;
    if (!Number.isSafeInteger(seed))
      throw new Error(`OPERLESS_FC_SEED=${JSON.stringify(rawSeed)} is refused: it must be the integer seed a failed run printed`);
  }
  if (rawPath !== undefined) {
    if (seed === undefined) throw new Error('OPERLESS_FC_PATH is set without OPERLESS_FC_SEED: a path only means something for the seed it was printed with');
    if (!/^\d+(:\d+)*$/.test(rawPath.trim()))
      throw new Error(
        `OPERLESS_FC_PATH=${JSON.stringify(rawPath)} is refused: it must be the counterexample path a failed run printed (digits separated by ':')`,
      );
  }
  return { ...(seed !== undefined ? { seed } : {}), ...(rawPath !== undefined ? { path: rawPath.trim() } : {}) };
}

/** The line that replays a failed run. */
export function replayLine(seed: number, path: string | null | undefined): string {
  return `replay: OPERLESS_FC_SEED=${seed}${path ? ` OPERLESS_FC_PATH=${path}` : ''} node --test <this test file>`;
}

/**
 * Parameters for `fc.assert`: the caller's (numRuns, …) plus the replay settings from the
 * environment and a reporter that prints the seed and path of a failure.
 */
export function fcParameters<T>(params: fc.Parameters<T> = {}): fc.Parameters<T> {
  const replay = replayFromEnv();
  return {
    ...params,
    ...replay,
    reporter: (details: fc.RunDetails<T>) => {
      if (!details.failed) return;
      throw new Error(`${fc.defaultReportMessage(details)}\n${replayLine(details.seed, details.counterexamplePath)}`, { cause: details.errorInstance });
    },
  };
}
