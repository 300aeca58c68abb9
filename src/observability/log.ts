/**
 * Structured JSON logging: one JSON object per line on stdout (what CloudWatch Logs and
 * every log shipper index), with the fields bound by `child()` on every line. The reconcile
 * runtime binds the object key and a reconcile id, so every line of a reconcile carries them.
 *
 * `OPERLESS_LOG_FORMAT=pretty` (or `format: 'pretty'`) prints the same records as one short
 * human-readable line each, for the local loop (`npm start`); JSON stays the default.
 *
 * Guarantees: never throws (unserialisable values are replaced), never logs a field named
 * like a credential (`token`, `password`, `secret`, `authorization`: replaced by "[redacted]").
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Readonly<Record<string, unknown>>;

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const REDACT = /^(token|password|secret|authorization|bearertoken|credentials?)$/i;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** `json` (default, or OPERLESS_LOG_FORMAT) or `pretty`. */
  readonly format?: LogFormat;
  readonly fields?: LogFields;
  /** Where lines go; defaults to stdout. Tests capture lines here. */
  readonly write?: (line: string) => void;
  readonly now?: () => Date;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const envLevel = process.env.OPERLESS_LOG_LEVEL?.toLowerCase();
  const level: LogLevel = options.level ?? (envLevel && envLevel in ORDER ? (envLevel as LogLevel) : 'info');
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const now = options.now ?? (() => new Date());
  const format: LogFormat = options.format ?? (process.env.OPERLESS_LOG_FORMAT === 'pretty' ? 'pretty' : 'json');
  const render = format === 'pretty' ? safePretty : serialise;
  const make = (bound: LogFields): Logger => {
    const emit = (lvl: LogLevel, message: string, fields?: LogFields) => {
      if (ORDER[lvl] < ORDER[level]) return;
      write(render({ time: now().toISOString(), level: lvl, msg: message, ...bound, ...fields }));
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make(options.fields ?? {});
}

/** A logger that drops everything (for library defaults and quiet tests). */
export const silentLogger: Logger = createLogger({ write: () => {} });

function safePretty(record: Record<string, unknown>): string {
  try {
    return prettyLine(record);
  } catch {
    return serialise(record);
  }
}

function serialise(record: Record<string, unknown>): string {
  try {
    return JSON.stringify(record, replacer);
  } catch {
    return JSON.stringify({ time: record.time, level: record.level, msg: record.msg, logError: 'unserialisable fields' });
  }
}

const PRETTY_FIRST = ['component', 'key', 'result'];
const PRETTY_SKIP = new Set(['time', 'level', 'msg', 'reconcileId', 'cluster']);

/** `12:00:01 INFO  [runtime] reconciled key=Memcached/default/x result=success durationMs=12` */
export function prettyLine(record: Record<string, unknown>): string {
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '';
  const level = String(record.level ?? '')
    .toUpperCase()
    .padEnd(5);
  const component = record.component ? `[${String(record.component)}] ` : '';
  const keys = [
    ...PRETTY_FIRST.filter((k) => k in record && k !== 'component'),
    ...Object.keys(record).filter((k) => !PRETTY_FIRST.includes(k) && !PRETTY_SKIP.has(k)),
  ];
  const fields = keys
    .filter((k) => record[k] !== undefined)
    .map((k) => {
      const value = JSON.parse(JSON.stringify(record[k], replacer) ?? 'null') as unknown;
      return `${k}=${typeof value === 'string' && !/\s/.test(value) ? value : JSON.stringify(value)}`;
    });
  return `${time} ${level} ${component}${String(record.msg ?? '')}${fields.length ? `  ${fields.join(' ')}` : ''}`;
}

function replacer(key: string, value: unknown): unknown {
  if (key && REDACT.test(key)) return '[redacted]';
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** The message of anything thrown, for logs and error reports. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}
