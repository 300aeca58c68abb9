/**
 * The dev loop's queues, laid out as serverless.yml lays them out: every reconcile function gets
 * its own work queue and DLQ (`operless-dev-<function>`, `…-dlq`), and its module is loaded
 * with OPERLESS_QUEUE_URL/OPERLESS_DLQ_URL naming them (as its `environment:` does on Lambda).
 * With `ordering: 'per-key'` (serverless.yml's `ordering` parameter) the work queue and DLQ are
 * FIFO (`….fifo`: message group = object key) and each function also gets a standard delay
 * queue (`…-delay`, with its DLQ) in OPERLESS_DELAY_QUEUE_URL. Unordered, each function also
 * gets its bulk queue (`…-bulk`, DLQ the function's DLQ), as serverless.yml's BulkQueue, named
 * by OPERLESS_BULK_QUEUE_URL (docs/semantics.md, "Live changes before the backlog").
 *
 * Guarantees:
 * - `devQueueNames` and `queueEnvironment` are pure; names are valid SQS queue names for any
 *   function name, and distinct functions get distinct queues.
 * - `queueEnvironment` sets or clears every queue variable, so one function's environment never
 *   leaks another's delay or bulk queue.
 * - The brokers: the embedded SQS-compatible server, ElasticMQ (both with every queue created
 *   and a DLQ after 5 receives), or one given SQS queue — refused, with what to do instead,
 *   for per-key ordering or more than one function.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Ordering } from '../contract/ordering.ts';
import { startMemoryQueueServer } from '../local/memory-queue-server.ts';
import type { Stoppable } from './started-parts.ts';

/** Where the loop's queues live. */
export type BrokerChoice =
  | { readonly type: 'embedded' }
  | { readonly type: 'elasticmq' }
  | { readonly type: 'sqs'; readonly queueUrl: string; readonly dlqUrl: string; readonly region: string };

/** One function's queues. */
export interface FunctionQueues {
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Per-key ordering: the delay queue (OPERLESS_DELAY_QUEUE_URL). */
  readonly delayQueueUrl?: string;
  /** Unordered: the bulk queue of resyncs and relists (OPERLESS_BULK_QUEUE_URL). */
  readonly bulkQueueUrl?: string;
  /**
   * The ordering the loop made these queues for (OPERLESS_ORDERING, which the function checks
   * its queues against at load); absent for queues the user named (`--broker sqs`), whose
   * ordering the function reads from the queue itself.
   */
  readonly ordering?: Ordering;
}

const QUEUE_PREFIX = 'operless-dev';

/** The local queues of a function, by name. */
export interface DevQueueNames {
  readonly queue: string;
  readonly dlq: string;
  /** Per-key ordering: the standard delay queue and its DLQ. */
  readonly delay?: { readonly queue: string; readonly dlq: string };
  /** Unordered: the bulk queue (its DLQ is `dlq`). */
  readonly bulk?: string;
}

/**
 * The local queue names of a function: `operless-dev-<function>` and its `-dlq`; with per-key
 * ordering both end in `.fifo`, and the delay queue `…-delay` (with `…-delay-dlq`) is added;
 * unordered, the bulk queue `…-bulk` is. Pure.
 */
export function devQueueNames(functionName: string, ordering: Ordering = 'unordered'): DevQueueNames {
  const base = `${QUEUE_PREFIX}-${functionName.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 55)}`;
  if (ordering === 'unordered') return { queue: base, dlq: `${base}-dlq`, bulk: `${base}-bulk` };
  return { queue: `${base}.fifo`, dlq: `${base}-dlq.fifo`, delay: { queue: `${base}-delay`, dlq: `${base}-delay-dlq` } };
}

