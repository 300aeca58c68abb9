/**
 * fast-check run parameters shared by property tests: a failure can always be replayed.
 * `OPERLESS_FC_SEED` (and `OPERLESS_FC_PATH`) replay a reported failure; `OPERLESS_FC_RUNS`
 * overrides the number of runs. fast-check's own failure report names the seed and path; the
 * reporter adds one line with the environment to set.
 */
import fc from 'fast-check';

export function fcParams<T>(name: string, defaultRuns: number): fc.Parameters<T> {
  const seedText = process.env.OPERLESS_FC_SEED;
  const seed = seedText !== undefined && seedText !== '' ? Number(seedText) : Math.floor(Math.random() * 0x7fffffff);
  const runs = Number(process.env.OPERLESS_FC_RUNS);
  const path = process.env.OPERLESS_FC_PATH;
  return {
    seed,
    numRuns: Number.isInteger(runs) && runs > 0 ? runs : defaultRuns,
    ...(path ? { path } : {}),
    reporter: (details) => {
      if (!details.failed) return;
      const replay = `OPERLESS_FC_SEED=${details.seed}${details.counterexamplePath ? ` OPERLESS_FC_PATH=${details.counterexamplePath}` : ''}`;
      throw new Error(`${name}: property failed; replay with ${replay}\n${fc.defaultReportMessage(details)}`);
    },
  };
}

/** Like `fcParams`, for `fc.assert` of an async property. */
export function fcAsyncParams<T>(name: string, defaultRuns: number): fc.Parameters<T> {
  const params = fcParams<T>(name, defaultRuns);
  const { reporter, ...rest } = params;
  return { ...rest, asyncReporter: async (details) => reporter?.(details) };
}
