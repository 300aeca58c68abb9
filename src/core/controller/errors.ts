/**
 * Errors with a meaning for the runtime.
 *
 * `TerminalError`: the object cannot be reconciled until a human changes it (an invalid
 * combination the schema cannot express, say). The runtime does not retry; it records a
 * `Warning` Event on the object and moves the message to the DLQ with the error. Like
 * controller-runtime's `reconcile.TerminalError`.
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  /** Short CamelCase reason for Events and conditions, e.g. `InvalidSpec`. */
  readonly reason: string;
  constructor(message: string, options: { reason?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options.reason ?? 'TerminalError';
  }
}

export function isTerminalError(err: unknown): err is TerminalError {
  return err instanceof TerminalError || (err instanceof Error && err.name === 'TerminalError');
}
