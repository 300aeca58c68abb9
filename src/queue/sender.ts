/**
 * `MessageSender`: how the runtime puts a message on a queue. One method, so the handler
 * can be driven by the real SQS client (sqs.ts) in production and tests alike.
 *
 * Contract: `send` resolves only once the queue accepted the message, and rejects otherwise
 * — the handler acknowledges a record only after its follow-up was accepted.
 */
export interface OutgoingMessage {
  readonly body: string;
  /** 0–900. */
  readonly delaySeconds?: number;
  /** String message attributes (DLQ metadata). */
  readonly attributes?: Readonly<Record<string, string>>;
}

export interface MessageSender {
  send(queueUrl: string, message: OutgoingMessage): Promise<void>;
}
