/**
 * The queue port (port.ts) over an Amazon EventBridge event bus: the forwarder's second sink.
 * Each entry becomes one event on the bus — `source` as configured, `detail-type` naming the
 * message's reason (`detailTypeOf`), the entry's body (the reconcile message, unchanged) as
 * `detail` — sent with `PutEvents`, up to ten per request. A rule per kind routes the events to
 * the work queue; its SQS target passes only `$.detail` (InputPath), so the function receives
 * the same body as from the SQS sink (docs/forwarder.md, "EventBridge sink").
 *
 * Trace context: when the entry is traced, the event carries it twice — X-Ray's header as the
 * entry's `TraceHeader` (EventBridge hands it to the target: SQS's `AWSTraceHeader`), and the
 * W3C `traceparent` as a transport field of the detail (contract/message.ts
 * `TRACEPARENT_FIELD`), which survives what the header does not: archives, replays, emulators.
 *
 * Guarantees (the port's):
 * - a thrown `sendBatch` means "nothing is known to have been sent"; a returned result lists
 *   exactly the entries PutEvents rejected (its answer is positional), each with its error code;
 *   throttling and internal failures are not the sender's fault (retried), anything else is;
 * - an empty batch sends nothing; more than `BATCH_LIMIT` entries or more than
 *   `PUT_EVENTS_MAX_BYTES` (EventBridge's own size formula) is refused before any request; a
 *   body that is not a JSON object (EventBridge's `detail` must be one) fails that entry only,
 *   without a request;
 * - `probe` is `DescribeEventBus` of that bus; there is no depth (a bus has no backlog: the
 *   coalescing window never widens for this sink);
 * - the SDK is imported for its types only; the caller passes the command classes.
 */
import type {
  DescribeEventBusCommand,
  EventBridgeClient,
  PutEventsCommand,
  PutEventsCommandInput,
  PutEventsCommandOutput,
  PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { TRACEPARENT_FIELD } from '../contract/message.ts';
import type { BatchEntry, EntryFailure, QueuePort } from './port.ts';
import { BATCH_LIMIT } from './sqs-port.ts';

/** PutEvents takes at most 256 KiB per request, counted as `eventEntryBytes` sums. */
export const PUT_EVENTS_MAX_BYTES = 256 * 1024;

/** Error codes of a rejected entry that are worth retrying unchanged (EventBridge's own trouble). */
const TRANSIENT_CODES = new Set(['InternalFailure', 'InternalException', 'ThrottlingException', 'Throttling', 'ServiceUnavailable']);

/** The SDK classes the adapter sends (from `@aws-sdk/client-eventbridge`, loaded by the caller). */
export interface EventBridgeCommands {
  readonly PutEventsCommand: typeof PutEventsCommand;
  readonly DescribeEventBusCommand: typeof DescribeEventBusCommand;
}

export interface EventBusTarget {
  /** The bus's name or ARN (PutEvents takes either). */
  readonly bus: string;
  /** The events' `source`. */
  readonly source: string;
}

/** `detail-type` of a reconcile message's event: "Reconcile <reason>", e.g. "Reconcile Modified". Pure, never throws. */
export function detailTypeOf(detail: Readonly<Record<string, unknown>>): string {
  const reason = detail.reason;
  return typeof reason === 'string' && /^[A-Za-z]{1,32}$/.test(reason) ? `Reconcile ${reason}` : 'Reconcile';
}

/** The size EventBridge counts for one entry (14 bytes of time, source, detail-type, detail, resources). Pure. */
export function eventEntryBytes(entry: Pick<PutEventsRequestEntry, 'Source' | 'DetailType' | 'Detail' | 'Resources'>): number {
  const utf8 = (text: string | undefined) => (text ? Buffer.byteLength(text, 'utf8') : 0);
  return 14 + utf8(entry.Source) + utf8(entry.DetailType) + utf8(entry.Detail) + (entry.Resources ?? []).reduce((n, r) => n + utf8(r), 0);
}

/** The body parsed as EventBridge's `detail` (a JSON object), or why it cannot be one. Pure, never throws. */
function detailOf(body: string): { ok: true; detail: Record<string, unknown> } | { ok: false; error: string } {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return { ok: true, detail: parsed as Record<string, unknown> };
    return { ok: false, error: 'the body is JSON but not an object; an event detail must be a JSON object' };
  } catch {
    return { ok: false, error: 'the body is not JSON; an event detail must be a JSON object' };
  }
}

