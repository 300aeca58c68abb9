/**
 * The OpenTelemetry SDK set up from `TracingSettings` (otel-config.ts): a tracer provider with
 * the sampler asked for, the resource (`service.name` and `OTEL_RESOURCE_ATTRIBUTES`), a batch
 * processor per exporter (OTLP over HTTP, protobuf or JSON; or the console), registered as the
 * global provider the OpenTelemetry API hands out. Only otel-start.ts imports this module, and
 * only when tracing is on, so a process without `OTEL_*` variables never loads the SDK.
 *
 * Trace ids start with the current time in seconds (8 hex digits), as AWS X-Ray requires of
 * the `Root` of a trace header: the `AWSTraceHeader`/`TraceHeader` Operless derives from a span
 * (observability/trace-context.ts) is then one X-Ray accepts, so SQS, EventBridge and Lambda link it.
 *
 * Guarantees: `flush` and `shutdown` never throw and never outlast the time they are given;
 * an exporter that fails is reported through the OpenTelemetry diagnostics, never into the
 * caller.
 */
import { trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  RandomIdGenerator,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type IdGenerator,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { TracingSettings } from './otel-config.ts';

/** A registered SDK: flush its finished spans, or shut it down (flushing first). */
export interface TracingSdk {
  flush(timeoutMs: number): Promise<void>;
  shutdown(timeoutMs: number): Promise<void>;
}

/** Trace ids whose first 8 hex digits are the epoch second (X-Ray's `Root=1-<time>-<random>`). */
export function timePrefixedIds(now: () => number = Date.now, random: IdGenerator = new RandomIdGenerator()): IdGenerator {
  return {
    generateTraceId: () =>
      Math.floor(now() / 1000)
        .toString(16)
        .padStart(8, '0')
        .slice(-8) + random.generateTraceId().slice(8),
    generateSpanId: () => random.generateSpanId(),
  };
}

function samplerOf(settings: TracingSettings): Sampler {
  switch (settings.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(settings.samplerRatio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.samplerRatio) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function exporterOf(kind: TracingSettings['exporters'][number], settings: TracingSettings): SpanExporter {
  if (kind === 'console') return new ConsoleSpanExporter();
  const options = { url: settings.otlpUrl, headers: { ...settings.headers }, timeoutMillis: settings.exportTimeoutMs };
  return settings.protocol === 'http/json' ? new OtlpJsonExporter(options) : new OtlpProtobufExporter(options);
}

async function bounded(work: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, timeoutMs)))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Builds the SDK and registers it globally; undefined when another provider was registered
 * first (the ADOT Lambda layer's, say), which then serves Operless's spans instead.
 */
export function registerSdk(settings: TracingSettings): TracingSdk | undefined {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ ...settings.resourceAttributes, 'service.name': settings.serviceName }),
    sampler: samplerOf(settings),
    idGenerator: timePrefixedIds(),
    spanProcessors: settings.exporters.map(
      (kind) =>
        new BatchSpanProcessor({
          exporter: exporterOf(kind, settings),
          scheduledDelayMillis: settings.scheduleDelayMs,
          exportTimeoutMillis: settings.exportTimeoutMs,
        }),
    ),
  });
  if (!trace.setGlobalTracerProvider(provider)) {
    void provider.shutdown();
    return undefined;
  }
  return {
    flush: (timeoutMs) => bounded(provider.forceFlush(), timeoutMs),
    shutdown: (timeoutMs) => bounded(provider.shutdown(), timeoutMs),
  };
}
