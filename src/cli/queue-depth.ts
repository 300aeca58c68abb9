/**
 * Queue depth: what `GetQueueAttributes` says about a queue without touching its messages —
 * visible, in flight (received, not yet deleted), delayed — and its redrive target.
 *
 * Guarantees: never receives a message (receiving would count toward the DLQ's
 * maxReceiveCount). The age of the oldest message is not among SQS's queue attributes:
 * on AWS it is the CloudWatch metric `ApproximateAgeOfOldestMessage`. The embedded queue
 * answers an attribute of that name (read into `oldestAgeSeconds`); ElasticMQ has no
 * equivalent (its statistics are the three counts). Where the broker does not answer it,
 * `oldestAgeNote` explains where to find it instead of guessing.
 */
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

export interface QueueDepth {
  readonly url: string;
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
  /** Seconds since the oldest available or in-flight message was sent, when the broker says (the embedded queue). */
  readonly oldestAgeSeconds?: number;
  /** The DLQ's ARN from the queue's RedrivePolicy, and after how many receives. */
  readonly redrive?: { readonly deadLetterTargetArn: string; readonly maxReceiveCount: number };
}

export async function queueDepth(sqs: SQSClient, url: string): Promise<QueueDepth> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      // 'All' rather than a list: naming RedrivePolicy on a queue without one is an error on some brokers.
      AttributeNames: ['All'],
    }),
  );
  const redrive = parseRedrivePolicy(Attributes.RedrivePolicy);
  // Not in the SDK's attribute names (not an SQS attribute): only the embedded queue answers it.
  const age = (Attributes as Record<string, string | undefined>).ApproximateAgeOfOldestMessage;
  return {
    url,
    visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
    ...(age !== undefined && /^\d+$/.test(age) ? { oldestAgeSeconds: Number(age) } : {}),
    ...(redrive ? { redrive } : {}),
  };
}

/** Parses SQS's RedrivePolicy attribute (a JSON string); undefined when absent or unreadable. */
export function parseRedrivePolicy(text: string | undefined): QueueDepth['redrive'] {
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
    if (typeof parsed.deadLetterTargetArn !== 'string') return undefined;
    return { deadLetterTargetArn: parsed.deadLetterTargetArn, maxReceiveCount: Number(parsed.maxReceiveCount) };
  } catch {
    return undefined;
  }
}

/** The queue name at the end of a queue URL (`…/123456789012/name` → `name`). */
export function queueName(url: string): string {
  return url.replace(/\/+$/, '').split('/').pop() ?? url;
}

/** True for a queue on AWS SQS itself (not a local broker). */
export function isAwsQueue(url: string): boolean {
  return /^https:\/\/sqs[.-][a-z0-9-]+\.amazonaws\.com(\.cn)?\//.test(url) || /^https:\/\/[a-z0-9-]+\.queue\.amazonaws\.com\//.test(url);
}

/** Where the age of the oldest message can be found for this queue (pure). */
export function oldestAgeNote(url: string, region: string, ageSeconds?: number): string {
  if (ageSeconds !== undefined) return `${ageSeconds}s`;
  if (!isAwsQueue(url)) {
    return 'n/a for this broker (ElasticMQ has no equivalent and SQS no API for it; on AWS it is the CloudWatch metric ApproximateAgeOfOldestMessage; the embedded queue reports it)';
  }
  return (
    `see CloudWatch: aws cloudwatch get-metric-statistics --region ${region} --namespace AWS/SQS --metric-name ApproximateAgeOfOldestMessage ` +
    `--dimensions Name=QueueName,Value=${queueName(url)} --statistics Maximum --period 60 ` +
    '--start-time $(date -u -d -5min +%FT%TZ) --end-time $(date -u +%FT%TZ)'
  );
}
