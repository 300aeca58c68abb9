/**
 * Tracing settings from the standard OpenTelemetry environment variables (the SDK
 * configuration spec's names), read by the forwarder at start and by a function at its first
 * invocation (observability/otel-start.ts). Tracing is on when an exporter is asked for —
 * `OTEL_TRACES_EXPORTER` other than `none`, or an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) — and `OTEL_SDK_DISABLED` is not `true`; otherwise it
 * is off and no SDK is loaded.
 *
 * Read: `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER` (`otlp`, `console`, `none`; a list),
 * `OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT`, `_PROTOCOL` (`http/protobuf` by default, `http/json`),
 * `_HEADERS`, `_TIMEOUT`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_TRACES_SAMPLER` (+ `_ARG`), `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_EXPORT_TIMEOUT`. A
 * traces-specific variable wins over the general one, as the spec says.
 *
 * Guarantees: pure (the environment is an argument) and never throws; a value it cannot use
 * is a problem naming the variable and what it accepts (never a silent fallback), and every
 * problem is reported, not just the first. What it does not support (`grpc`, `zipkin`, the
 * `jaeger_remote` sampler…) is refused by name.
 */

export type TracesExporterKind = 'otlp' | 'console';
export type OtlpProtocol = 'http/protobuf' | 'http/json';
export type SamplerName = 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

export interface TracingSettings {
  readonly exporters: readonly TracesExporterKind[];
  /** The traces URL (`…/v1/traces`), when `otlp` is among the exporters. */
  readonly otlpUrl: string;
  readonly protocol: OtlpProtocol;
  readonly headers: Readonly<Record<string, string>>;
  readonly exportTimeoutMs: number;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerName;
  /** The ratio of the `traceidratio` samplers (1 by default). */
  readonly samplerRatio: number;
  /** How long finished spans wait before a scheduled export (a function also flushes before it answers). */
  readonly scheduleDelayMs: number;
}

/** A variable whose value cannot be used, and why. */
export interface TracingProblem {
  readonly variable: string;
  readonly error: string;
}

export type TracingConfig =
  | { readonly enabled: false }
  | { readonly enabled: true; readonly settings: TracingSettings }
  | { readonly enabled: 'invalid'; readonly problems: readonly TracingProblem[] };

const EXPORTERS = ['otlp', 'console', 'none'] as const;
const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];
const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];
/** The spec's default OTLP/HTTP endpoint. */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';

type Env = Readonly<Record<string, string | undefined>>;

/** One sentence per problem, each naming its variable: what a process prints before it refuses to start. */
export function tracingProblemsMessage(problems: readonly TracingProblem[]): string {
  return `tracing is misconfigured: ${problems.map((p) => `${p.variable}: ${p.error}`).join('; ')}`;
}

/**
 * The tracing settings `env` asks for. `defaultServiceName` is used when neither
 * `OTEL_SERVICE_NAME` nor a `service.name` in `OTEL_RESOURCE_ATTRIBUTES` names one.
 */
