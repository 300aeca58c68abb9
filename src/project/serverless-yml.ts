/**
 * What tools need from a project's `serverless.yml`: its functions (handler module, export,
 * whether an SQS event feeds it, timeout, environment) and the `custom.esbuild` settings. One reader for the local
 * loop (which functions to run), the bundler (what to build, how) and scaffolding.
 *
 * CloudFormation short tags (`!Ref`, `!GetAtt` …) are kept as plain values: nothing here
 * needs to resolve them. A handler that is not `<path>.<export>` is an error naming the function.
 */
import { parse } from 'yaml';

export interface ServerlessFunction {
  readonly name: string;
  /** Source module of the handler, e.g. `functions/memcached.ts`. */
  readonly module: string;
  readonly exportName: string;
  /** True when an `sqs` event feeds it (a reconcile function). */
  readonly sqs: boolean;
}

/** How Lambda runs a function: what the time budget depends on. */
export interface FunctionRuntime {
  readonly name: string;
  /** True when an `sqs` event feeds it (a reconcile function). */
  readonly sqs: boolean;
  /**
   * Its timeout in seconds: the function's `timeout`, else `provider.timeout`, else the
   * framework's default (`DEFAULT_TIMEOUT_SECONDS`); a variable (`${param:…}`) stays as written.
   */
  readonly timeout: number | string;
  /** Its environment: `provider.environment` with the function's own `environment` over it; scalars only, as written. */
  readonly environment: Readonly<Record<string, string>>;
}

/** The Serverless Framework's timeout of a function that sets none (AWS provider). */
export const DEFAULT_TIMEOUT_SECONDS = 6;

export interface EsbuildSettings {
  minify?: boolean;
  sourcemap?: boolean;
  target?: string;
  platform?: 'node';
  format?: 'esm' | 'cjs';
  /** esbuild code splitting (ESM only): lazily imported code goes into chunks beside the entry. */
  splitting?: boolean;
  /** Where the chunks go, relative to the entry's folder; `[entry]` is the entry's name (src/build/esbuild-plugins.ts). */
  chunkNames?: string;
  outputFileExtension?: string;
  mainFields?: string[];
  exclude?: string[];
  banner?: Record<string, string>;
  /** A module exporting esbuild plugins, relative to the service directory (serverless-esbuild's `plugins`). */
  plugins?: string;
}

export interface ServerlessConfig {
  readonly functions: readonly ServerlessFunction[];
  /** The same functions' timeout and environment, in the same order. */
  readonly runtimes: readonly FunctionRuntime[];
  readonly esbuild: EsbuildSettings;
}

interface RawFunction {
  handler?: unknown;
  events?: unknown[];
  timeout?: unknown;
  environment?: unknown;
}

export function parseServerlessYaml(text: string): ServerlessConfig {
  const doc = parse(text, { customTags: (tags) => tags, logLevel: 'silent' }) as {
    functions?: Record<string, RawFunction>;
    provider?: { timeout?: unknown; environment?: unknown };
    custom?: { esbuild?: EsbuildSettings };
  } | null;
  const providerTimeout = scalar(doc?.provider?.timeout);
  const providerEnvironment = scalars(doc?.provider?.environment);
  const entries = Object.entries(doc?.functions ?? {});
  const functions = entries.map(([name, fn]): ServerlessFunction => {
    const handler = typeof fn?.handler === 'string' ? fn.handler : '';
    const dot = handler.lastIndexOf('.');
    if (dot <= 0) {
      throw new Error(
        `serverless.yml: function "${name}" has handler ${JSON.stringify(fn?.handler)}; expected <path>.<export>, e.g. functions/${name}.handler`,
      );
    }
    return { name, module: `${handler.slice(0, dot)}.ts`, exportName: handler.slice(dot + 1), sqs: hasSqsEvent(fn) };
  });
  const runtimes = entries.map(
    ([name, fn]): FunctionRuntime => ({
      name,
      sqs: hasSqsEvent(fn),
      timeout: scalar(fn?.timeout) ?? providerTimeout ?? DEFAULT_TIMEOUT_SECONDS,
      environment: { ...providerEnvironment, ...scalars(fn?.environment) },
    }),
  );
  return { functions, runtimes, esbuild: doc?.custom?.esbuild ?? {} };
}

function hasSqsEvent(fn: RawFunction | undefined): boolean {
  return (fn?.events ?? []).some((e) => typeof e === 'object' && e !== null && 'sqs' in e);
}

/** A number as a number, a string as written; anything else (a tag, a mapping) is unknown. */
function scalar(value: unknown): number | string | undefined {
  return typeof value === 'number' || typeof value === 'string' ? value : undefined;
}

function scalars(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    const s = scalar(v);
    if (s !== undefined) out[key] = String(s);
  }
  return out;
}
