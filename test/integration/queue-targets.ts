/**
 * The two queues every queue test runs against — the real broker from the harness (ElasticMQ)
 * and the embedded queue — and a helper creating a fresh work queue + DLQ through the SDK,
 * so each case has queues of its own.
 */
import { after, before, describe } from 'node:test';
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startMemoryQueueServer } from '../../src/local/memory-queue-server.ts';
import { startBroker } from '../../src/testing/index.ts';

export interface QueueTarget {
  sqs(): SQSClient;
  stop(): Promise<void>;
}

export const QUEUE_TARGETS: Readonly<Record<string, () => Promise<QueueTarget>>> = {
  elasticmq: () => startBroker(),
  embedded: () => startMemoryQueueServer(),
};

/**
 * Declares the same cases once per target: `cases` runs inside a describe block whose
 * target was started before its tests and is stopped after them; `sqs()` is its client.
 */
export function describeOnEachQueue(title: string, cases: (sqs: () => SQSClient, targetName: string) => void): void {
  for (const [targetName, start] of Object.entries(QUEUE_TARGETS)) {
    describe(`${title}: ${targetName}`, () => {
      let target: QueueTarget | undefined;
      let client: SQSClient | undefined;
      before(async () => {
        target = await start();
        client = target.sqs();
      });
      after(async () => {
        await target?.stop();
      });
      cases(() => {
        if (!client) throw new Error(`the ${targetName} queue did not start; see the error of the before hook`);
        return client;
      }, targetName);
    });
  }
}

export interface QueuePair {
  readonly url: string;
  readonly arn: string;
  readonly dlqUrl: string;
}

/** A new queue and its DLQ; with `maxReceiveCount` the queue redrives to the DLQ. */
export async function createQueuePair(sqs: SQSClient, options: { visibilityTimeoutSeconds?: number; maxReceiveCount?: number } = {}): Promise<QueuePair> {
  const name = `q-${randomUUID().slice(0, 8)}`;
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqArn = await queueArn(sqs, dlq.QueueUrl!);
  const attributes: Record<string, string> = { VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 30) };
  if (options.maxReceiveCount) {
    attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: options.maxReceiveCount });
  }
  const queue = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  return { url: queue.QueueUrl!, arn: await queueArn(sqs, queue.QueueUrl!), dlqUrl: dlq.QueueUrl! };
}

async function queueArn(sqs: SQSClient, url: string): Promise<string> {
  const result = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return result.Attributes!.QueueArn!;
}
