/**
 * Bounded concurrency: run `worker` over `items` with at most `limit` in flight, in order of
 * the items. Workers must not throw (the handler wraps every key in its own error boundary);
 * if one does anyway, the rejection is returned in its slot and the others still run.
 */
export async function mapBounded<I, O>(items: readonly I[], limit: number, worker: (item: I, index: number) => Promise<O>): Promise<PromiseSettledResult<O>[]> {
  const results: PromiseSettledResult<O>[] = new Array(items.length);
  let next = 0;
  const lanes = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = { status: 'fulfilled', value: await worker(items[index] as I, index) };
      } catch (reason) {
        results[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return results;
}
