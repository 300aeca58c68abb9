/**
 * The handler's ordering, resolved once where its configuration is read (`toSqsHandler`, at
 * cold start) and passed down as an explicit `Ordering` (contract/ordering.ts): the key's run
 * (per-key supersede and requeue merge, handler/key.ts), delivery (a delayed follow-up through
 * the delay queue, reconcile/delivery.ts) and the dispatch of the delay queue's batches to the
 * mover (handler.ts) read this value and never a queue URL's suffix.
 *
 * The ordering is the one named (the `ordering` option, else `OPERLESS_ORDERING`), else the
 * work queue's kind: a queue whose name ends in `.fifo` (SQS's rule for FIFO queues) is
 * per-key, any other unordered.
 *
 * Guarantees (pure; every refusal names the field to fix):
 * - a named ordering that is not one of `unordered`, `per-key` is refused;
 * - `per-key` with a standard work queue is refused (a standard queue cannot keep a key's
 *   order), and `unordered` with a FIFO work queue (its group would serialise every key);
 * - a delay queue with unordered ordering is refused (a standard work queue delays its own
 *   messages; a delay queue there would never be read), as is a FIFO delay queue (it takes no
 *   per-message delay; so with per-key it is never the FIFO work queue itself);
 * - per-key without a delay queue is accepted: immediate follow-ups go to the FIFO queue, and
 *   a delayed one is refused when it is sent, naming `OPERLESS_DELAY_QUEUE_URL` (reconcile/delivery.ts).
 */
import { asOrdering, ORDERINGS, type Ordering } from '../../contract/ordering.ts';
import { isFifoQueueUrl } from '../../queue/fifo.ts';

/** The variable that names the ordering (serverless.yml sets it from its `ordering` parameter). */
export const ORDERING_VARIABLE = 'OPERLESS_ORDERING';

/** A configured value and the field it came from, for messages. */
export interface Configured<T> {
  readonly value: T | undefined;
  /** The option or variable, e.g. `OPERLESS_QUEUE_URL` or `the queueUrl option of toSqsHandler`. */
  readonly field: string;
}

export interface OrderingConfig {
  /** The named ordering, when one is (any value: it is checked here). */
  readonly ordering: Configured<unknown>;
  readonly queueUrl: Configured<string>;
  readonly delayQueueUrl: Configured<string>;
}

export interface ResolvedOrdering {
  readonly ordering: Ordering;
  /** Per-key with a delay queue: that queue's name, which its batches' event source ARN ends in. */
  readonly delayQueueName?: string;
}

/** The ordering of a handler from its configuration, or a TypeError naming the field to fix. Pure. */
export function resolveOrdering(config: OrderingConfig): ResolvedOrdering {
  const { ordering: named, queueUrl, delayQueueUrl } = config;
  const given = named.value === undefined || named.value === '' ? undefined : named.value;
  const explicit = given === undefined ? undefined : asOrdering(given);
  if (given !== undefined && explicit === undefined) {
    throw new TypeError(`${named.field} must be one of ${ORDERINGS.join(', ')}, got ${JSON.stringify(given)}`);
  }
  const fifo = queueUrl.value !== undefined && isFifoQueueUrl(queueUrl.value);
  const ordering: Ordering = explicit ?? (fifo ? 'per-key' : 'unordered');
  if (ordering === 'per-key' && queueUrl.value !== undefined && !fifo) {
    throw new TypeError(
      `${queueUrl.field} must be a FIFO queue (its name ends in .fifo) with per-key ordering (${named.field}), got ${JSON.stringify(queueUrl.value)}`,
    );
  }
  if (ordering === 'unordered' && fifo) {
    throw new TypeError(
      `${queueUrl.field} is a FIFO queue (${JSON.stringify(queueUrl.value)}) but ${named.field} is unordered: name per-key ordering, or give a standard work queue`,
    );
  }
  const delay = delayQueueUrl.value;
  if (delay === undefined) return { ordering };
  if (ordering === 'unordered') {
    throw new TypeError(
      `${delayQueueUrl.field} must be empty with unordered ordering (a standard work queue delays its own follow-ups; only per-key ordering has a delay queue), got ${JSON.stringify(delay)}`,
    );
  }
  if (isFifoQueueUrl(delay)) {
    throw new TypeError(`${delayQueueUrl.field} must be a standard queue (a FIFO queue takes no per-message delay), got ${JSON.stringify(delay)}`);
  }
  return { ordering, delayQueueName: queueName(delay) };
}

/** A queue's name: the last segment of its URL (an ARN's last segment names the same queue). Pure. */
export function queueName(queueUrl: string): string {
  return queueUrl.replace(/\/+$/, '').split('/').pop() ?? '';
}

/** True when a batch's event source ARN is the queue named `name` (an event source mapping reads one queue). Pure. */
export function isFromQueueNamed(eventSourceArn: string | undefined, name: string | undefined): boolean {
  return name !== undefined && eventSourceArn !== undefined && eventSourceArn.slice(eventSourceArn.lastIndexOf(':') + 1) === name;
}
