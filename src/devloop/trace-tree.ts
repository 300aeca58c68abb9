/**
 * `npm start -- --traces`: every change's trace printed as a tree once it goes quiet — the
 * forwarder's `operless.forward`, the function's `operless.reconcile` with its `kube` requests
 * and `operless.followup`, and the reconciles of the follow-ups after it. The spans come from
 * an OpenTelemetry SDK registered in the dev loop's own process (forwarder and functions run
 * there), with an exporter that keeps them in memory per trace and prints the trace
 * `quietMs` after its last span ended; a trace that grows later (a requeue's reconcile) is
 * printed again, whole.
 *
 * Guarantees: `formatTraceTree` is pure and prints every span exactly once (a span whose
 * parent is not among them is a root); the printer holds at most `MAX_TRACES` traces (the
 * oldest are forgotten) and its timers never keep the process alive.
 */
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { SimpleSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';

/** What the tree shows of a span. */
export interface TreeSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string | undefined;
  readonly name: string;
  readonly startMs: number;
  readonly durationMs: number;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly failed: boolean;
}

/** Traces held at once; beyond, the oldest is forgotten. */
export const MAX_TRACES = 200;

const hrMs = ([s, ns]: readonly [number, number]) => s * 1000 + ns / 1e6;

export function treeSpanOf(span: ReadableSpan): TreeSpan {
  return {
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    name: span.name,
    startMs: hrMs(span.startTime),
    durationMs: hrMs(span.duration),
    attributes: span.attributes,
    failed: span.status.code === SpanStatusCode.ERROR,
  };
}

/** What follows a span's name: key, reason, attempt and follow-up (`→ send`, `→ none`…), or the request's path and status. */
function detailOf(span: TreeSpan): string {
  const a = span.attributes;
  if (span.name.startsWith('kube ')) return [a['url.path'], a['http.response.status_code']].filter((v) => v !== undefined).join(' → ');
  const parts = [
    a['operless.key'],
    a['operless.reason'],
    a['operless.attempt'] ? `attempt ${String(a['operless.attempt'])}` : undefined,
    a['operless.followup'] ? `→ ${String(a['operless.followup'])}` : undefined,
  ];
  return parts.filter((v) => v !== undefined && v !== '').join(' ');
}

/** The lines of one trace's tree (children in start order; times relative to the trace's first span). Pure. */
export function formatTraceTree(spans: readonly TreeSpan[]): string[] {
  if (spans.length === 0) return [];
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string | undefined, TreeSpan[]>();
  for (const s of spans) {
    const parent = s.parentSpanId !== undefined && ids.has(s.parentSpanId) ? s.parentSpanId : undefined;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  for (const list of children.values()) list.sort((x, y) => x.startMs - y.startMs);
  const t0 = Math.min(...spans.map((s) => s.startMs));
  const end = Math.max(...spans.map((s) => s.startMs + s.durationMs));
  const key = spans.find((s) => s.attributes['operless.key'] !== undefined)?.attributes['operless.key'];
  const lines = [`trace ${spans[0]!.traceId}${key ? ` ${String(key)}` : ''}: ${spans.length} spans, ${Math.round(end - t0)} ms`];
  const walk = (span: TreeSpan, prefix: string, last: boolean, root: boolean) => {
    const branch = root ? '' : last ? '└─ ' : '├─ ';
    const timing = `+${Math.round(span.startMs - t0)} ms, ${span.durationMs.toFixed(span.durationMs < 10 ? 1 : 0)} ms`;
    lines.push(`  ${prefix}${branch}${span.name} ${detailOf(span)} (${timing})${span.failed ? ' FAILED' : ''}`.replace(/ {2,}\(/, ' ('));
    const kids = children.get(span.spanId) ?? [];
    const next = root ? prefix : prefix + (last ? '   ' : '│  ');
    for (const [i, kid] of kids.entries()) walk(kid, next, i === kids.length - 1, false);
  };
  for (const rootSpan of children.get(undefined) ?? []) walk(rootSpan, '', true, true);
  return lines;
}

/** An exporter that prints each trace as a tree `quietMs` after its last span. */
export function traceTreeExporter(write: (line: string) => void, quietMs = 1500): SpanExporter {
  const traces = new Map<string, { spans: TreeSpan[]; timer?: NodeJS.Timeout }>();
  const print = (traceId: string) => {
    const entry = traces.get(traceId);
    if (entry) for (const line of formatTraceTree(entry.spans)) write(line);
  };
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      for (const span of spans) {
        const s = treeSpanOf(span);
        let entry = traces.get(s.traceId);
        if (!entry) {
          entry = { spans: [] };
          traces.set(s.traceId, entry);
          for (const [oldest, old] of traces) {
            if (traces.size <= MAX_TRACES) break;
            clearTimeout(old.timer);
            traces.delete(oldest);
          }
        }
        entry.spans.push(s);
        clearTimeout(entry.timer);
        entry.timer = setTimeout(() => print(s.traceId), quietMs);
        entry.timer.unref();
      }
      done({ code: ExportResultCode.SUCCESS });
    },
    async shutdown() {
      for (const entry of traces.values()) clearTimeout(entry.timer);
      traces.clear();
    },
  };
}

/** Registers an SDK in this process whose spans are printed as trees; `stop` unregisters it. */
export function startTracePrinter(write: (line: string) => void, quietMs?: number): { stop(): Promise<void> } {
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: traceTreeExporter(write, quietMs) })] });
  if (!trace.setGlobalTracerProvider(provider))
    throw new Error('--traces: a tracer provider is already registered in this process (OTEL_* variables?); unset them to print traces here');
  return {
    async stop() {
      await provider.shutdown();
      trace.disable();
    },
  };
}