/**
 * The PutEvents input for the entries that can be events, and the failures of those that
 * cannot (sent: `ids[i]` is the entry id of `input.Entries[i]`). Pure.
 */
export function putEventsInput(
  target: EventBusTarget,
  entries: readonly BatchEntry[],
): { input: PutEventsCommandInput; ids: string[]; invalid: EntryFailure[] } {
  const ids: string[] = [];
  const invalid: EntryFailure[] = [];
  const events: PutEventsRequestEntry[] = [];
  for (const entry of entries) {
    const parsed = detailOf(entry.body);
    if (!parsed.ok) {
      invalid.push({ id: entry.id, senderFault: true, code: 'MalformedDetail', message: parsed.error });
      continue;
    }
    ids.push(entry.id);
    const traceparent = entry.trace?.traceparent;
    events.push({
      EventBusName: target.bus,
      Source: target.source,
      DetailType: detailTypeOf(parsed.detail),
      Detail: traceparent ? JSON.stringify({ ...parsed.detail, [TRACEPARENT_FIELD]: traceparent }) : entry.body,
      ...(entry.trace?.awsTraceHeader ? { TraceHeader: entry.trace.awsTraceHeader } : {}),
    });
  }
  return { input: { Entries: events }, ids, invalid };
}

/** The entries PutEvents rejected, by position in the request (`ids`). Pure. */
export function putEventsFailures(ids: readonly string[], output: Pick<PutEventsCommandOutput, 'FailedEntryCount' | 'Entries'>): EntryFailure[] {
  const results = output.Entries ?? [];
  const failures: EntryFailure[] = [];
  ids.forEach((id, i) => {
    const result = results[i];
    // An answer without a result for an entry says nothing about it: count it as a transient failure (retried).
    if (!result) failures.push({ id, senderFault: false, code: 'MissingResult', message: 'PutEvents returned no result for this entry' });
    else if (result.ErrorCode)
      failures.push({ id, senderFault: !TRANSIENT_CODES.has(result.ErrorCode), code: result.ErrorCode, message: result.ErrorMessage ?? '' });
  });
  return failures;
}

/** The port of the event bus `target.bus` over `client`; `close` runs `onClose` (nothing by default). */
export function eventBridgePort(sdk: EventBridgeCommands, client: EventBridgeClient, target: EventBusTarget, onClose?: () => void): QueuePort {
  return {
    async sendBatch(entries) {
      if (entries.length > BATCH_LIMIT) throw new RangeError(`PutEvents takes at most ${BATCH_LIMIT} entries, got ${entries.length}`);
      const { input, ids, invalid } = putEventsInput(target, entries);
      if (ids.length === 0) return { failed: invalid };
      const bytes = (input.Entries ?? []).reduce((n, e) => n + eventEntryBytes(e), 0);
      if (bytes > PUT_EVENTS_MAX_BYTES) throw new RangeError(`PutEvents takes at most ${PUT_EVENTS_MAX_BYTES} bytes, got ${bytes}`);
      return { failed: [...invalid, ...putEventsFailures(ids, await client.send(new sdk.PutEventsCommand(input)))] };
    },
    async probe() {
      await client.send(new sdk.DescribeEventBusCommand({ Name: target.bus }));
    },
    close() {
      onClose?.();
    },
  };
}
