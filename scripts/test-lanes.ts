/**
 * Which test files run in which lane of `npm test` (scripts/test.ts): each suite's folder, its
 * files' concurrency and per-test timeout, and the lane it belongs to. Pure: the caller lists
 * the files.
 */
export type LaneName = 'servers' | 'faults' | 'unit';

export interface Suite {
  readonly dir: string;
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly lane: LaneName;
}

export const SUITES: Record<string, Suite> = {
  unit: { dir: 'test/unit', concurrency: 2, timeoutMs: 60_000, lane: 'unit' },
  integration: { dir: 'test/integration', concurrency: 1, timeoutMs: 300_000, lane: 'servers' },
  e2e: { dir: 'test/e2e', concurrency: 1, timeoutMs: 600_000, lane: 'servers' },
  faults: { dir: 'test/faults', concurrency: 1, timeoutMs: 900_000, lane: 'faults' },
  security: { dir: 'test/security', concurrency: 1, timeoutMs: 600_000, lane: 'servers' },
  soak: { dir: 'test/soak', concurrency: 1, timeoutMs: 900_000, lane: 'faults' },
};
/** The lanes in the order they are listed; the first one that has files reports live. */
export const LANES: readonly LaneName[] = ['servers', 'faults', 'unit'];

/** One `node --test` process: its files, how many at a time, the per-test timeout. */
export interface Lane {
  readonly name: string;
  readonly files: string[];
  readonly concurrency: number;
  readonly timeoutMs: number;
}

/**
 * The requested suites (known names) as lanes, in `LANES` order, leaving out lanes without
 * files; with `serial`, one lane of everything. A lane alone runs its files at the lowest
 * concurrency its suites ask for; lanes side by side run theirs one at a time (the unit suite's
 * process-spawning tests must not compete with themselves on top of two server lanes).
 */
export function planLanes(names: readonly string[], serial: boolean, filesOf: (dir: string) => string[]): Lane[] {
  const groups = serial ? [names] : LANES.map((lane) => names.filter((name) => SUITES[name]!.lane === lane));
  const lanes = groups.flatMap((suites) => {
    const laneFiles = suites.flatMap((name) => filesOf(SUITES[name]!.dir));
    if (laneFiles.length === 0) return [];
    return [{
      name: suites.join(', '),
      files: laneFiles,
      concurrency: Math.min(...suites.map((name) => SUITES[name]!.concurrency)),
      timeoutMs: Math.max(...suites.map((name) => SUITES[name]!.timeoutMs)),
    }];
  });
  return lanes.length > 1 ? lanes.map((lane) => ({ ...lane, concurrency: 1 })) : lanes;
}

