/**
 * Reading a few values from a Prometheus text exposition (the forwarder's `/metrics`): enough
 * for `operless status`, not a full parser. Each metric name maps to the sum of its samples
 * over all label sets (so a counter with labels reads as its total).
 *
 * Guarantees: never throws; comment, blank and malformed lines are skipped; histogram and
 * summary series (`_bucket`, `_sum`, `_count`) keep their own names.
 */

export function sumMetrics(text: string): Map<string, number> {
  const totals = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(\s+\d+)?$/.exec(line);
    if (!match) continue;
    const value = Number(match[3]);
    if (Number.isNaN(value)) continue;
    const name = match[1]!;
    totals.set(name, (totals.get(name) ?? 0) + value);
  }
  return totals;
}

/** The named metrics out of `totals`, leaving out those the exposition did not have. */
export function pickMetrics(totals: ReadonlyMap<string, number>, names: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of names) {
    const value = totals.get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}
