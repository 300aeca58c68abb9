/**
 * fast-check parameters for property tests: `OPERLESS_FC_SEED` replays a run (the same seed
 * generates the same cases, so the failure and its shrinking come back), and a failure's
 * message ends with the line to replay it.
 */
import fc from 'fast-check';

export function replayable<T>(extra: fc.Parameters<T> = {}): fc.Parameters<T> {
  const raw = process.env.OPERLESS_FC_SEED;
  const seed = raw !== undefined && raw !== '' ? Number(raw) : undefined;
  return {
    ...extra,
    ...(seed !== undefined && Number.isInteger(seed) ? { seed } : {}),
    reporter(details) {
      if (details.failed) throw new Error(`${fc.defaultReportMessage(details)}\nreplay with: OPERLESS_FC_SEED=${details.seed}`);
    },
  };
}
