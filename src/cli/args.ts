/**
 * Command-line parsing for `operless`: a thin layer over `node:util` parseArgs that turns
 * every mistake into a `UsageError` naming the problem and pointing at `--help`, so the CLI
 * never answers bad input with a stack trace.
 */
import { parseArgs } from 'node:util';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; multiple?: boolean; default?: string | boolean; description: string; placeholder?: string }
>;

export interface CommandSpec {
  /** e.g. `dlq redrive` */
  readonly name: string;
  readonly summary: string;
  /** Usage line after the command name, e.g. `<kind>/<namespace>/<name> [options]`. */
  readonly usage: string;
  readonly options: OptionSpec;
  readonly examples?: readonly string[];
  readonly details?: string;
}

export interface ParsedArgs {
  readonly values: Record<string, string | boolean | string[] | undefined>;
  readonly positionals: string[];
}

export function parseCommandArgs(spec: CommandSpec, argv: string[]): ParsedArgs {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, option] of Object.entries(spec.options)) {
    options[name] = { type: option.type, ...(option.short ? { short: option.short } : {}), ...(option.multiple ? { multiple: true } : {}) };
  }
  options.help = { type: 'boolean', short: 'h' };
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    const values: Record<string, string | boolean | string[] | undefined> = {};
    for (const [name, option] of Object.entries(spec.options)) {
      values[name] = (parsed.values as Record<string, string | boolean | string[] | undefined>)[name] ?? option.default;
    }
    values.help = parsed.values.help as boolean | undefined;
    return { values, positionals: parsed.positionals };
  } catch (err) {
    // One line, one final period: Node's parseArgs messages can span lines and end in '.'.
    const message = (err as Error).message
      .replace(/\. To specify a positional argument.*$/s, '')
      .replace(/\s*\n\s*/g, ' ')
      .replace(/\.\s*$/, '');
    throw new UsageError(`${message}. Run \`operless ${spec.name} --help\` for usage.`);
  }
}

export function helpText(spec: CommandSpec): string {
  const lines = [`operless ${spec.name} — ${spec.summary}`, '', `Usage: operless ${spec.name} ${spec.usage}`.trimEnd()];
  if (spec.details) lines.push('', spec.details);
  const entries = Object.entries(spec.options);
  if (entries.length > 0) {
    lines.push('', 'Options:');
    const rows = entries.map(([name, o]) => {
      const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` <${o.placeholder ?? 'value'}>` : ''}`;
      const def = o.default !== undefined && o.default !== false ? ` (default: ${String(o.default)})` : '';
      return [flag, `${o.description}${def}`] as const;
    });
    rows.push(['-h, --help', 'Show this help']);
    const width = Math.max(...rows.map(([f]) => f.length)) + 2;
    for (const [flag, text] of rows) lines.push(`  ${flag.padEnd(width)}${text}`);
  }
  if (spec.examples?.length) {
    lines.push('', 'Examples:', ...spec.examples.map((e) => `  ${e}`));
  }
  return `${lines.join('\n')}\n`;
}

export function stringOption(values: ParsedArgs['values'], name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

export function intOption(values: ParsedArgs['values'], name: string, min: number, max: number): number | undefined {
  const raw = stringOption(values, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}
