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
  // Beside the faults: the security suite is mostly renders and lints, which use the CPU the
  // faults lane leaves idle while it waits, and the servers lane is the longer one.
  security: { dir: 'test/security', concurrency: 1, timeoutMs: 600_000, lane: 'faults' },
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
    return [
      {
        name: suites.join(', '),
        files: laneFiles,
        concurrency: Math.min(...suites.map((name) => SUITES[name]!.concurrency)),
        timeoutMs: Math.max(...suites.map((name) => SUITES[name]!.timeoutMs)),
      },
    ];
  });
  return lanes.length > 1 ? lanes.map((lane) => ({ ...lane, concurrency: 1 })) : lanes;
}

/**
 * What a failed lane's spec report says failed, for the end of the run: the reporter's
 * "failing tests" section (each failure with its location and error), at most `maxLines`
 * lines; without that section (a file that crashed before reporting), the report's last lines.
 */
export function failureSummary(report: string, maxLines = 150): string {
  const start = report.lastIndexOf('failing tests:');
  const fromSection = start >= 0;
  const lines = (fromSection ? report.slice(start) : report).trimEnd().split('\n');
  const kept = fromSection ? lines.slice(0, maxLines) : lines.slice(-Math.min(40, maxLines));
  const head = fromSection ? '' : 'no "failing tests" section in the report (a test file may have crashed); its last lines:\n';
  const cut = fromSection && lines.length > maxLines ? `\n… ${lines.length - maxLines} more lines in the lane's report above` : '';
  return `${head}${kept.join('\n')}${cut}`;
}
