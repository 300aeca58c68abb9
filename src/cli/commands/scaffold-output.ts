/**
 * What `operless init` and `operless create api` share around the scaffolder: a refused input
 * (`ScaffoldError`) answered as a usage error, so the CLI prints it without a stack trace, and
 * the report after scaffolding — a headline, one line per file written, what to do next.
 */
import { UsageError, type OptionSpec } from '../args.ts';
import { describeChanges, ScaffoldError } from '../../scaffold/index.ts';
import type { AppliedChange } from '../../scaffold/files.ts';

/** `--json`: the scaffold commands' machine-readable result. */
export const JSON_RESULT_OPTION: OptionSpec = {
  json: { type: 'boolean', description: 'Print the result as JSON' },
};

/** Runs the scaffolder; a `ScaffoldError` (bad names, files in the way) becomes a `UsageError` with its message. */
export function runScaffold<T>(scaffold: () => T): T {
  try {
    return scaffold();
  } catch (err) {
    if (err instanceof ScaffoldError) throw new UsageError(err.message);
    throw err;
  }
}

/** The text printed after scaffolding: `headline`, the files, then `Next:` and the `next` steps. */
export function scaffoldReport(headline: string, changes: readonly AppliedChange[], next: readonly string[]): string {
  return [headline, ...describeChanges(changes), '', 'Next:', ...next, ''].join('\n');
}
