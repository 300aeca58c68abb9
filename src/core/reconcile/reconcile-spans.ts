/**
 * The function's spans, continuing the trace a record carries (observability/trace-context.ts): one
 * `operless.reconcile` span per key, child of the context its records carry (the forwarder's
 * `operless.forward` span, or the previous reconcile's follow-up; a record from EventBridge
 * carries it in its body, contract/message.ts `TRACEPARENT_FIELD`), linked to the contexts of
 * the key's other records when several were coalesced; one `operless.followup` span for the
 * follow-up it sends (requeue, retry, dead letter), whose context the follow-up message carries
 * on — so requeues and retries stay in the trace of the change that started them.
 *
 * Guarantees: without an SDK registered every span is a no-op: a follow-up carries on the
 * context its record brought, unchanged (W3C propagation), and none when none came; a record with no or a hostile trace context starts a new trace; a span ends exactly
 * once, also when the body throws (which is passed on unchanged).
 */
import { context, SpanKind, SpanStatusCode, trace, type Link, type Span } from '@opentelemetry/api';
import { displayKey } from '../../contract/message.ts';
import { errorMessage } from '../../observability/log.ts';
import { operlessTracer, parseTraceparent, recordTraceContext, traceHeadersOf } from '../../observability/trace-context.ts';
import { createKubeClient, type BoundKubeClient } from '../../kube/client.ts';
import type { KubeTransport } from '../../kube/transport.ts';
import type { EntryTrace } from '../../queue/port.ts';
import type { KeyGroup } from './batch.ts';

/** Runs `body` inside the key's reconcile span, parented on the first trace context its records carry. */
export async function withKeySpan<T>(
  group: Pick<KeyGroup, 'message' | 'records' | 'bodyTraceparents'>,
  reconcileId: string,
  body: (span: Span) => Promise<T>,
): Promise<T> {
  const carried = group.records.flatMap((r, i) => recordTraceContext(r) ?? parseTraceparent(group.bodyTraceparents?.[i]) ?? []);
  const [parent, ...others] = carried;
  const links: Link[] = others.map((c) => ({ context: c }));
  const parentContext = parent ? trace.setSpanContext(context.active(), parent) : context.active();
  const message = group.message;
  const span = operlessTracer().startSpan(
    'operless.reconcile',
    {
      kind: SpanKind.CONSUMER,
      links,
      attributes: {
        'operless.key': displayKey(message),
        'operless.reason': message.reason,
        'operless.attempt': message.attempt,
        'operless.reconcile_id': reconcileId,
        'operless.records': group.records.length,
      },
    },
    parentContext,
  );
  return runInSpan(span, parentContext, body);
}

/**
 * Runs `send` inside an `operless.followup` span, child of `parent` (the key's span; passed
 * explicitly: the API has no context manager unless the application registers one); `send`
 * gets the trace the message carries.
 */
export function withFollowUpSpan<T>(followUp: string, parent: Span | undefined, send: (trace: EntryTrace | undefined) => Promise<T>): Promise<T> {
  const parentContext = parent ? trace.setSpan(context.active(), parent) : context.active();
  const span = operlessTracer().startSpan('operless.followup', { kind: SpanKind.PRODUCER, attributes: { 'operless.followup': followUp } }, parentContext);
  const headers = traceHeadersOf(span);
  return runInSpan(span, parentContext, () => send(headers.traceparent ? headers : undefined));
}

/**
 * The key's client with a `kube <METHOD>` span (child of `parent`) around each API request —
 * the GET of the live object, applies, status writes — when `parent` records (an SDK is
 * registered) and the client has a transport; otherwise the client itself, unchanged.
 */
export function tracedClient(client: BoundKubeClient, parent: Span): BoundKubeClient {
  if (!parent.isRecording() || !client.transport) return client;
  const transport = client.transport;
  const parentContext = trace.setSpan(context.active(), parent);
  const traced: KubeTransport = {
    server: transport.server,
    request: (req) => {
      const span = operlessTracer().startSpan(
        `kube ${req.method}`,
        { kind: SpanKind.CLIENT, attributes: { 'http.request.method': req.method, 'url.path': req.path } },
        parentContext,
      );
      return runInSpan(span, parentContext, async () => {
        const res = await transport.request(req);
        span.setAttribute('http.response.status_code', res.status);
        return res;
      });
    },
    watch: transport.watch.bind(transport),
    list: transport.list.bind(transport),
    close: transport.close.bind(transport),
  };
  return createKubeClient(traced, { fieldManager: client.fieldManager });
}

async function runInSpan<T>(span: Span, parent: ReturnType<typeof context.active>, body: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(parent, span), () => body(span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
    throw err;
  } finally {
    span.end();
  }
}
