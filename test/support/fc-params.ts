/**
 * fast-check run parameters shared by property tests: a failure can always be replayed.
 * `OPERLESS_FC_SEED` (and `OPERLESS_FC_PATH`) replay a reported failure; `OPERLESS_FC_RUNS`
 * overrides the number of runs. fast-check's own failure report names the seed and path; the
 * reporter adds one line with the environment to set.
 */
import fc from 'fast-check';

/** The seed of this run: `OPERLESS_FC_SEED`, else a fresh one (print it with any failure). */
export function fcSeed(): number {
  const seedText = process.env.OPERLESS_FC_SEED;
  return seedText !== undefined && seedText !== '' ? Number(seedText) : Math.floor(Math.random() * 0x7fffffff);
}

/** The number of runs: `OPERLESS_FC_RUNS`, else `defaultRuns`. */
export function fcRuns(defaultRuns: number): number {
  const runs = Number(process.env.OPERLESS_FC_RUNS);
  return Number.isInteger(runs) && runs > 0 ? runs : defaultRuns;
}

export function fcParams<T>(name: string, defaultRuns: number): fc.Parameters<T> {
  const path = process.env.OPERLESS_FC_PATH;
  return {
    seed: fcSeed(),
    numRuns: fcRuns(defaultRuns),
    ...(path ? { path } : {}),
    reporter: (details) => {
      if (!details.failed) return;
      const replay = `OPERLESS_FC_SEED=${details.seed}${details.counterexamplePath ? ` OPERLESS_FC_PATH=${details.counterexamplePath}` : ''}`;
      throw new Error(`${name}: property failed; replay with ${replay}\n${fc.defaultReportMessage(details)}`);
    },
  };
}
