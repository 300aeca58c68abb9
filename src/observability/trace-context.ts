/**
 * Trace context across the hops of a change (API server → forwarder → queue → function →
 * queue again): W3C `traceparent` carried as a string message attribute, and the same context
 * as X-Ray's `AWSTraceHeader` (an SQS system attribute, and EventBridge's `TraceHeader`), so
 * Lambda's X-Ray integration links it too.
 *
 * Spans are made with the OpenTelemetry API (`@opentelemetry/api`): without an SDK registered
 * they are no-ops whose context is invalid, and then nothing is written into any message — no
 * cost by default. An application that registers an SDK (exporter from the standard `OTEL_*`
 * variables) gets the spans.
 *
 * Guarantees: every function here is pure and never throws; a malformed or hostile
 * `traceparent` is ignored (undefined), never trusted in part.
 */
import { trace, TraceFlags, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';

/** The message attribute that carries the W3C trace context. */
export const TRACEPARENT_ATTRIBUTE = 'traceparent';

/** The tracer of Operless's spans (a no-op until an SDK is registered). */
export function operlessTracer(): Tracer {
  return trace.getTracer('operless');
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The span context a `traceparent` names (version 00), or undefined when it is not a valid one. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string' || value.length !== 55) return undefined;
  const match = TRACEPARENT.exec(value);
  if (!match) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** The `traceparent` of a span context, or undefined when the context is invalid (a no-op span's). */
export function formatTraceparent(context: SpanContext): string | undefined {
  if (!trace.isSpanContextValid(context)) return undefined;
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00'}`;
}

/** The same context as an X-Ray trace header (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=0|1`), or undefined. */
export function awsTraceHeader(context: SpanContext): string | undefined {
  if (!trace.isSpanContextValid(context)) return undefined;
  const sampled = (context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? 1 : 0;
  return `Root=1-${context.traceId.slice(0, 8)}-${context.traceId.slice(8)};Parent=${context.spanId};Sampled=${sampled}`;
}

const AWS_TRACE_HEADER = /(?:^|;)\s*Root=1-([0-9a-f]{8})-([0-9a-f]{24})\s*;\s*Parent=([0-9a-f]{16})(?:\s*;\s*Sampled=([01]))?/;

/** The span context an X-Ray trace header names (with a Parent), or undefined. */
export function parseAwsTraceHeader(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string' || value.length > 256) return undefined;
  const match = AWS_TRACE_HEADER.exec(value);
  if (!match) return undefined;
  const [, time = '', random = '', spanId = '', sampled] = match;
  const traceId = `${time}${random}`;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, traceFlags: sampled === '1' ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: true };
}

/**
 * The trace context a received SQS record carries: its `traceparent` message attribute, else
 * its `AWSTraceHeader` system attribute (set by the forwarder, EventBridge or X-Ray). Hostile
 * shapes give undefined.
 */
export function recordTraceContext(record: { messageAttributes?: unknown; attributes?: unknown }): SpanContext | undefined {
  const field = (value: unknown, key: string): unknown => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined);
  return (
    parseTraceparent(field(field(record.messageAttributes, TRACEPARENT_ATTRIBUTE), 'stringValue')) ??
    parseAwsTraceHeader(field(record.attributes, 'AWSTraceHeader'))
  );
}

/** The trace headers of a span for a message it sends: empty when the span is a no-op. */
export function traceHeadersOf(span: Span): { traceparent?: string; awsTraceHeader?: string } {
  const context = span.spanContext();
  const traceparent = formatTraceparent(context);
  const header = awsTraceHeader(context);
  return { ...(traceparent ? { traceparent } : {}), ...(header ? { awsTraceHeader: header } : {}) };
}