/** A function's queue variables, as its `environment:` in serverless.yml sets them. Pure. */
export function queueEnvironment(queues: FunctionQueues): Record<string, string> {
  return {
    OPERLESS_QUEUE_URL: queues.queueUrl,
    OPERLESS_DLQ_URL: queues.dlqUrl,
    // Set or cleared: a per-function environment must not leak another function's delay or bulk queue.
    OPERLESS_DELAY_QUEUE_URL: queues.delayQueueUrl ?? '',
    OPERLESS_BULK_QUEUE_URL: queues.bulkQueueUrl ?? '',
    // Set or cleared too: an OPERLESS_ORDERING left in the developer's shell never overrides the loop's queues.
    OPERLESS_ORDERING: queues.ordering ?? '',
  };
}

/** The queues of every function, and the client and endpoint that reach them. */
export interface QueueTarget {
  readonly byFunction: ReadonlyMap<string, FunctionQueues>;
  readonly region: string;
  readonly endpoint: string | undefined;
  readonly sqs: SQSClient;
}

export async function startQueue(
  choice: BrokerChoice,
  functionNames: readonly string[],
  ordering: Ordering,
  started: Stoppable[],
  say: (line: string) => void,
): Promise<QueueTarget> {
  const names = new Map(functionNames.map((fn) => [fn, devQueueNames(fn, ordering)]));
  const pair = (queue: string, dlq: string) => ({ name: queue, visibilityTimeoutSeconds: 60, dlq: { name: dlq, maxReceiveCount: 5 } });
  const queues = [...names.values()].flatMap(({ queue, dlq, delay, bulk }) => [
    pair(queue, dlq),
    ...(delay ? [pair(delay.queue, delay.dlq)] : []),
    ...(bulk ? [pair(bulk, dlq)] : []),
  ]);
  const listed = [...names]
    .map(([fn, n]) => `${fn}: ${n.queue} (DLQ ${n.dlq}${n.delay ? `; delay queue ${n.delay.queue}` : ''}${n.bulk ? `; bulk queue ${n.bulk}` : ''})`)
    .join(', ');
  const byName = (url: (name: string) => string) =>
    new Map(
      [...names].map(([fn, n]) => [
        fn,
        {
          queueUrl: url(n.queue),
          dlqUrl: url(n.dlq),
          ordering,
          ...(n.delay ? { delayQueueUrl: url(n.delay.queue) } : {}),
          ...(n.bulk ? { bulkQueueUrl: url(n.bulk) } : {}),
        },
      ]),
    );
  if (choice.type === 'embedded') {
    const server = await startMemoryQueueServer({ queues });
    started.push({ name: 'embedded queue', stop: () => server.stop() });
    say(`embedded SQS-compatible queues at ${server.endpoint}, per function (${listed}; DLQ after 5 receives)`);
    return { byFunction: byName((n) => server.queueUrl(n)), region: server.region, endpoint: server.endpoint, sqs: server.sqs() };
  }
  if (choice.type === 'elasticmq') {
    say('starting ElasticMQ (first run resolves it from Maven Central)');
    const { startBroker } = await import('../testing/index.ts');
    const broker = await startBroker({ queues });
    started.push({ name: 'ElasticMQ', stop: () => broker.stop() });
    say(`ElasticMQ at ${broker.endpoint}, per function (${listed})`);
    return { byFunction: byName((n) => broker.queueUrl(n)), region: broker.region, endpoint: broker.endpoint, sqs: broker.sqs() };
  }
  if (ordering === 'per-key') {
    throw new Error(
      '--broker sqs takes the queues you name, so --ordering does not apply: for per-key ordering deploy with ordering=per-key and give its FIFO work queue as --queue-url, or use the embedded broker or --broker elasticmq locally',
    );
  }
  if (functionNames.length > 1) {
    throw new Error(
      `--broker sqs gives one queue, but serverless.yml has ${functionNames.length} reconcile functions (${functionNames.join(', ')}), each needing its own queue: ` +
        'use the embedded broker or --broker elasticmq locally, or deploy the stack (osls deploy) for real SQS queues',
    );
  }
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  say(`using SQS queue ${choice.queueUrl}`);
  return {
    byFunction: new Map([[functionNames[0]!, { queueUrl: choice.queueUrl, dlqUrl: choice.dlqUrl }]]),
    region: choice.region,
    endpoint: undefined,
    sqs: new SQSClient({ region: choice.region }),
  };
}
