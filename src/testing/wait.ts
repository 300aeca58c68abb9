/**
 * `waitUntil`: poll a condition against real components until it holds, or fail saying what
 * was awaited, for how long, and the last error the check threw (a check that throws is
 * retried: the component may simply not be ready yet). For tests, benchmarks and tools.
 */
export interface WaitOptions {
  /** Give up after this long (default 60 s). */
  readonly timeoutMs?: number;
  /** Pause between checks (default 250 ms). */
  readonly intervalMs?: number;
  /** Appended to the timeout error, e.g. the tail of a component's log. */
  readonly context?: () => string;
}

export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, options: WaitOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const intervalMs = options.intervalMs ?? 250;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const lastError = last ? ` (last error: ${last instanceof Error ? last.message : String(last)})` : '';
  const context = options.context ? `\n${options.context()}` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}${lastError}${context}`);
}
