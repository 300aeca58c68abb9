/**
 * The forwarder's spans: one `operless.forward` span per message of a batch sent, from the
 * moment the change was observed (`observedAt`) to the queue's answer, named by the object's
 * key and reason. Its context goes with the entry (`traceparent`, `AWSTraceHeader`), so the
 * function that reconciles the key continues the trace (observability/trace-context.ts).
 *
 * Guarantees: without an OpenTelemetry SDK registered the spans are no-ops and the entries
 * carry no trace context; a span is ended exactly once, with an error status when its entry
 * was rejected or the request failed; nothing here throws into the send loop.
 */
import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { displayKey } from '../../contract/message.ts';
import { errorMessage } from '../../observability/log.ts';
import { operlessTracer, traceHeadersOf } from '../../observability/trace-context.ts';
import type { EntryTrace } from '../../queue/port.ts';
import type { BatchEntry } from './buffer.ts';

export interface ForwardSpans {
  /** The trace context of entry `id`, as the entry's fields (none when not tracing). */
  trace(id: string): { trace?: EntryTrace };
  /** The queue answered: rejected entries end with an error, the others OK. */
  end(failed: readonly { id: string; code: string }[]): void;
  /** The request failed: every span ends with the error. */
  fail(err: unknown): void;
}

/** Starts a span per entry of `batch`. */
export function forwardSpans(batch: readonly BatchEntry[], queueLabel: string): ForwardSpans {
  const tracer = operlessTracer();
  const spans = new Map<string, Span>();
  for (const { id, message } of batch) {
    spans.set(
      id,
      tracer.startSpan('operless.forward', {
        kind: SpanKind.PRODUCER,
        startTime: message.observedAt,
        attributes: { 'operless.key': displayKey(message), 'operless.reason': message.reason, 'operless.queue': queueLabel },
      }),
    );
  }
  let ended = false;
  const endAll = (status: (id: string) => { code: SpanStatusCode; message?: string }) => {
    if (ended) return;
    ended = true;
    for (const [id, span] of spans) {
      span.setStatus(status(id));
      span.end();
    }
  };
  return {
    trace(id) {
      const span = spans.get(id);
      const headers = span ? traceHeadersOf(span) : {};
      return headers.traceparent ? { trace: headers } : {};
    },
    end(failed) {
      const codes = new Map(failed.map((f) => [f.id, f.code]));
      endAll((id) => {
        const code = codes.get(id);
        return code === undefined ? { code: SpanStatusCode.OK } : { code: SpanStatusCode.ERROR, message: `rejected: ${code}` };
      });
    },
    fail(err) {
      endAll(() => ({ code: SpanStatusCode.ERROR, message: errorMessage(err) }));
    },
  };
}
