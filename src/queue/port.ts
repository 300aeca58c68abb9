/**
 * The queue port: what Operless needs of one queue, whoever sends — the forwarder's lanes,
 * the function's follow-ups and dead-letter hand-offs, the scheduled resync, the CLI. Send up
 * to ten messages with a result per message, probe that the queue answers, read its depth,
 * close. The SQS adapter is sqs-port.ts; tests and the benchmarks' in-process queue implement
 * the port directly.
 *
 * `MessageSender` is the port seen by the reconcile runtime: one message to any queue, which
 * resolves only once that queue accepted it (a batch of one whose entry did not fail) and
 * otherwise rejects with a `QueueSendError` naming the queue — the handler acknowledges a
 * record only after its follow-up was accepted.
 *
 * Port contract: a thrown `sendBatch` means "nothing is known to have been sent" (retry the
 * whole batch); a returned result lists exactly the entries the queue rejected, each with
 * whether the queue blames the request (`senderFault`: retrying unchanged will likely fail).
 */
import { errorMessage } from '../observability/log.ts';

/** One message of a batch. */
export interface BatchEntry {
  /** Unique within the batch: letters, digits, `-` and `_`, at most 80 characters. */
  readonly id: string;
  readonly body: string;
  /** 0–900. */
  readonly delaySeconds?: number;
  /** String message attributes (DLQ metadata). */
  readonly attributes?: Readonly<Record<string, string>>;
  /** FIFO queues only: `MessageGroupId` (default: the body's object key, fifo.ts). */
  readonly groupId?: string;
  /** FIFO queues only: `MessageDeduplicationId` (default: a random one, fifo.ts). */
  readonly deduplicationId?: string;
  /** The trace context of the span that sends it (observability/trace-context.ts); absent when not tracing. */
  readonly trace?: EntryTrace;
}

/** Trace context of an entry: W3C `traceparent` (a message attribute) and X-Ray's header (a system attribute). */
export interface EntryTrace {
  readonly traceparent?: string;
  readonly awsTraceHeader?: string;
}

/** An entry the queue rejected. */
export interface EntryFailure {
  readonly id: string;
  readonly senderFault: boolean;
  readonly code: string;
  readonly message: string;
}

/** A queue's approximate counts. */
export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

/** One queue. */
export interface QueuePort {
  /** Sends up to 10 entries in one request; see the port contract above. */
  sendBatch(entries: readonly BatchEntry[]): Promise<{ failed: EntryFailure[] }>;
  /** Resolves when the queue answers; rejects with the reason otherwise. */
  probe(): Promise<void>;
  /** The queue's approximate counts; optional (ports without it never widen the coalescing window). */
  depth?(): Promise<QueueDepth>;
  /**
   * Sets the visibility timeout of received messages (up to 10, by receipt handle), so a
   * record handed back becomes visible after `seconds` instead of the queue's timeout;
   * optional (without it a handed-back record waits the whole timeout). Rejects on any failure.
   */
  changeVisibility?(entries: readonly VisibilityChange[]): Promise<void>;
  close?(): void;
}

/** A received message's new visibility timeout. */
export interface VisibilityChange {
  readonly receiptHandle: string;
  /** 0–43,200. */
  readonly seconds: number;
}

/** The port of each queue, by URL. */
export type QueuePorts = (queueUrl: string) => QueuePort;

/** A message to send on its own. */
export interface OutgoingMessage {
  readonly body: string;
  /** 0–900. */
  readonly delaySeconds?: number;
  /** String message attributes (DLQ metadata). */
  readonly attributes?: Readonly<Record<string, string>>;
  /** FIFO queues only: `MessageDeduplicationId` (default: a random one, fifo.ts). */
  readonly deduplicationId?: string;
  readonly trace?: EntryTrace;
}

/** The runtime's view of the port: `send` resolves only once the queue accepted the message. */
export interface MessageSender {
  send(queueUrl: string, message: OutgoingMessage): Promise<void>;
  /** The port's `changeVisibility` for the queue at `queueUrl`; a no-op where the port has none. */
  changeVisibility?(queueUrl: string, entries: readonly VisibilityChange[]): Promise<void>;
}

export class QueueSendError extends Error {
  override readonly name = 'QueueSendError';
  readonly queueUrl: string;
  constructor(queueUrl: string, cause: unknown) {
    super(`could not send to queue ${queueUrl}: ${errorMessage(cause)}`, { cause });
    this.queueUrl = queueUrl;
  }
}

/** The entry that carries one message on its own. Pure. */
export function singleEntry(message: OutgoingMessage): BatchEntry {
  return {
    id: 'm',
    body: message.body,
    ...(message.delaySeconds ? { delaySeconds: message.delaySeconds } : {}),
    ...(message.attributes ? { attributes: message.attributes } : {}),
    ...(message.deduplicationId ? { deduplicationId: message.deduplicationId } : {}),
    ...(message.trace ? { trace: message.trace } : {}),
  };
}

/** A `MessageSender` over `ports`: each message is a batch of one; a rejected entry rejects. */
export function messageSender(ports: QueuePorts | ((queueUrl: string) => Promise<QueuePort>)): MessageSender {
  return {
    async send(queueUrl, message) {
      let failed: EntryFailure[];
      try {
        ({ failed } = await (await ports(queueUrl)).sendBatch([singleEntry(message)]));
      } catch (err) {
        throw new QueueSendError(queueUrl, err);
      }
      const [rejected] = failed;
      if (rejected) throw new QueueSendError(queueUrl, new Error(`${rejected.code}: ${rejected.message}`));
    },
    async changeVisibility(queueUrl, entries) {
      const port = await ports(queueUrl);
      for (let i = 0; i < entries.length; i += 10) await port.changeVisibility?.(entries.slice(i, i + 10));
    },
  };
}
