/**
 * Summary statistics for benchmark samples: percentiles (nearest rank), the median of
 * repeated runs with its spread, and ratios. Pure.
 */

export interface Spread {
  /** Median of the runs. */
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: number;
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when empty. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function median(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function spread(runs: readonly number[]): Spread {
  const finite = runs.filter(Number.isFinite);
  return { median: median(finite), min: Math.min(...finite), max: Math.max(...finite), runs: finite.length };
}

/** a / b, NaN when either is not a positive finite number. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : Number.NaN;
}

/** Rounds for tables: 3 significant digits, at most 2 decimals for small numbers. */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return Number(value.toFixed(digits));
}
