/**
 * What tools need from a project's `serverless.yml`: its functions (handler module, export,
 * whether an SQS event feeds it) and the `custom.esbuild` settings. One reader for the local
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

export interface EsbuildSettings {
  minify?: boolean;
  sourcemap?: boolean;
  target?: string;
  platform?: 'node';
  format?: 'esm' | 'cjs';
  outputFileExtension?: string;
  mainFields?: string[];
  exclude?: string[];
  banner?: Record<string, string>;
  /** A module exporting esbuild plugins, relative to the service directory (serverless-esbuild's `plugins`). */
  plugins?: string;
}

export interface ServerlessConfig {
  readonly functions: readonly ServerlessFunction[];
  readonly esbuild: EsbuildSettings;
}

interface RawFunction {
  handler?: unknown;
  events?: unknown[];
}

export function parseServerlessYaml(text: string): ServerlessConfig {
  const doc = parse(text, { customTags: (tags) => tags, logLevel: 'silent' }) as {
    functions?: Record<string, RawFunction>;
    custom?: { esbuild?: EsbuildSettings };
  } | null;
  const functions = Object.entries(doc?.functions ?? {}).map(([name, fn]): ServerlessFunction => {
    const handler = typeof fn?.handler === 'string' ? fn.handler : '';
    const dot = handler.lastIndexOf('.');
    if (dot <= 0) {
      throw new Error(`serverless.yml: function "${name}" has handler ${JSON.stringify(fn?.handler)}; expected <path>.<export>, e.g. functions/${name}.handler`);
    }
    const sqs = (fn.events ?? []).some((e) => typeof e === 'object' && e !== null && 'sqs' in e);
    return { name, module: `${handler.slice(0, dot)}.ts`, exportName: handler.slice(dot + 1), sqs };
  });
  return { functions, esbuild: doc?.custom?.esbuild ?? {} };
}