export function tracingConfigFromEnv(env: Env, defaultServiceName: string): TracingConfig {
  const problems: TracingProblem[] = [];
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const disabled = read('OTEL_SDK_DISABLED');
  if (disabled !== undefined && !['true', 'false'].includes(disabled.toLowerCase()))
    problems.push({ variable: 'OTEL_SDK_DISABLED', error: `must be true or false, got ${JSON.stringify(disabled)}` });
  if (disabled?.toLowerCase() === 'true') return { enabled: false };

  const exporters = exportersFrom(read('OTEL_TRACES_EXPORTER'), problems);
  const endpointVariable =
    read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined
      ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
      : read('OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined
        ? 'OTEL_EXPORTER_OTLP_ENDPOINT'
        : undefined;
  const wanted = exporters ?? (endpointVariable ? ['otlp' as const] : []);
  if (wanted.length === 0 && problems.length === 0) return { enabled: false };

  const otlpUrl = otlpUrlFrom(read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'), read('OTEL_EXPORTER_OTLP_ENDPOINT'), problems);
  const protocol = protocolFrom(env, read, problems);
  const headers = { ...listFrom('OTEL_EXPORTER_OTLP_HEADERS', read, problems), ...listFrom('OTEL_EXPORTER_OTLP_TRACES_HEADERS', read, problems) };
  const timeoutVariable = read('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT' : 'OTEL_EXPORTER_OTLP_TIMEOUT';
  const exportTimeoutMs = millisFrom(timeoutVariable, read(timeoutVariable), 10_000, problems);
  const resourceAttributes = listFrom('OTEL_RESOURCE_ATTRIBUTES', read, problems);
  const serviceName = read('OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? defaultServiceName;
  const sampler = samplerFrom(read('OTEL_TRACES_SAMPLER'), problems);
  const samplerRatio = ratioFrom(sampler, read('OTEL_TRACES_SAMPLER_ARG'), problems);
  const scheduleDelayMs = millisFrom('OTEL_BSP_SCHEDULE_DELAY', read('OTEL_BSP_SCHEDULE_DELAY'), 5000, problems);
  const bspTimeout = read('OTEL_BSP_EXPORT_TIMEOUT');
  const exportTimeout =
    bspTimeout === undefined ? exportTimeoutMs : Math.min(exportTimeoutMs, millisFrom('OTEL_BSP_EXPORT_TIMEOUT', bspTimeout, exportTimeoutMs, problems));
  if (problems.length > 0) return { enabled: 'invalid', problems };
  return {
    enabled: true,
    settings: {
      exporters: wanted,
      otlpUrl,
      protocol,
      headers,
      exportTimeoutMs: exportTimeout,
      serviceName,
      resourceAttributes,
      sampler,
      samplerRatio,
      scheduleDelayMs,
    },
  };
}

function exportersFrom(raw: string | undefined, problems: TracingProblem[]): TracesExporterKind[] | undefined {
  if (raw === undefined) return undefined;
  const names = raw
    .split(',')
    .map((n) => n.trim().toLowerCase())
    .filter((n) => n !== '');
  const unknown = names.filter((n) => !(EXPORTERS as readonly string[]).includes(n));
  if (unknown.length > 0) {
    problems.push({
      variable: 'OTEL_TRACES_EXPORTER',
      error: `${unknown.map((n) => JSON.stringify(n)).join(', ')} is not an exporter Operless ships (${EXPORTERS.join(', ')}); for another backend, send OTLP to a collector`,
    });
    return [];
  }
  if (names.includes('none')) return [];
  return [...new Set(names as TracesExporterKind[])];
}

function otlpUrlFrom(tracesEndpoint: string | undefined, endpoint: string | undefined, problems: TracingProblem[]): string {
  // The traces endpoint is used as is; the general one gets the signal's path appended (spec).
  const [variable, raw, append] =
    tracesEndpoint !== undefined
      ? ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint, false]
      : ['OTEL_EXPORTER_OTLP_ENDPOINT', endpoint ?? DEFAULT_OTLP_ENDPOINT, true];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push({ variable, error: `must be an http:// or https:// URL, got ${JSON.stringify(raw)}` });
    return '';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.push({ variable, error: `must be an http:// or https:// URL, got ${JSON.stringify(raw)}` });
    return '';
  }
  return append ? `${raw.replace(/\/+$/, '')}/v1/traces` : raw;
}

function protocolFrom(env: Env, read: (name: string) => string | undefined, problems: TracingProblem[]): OtlpProtocol {
  const variable = read('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const raw = read(variable);
  if (raw === undefined) return 'http/protobuf';
  if ((PROTOCOLS as readonly string[]).includes(raw)) return raw as OtlpProtocol;
  const why = raw === 'grpc' ? 'gRPC is not bundled (it would weigh on every cold start); a collector accepts OTLP/HTTP on port 4318' : 'unknown protocol';
  problems.push({ variable, error: `${why}: use ${PROTOCOLS.join(' or ')}, got ${JSON.stringify(env[variable])}` });
  return 'http/protobuf';
}

/** A `key=value,key2=value2` list (values percent-decoded), as headers and resource attributes are written. */
function listFrom(variable: string, read: (name: string) => string | undefined, problems: TracingProblem[]): Record<string, string> {
  const raw = read(variable);
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const item of raw.split(',')) {
    if (item.trim() === '') continue;
    const at = item.indexOf('=');
    const key = at > 0 ? item.slice(0, at).trim() : '';
    if (!key) {
      problems.push({ variable, error: `must be a list of key=value pairs separated by commas, got ${JSON.stringify(item.trim())}` });
      continue;
    }
    try {
      out[key] = decodeURIComponent(item.slice(at + 1).trim());
    } catch {
      problems.push({ variable, error: `the value of ${JSON.stringify(key)} is not valid percent-encoding` });
    }
  }
  return out;
}

function millisFrom(variable: string, raw: string | undefined, fallback: number, problems: TracingProblem[]): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value <= 0) {
    problems.push({ variable, error: `must be a positive whole number of milliseconds, got ${JSON.stringify(raw)}` });
    return fallback;
  }
  return value;
}

function samplerFrom(raw: string | undefined, problems: TracingProblem[]): SamplerName {
  if (raw === undefined) return 'parentbased_always_on';
  const name = raw.toLowerCase();
  if ((SAMPLERS as readonly string[]).includes(name)) return name as SamplerName;
  problems.push({ variable: 'OTEL_TRACES_SAMPLER', error: `${JSON.stringify(raw)} is not a sampler Operless supports (${SAMPLERS.join(', ')})` });
  return 'parentbased_always_on';
}

function ratioFrom(sampler: SamplerName, raw: string | undefined, problems: TracingProblem[]): number {
  if (raw === undefined || !sampler.endsWith('traceidratio')) return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    problems.push({ variable: 'OTEL_TRACES_SAMPLER_ARG', error: `must be a number from 0 to 1 (the ratio of traces sampled), got ${JSON.stringify(raw)}` });
    return 1;
  }
  return value;
}
