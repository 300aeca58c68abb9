/**
 * Dead-letter metadata: why a message was moved to the DLQ by Operless itself.
 *
 * When the runtime gives up on a message (poison body, terminal error, retries exhausted)
 * it sends the *original body, unchanged* to the DLQ with these SQS message attributes, so
 * `operless dlq list` can show the reason and `operless dlq redrive` can send the body back.
 * Messages that SQS itself moved (maxReceiveCount exceeded, e.g. after crashes) carry no
 * such attributes; their reason is reported as "exceeded maxReceiveCount".
 */
export const DLQ_ATTRIBUTE_REASON = 'operless.reason';
export const DLQ_ATTRIBUTE_ERROR = 'operless.error';
export const DLQ_ATTRIBUTE_FAILED_AT = 'operless.failedAt';

/** `UnknownNamespace`: a message for an object outside the namespaces the function runs for (`OPERLESS_NAMESPACES`). */
export const DLQ_REASONS = ['InvalidMessage', 'TerminalError', 'RetriesExhausted', 'UnknownKind', 'UnknownCluster', 'UnknownNamespace'] as const;
export type DlqReason = (typeof DLQ_REASONS)[number];

export interface DeadLetter {
  readonly body: string;
  readonly reason: DlqReason;
  /** Human-readable explanation; bounded so it always fits in a message attribute. */
  readonly error: string;
}

/** SQS message attributes are bounded; keep errors short and single-purpose. */
export const MAX_ERROR_CHARS = 1024;

export function truncateError(message: string): string {
  return message.length > MAX_ERROR_CHARS ? `${message.slice(0, MAX_ERROR_CHARS - 1)}…` : message;
}
