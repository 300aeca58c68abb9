/**
 * What `create api` inserts into serverless.yml for a kind (at the +operless:scaffold markers):
 * its reconcile function with its SQS event sources, its work queue and DLQ (FIFO by key plus a
 * delay queue with `per-key` ordering; with `unordered`, a bulk queue for the backlog of
 * resyncs and relists, consumed at its own lower concurrency), the DLQs' send and redrive-allow
 * policies, its stack outputs, and the names of the variables that give the resync function
 * its queue URLs. The same queues, policies and lanes as the repository's own serverless.yml
 * (docs/semantics.md, "Live changes before the backlog"). Pure text templates.
 */
import type { ApiEntry } from '../project-file.ts';
import { camel, constant, kebab } from '../names.ts';
import type { Ordering } from '../../contract/ordering.ts';

/** The environment variable that gives the resync function a kind's work queue URL: `WEB_APP_QUEUE_URL`. */
export function resyncQueueVariable(kind: string): string {
  return `${constant(kind)}_QUEUE_URL`;
}

/** The environment variable that gives the resync function an unordered kind's bulk queue URL: `WEB_APP_BULK_QUEUE_URL`. */
export function resyncBulkQueueVariable(kind: string): string {
  return `${constant(kind)}_BULK_QUEUE_URL`;
}

/**
 * The resync function's variables for a kind (at the resync-queues marker): its work queue
 * and, unordered, its bulk queue, where the resync sends instead (per-key order cannot span two
 * queues, so a per-key kind has none).
 */
export function resyncQueueVariables(api: ApiEntry, ordering: Ordering): string {
  const work = `${resyncQueueVariable(api.kind)}: !Ref ${api.kind}WorkQueue`;
  return ordering === 'per-key' ? work : `${work}\n${resyncBulkQueueVariable(api.kind)}: !Ref ${api.kind}BulkQueue`;
}

export function serverlessFunction(api: ApiEntry, ordering: Ordering): string {
  const file = kebab(api.kind);
  // per-key: the FIFO work queue takes no delayed message; requeues wait in the delay queue,
  // whose batches the same handler moves into the work queue when due.
  const delayEnv = ordering === 'per-key' ? `\n    OPERLESS_DELAY_QUEUE_URL: !Ref ${api.kind}DelayQueue` : '';
  // Its second event source: the delay queue's mover (per-key), or the bulk lane (unordered).
  const secondSource =
    ordering === 'per-key'
      ? `\n    - sqs:\n        arn: !GetAtt ${api.kind}DelayQueue.Arn\n        batchSize: 10\n        functionResponseType: ReportBatchItemFailures\n        # The mover's invocations count against the function's concurrency too.\n        maximumConcurrency: \${param:maximumConcurrency}`
      : `\n    # The backlog's own lane: the resync's and the forwarder's relists' messages, drained at
    # its own lower cap beside the work queue's, so a live change never waits behind them.
    - sqs:
        arn: !GetAtt ${api.kind}BulkQueue.Arn
        batchSize: 10
        functionResponseType: ReportBatchItemFailures
        maximumConcurrency: \${param:bulkMaximumConcurrency}`;
  return `${camel(api.kind)}:
  handler: functions/${file}.handler
  description: Reconciles ${api.kind} objects (${api.group}/${api.version}) from its work queue
  # The work queue's visibility timeout stays >= 6 x timeout + maximumBatchingWindow.
  timeout: 60
  environment:
    OPERLESS_QUEUE_URL: !Ref ${api.kind}WorkQueue
    OPERLESS_DLQ_URL: !Ref ${api.kind}DeadLetterQueue${delayEnv}
    # The kind's ordering, which the function checks its queues against at cold start.
    OPERLESS_ORDERING: ${ordering}
  events:
    - sqs:
        arn: !GetAtt ${api.kind}WorkQueue.Arn
        batchSize: 10
        # 0: invoke as soon as a record is there (a window adds up to its length to every
        # isolated change's lag); same-key events in one batch are still reconciled once.
        maximumBatchingWindow: 0
        functionResponseType: ReportBatchItemFailures
        maximumConcurrency: \${param:maximumConcurrency}${secondSource}
`;
}

/**
 * A queue policy denying `sqs:SendMessage` on `queue` to every principal but the functions'
 * role (`functions`), or to every principal (`nobody`: only a redrive, which is not a send, fills it).
 */
function sendDenied(id: string, queue: string, allowed: 'functions' | 'nobody'): string {
  const condition =
    allowed === 'functions'
      ? `
          Condition:
            ArnNotEquals:
              aws:PrincipalArn: [!GetAtt IamRoleLambdaExecution.Arn]`
      : '';
  return `${id}:
  Type: AWS::SQS::QueuePolicy
  Properties:
    Queues: [!Ref ${queue}]
    PolicyDocument:
      Version: '2012-10-17'
      Statement:
        - Sid: ${allowed === 'functions' ? 'OnlyFunctionsSend' : 'OnlyRedrive'}
          Effect: Deny
          Principal: '*'
          Action: [sqs:SendMessage]
          Resource: !GetAtt ${queue}.Arn${condition}`;
}

export function serverlessQueues(api: ApiEntry, ordering: Ordering): string {
  const file = kebab(api.kind);
  const perKey = ordering === 'per-key';
  const suffix = perKey ? '.fifo' : '';
  const fifo = perKey ? '\n    FifoQueue: true' : '';
  const fifoWork = perKey
    ? '\n    # One reconcile of a key at a time: message group = object key (high-throughput FIFO).\n    FifoQueue: true\n    DeduplicationScope: messageGroup\n    FifoThroughputLimit: perMessageGroupId'
    : '';
  // Queue ARNs written out by name: a GetAtt would make a queue and its DLQ depend on each other.
  const arnOf = (name: string) => `!Sub 'arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${AWS::AccountId}:\${self:service}-\${sls:stage}-${name}'`;
  const delay = perKey
    ? `${api.kind}DelayQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}-delay
    VisibilityTimeout: 361
    MessageRetentionPeriod: 1209600
    SqsManagedSseEnabled: true
    RedrivePolicy:
      deadLetterTargetArn: !GetAtt ${api.kind}DelayDeadLetterQueue.Arn
      maxReceiveCount: 5
${api.kind}DelayDeadLetterQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}-delay-dlq
    MessageRetentionPeriod: 1209600
    SqsManagedSseEnabled: true
    # Only the delay queue may name this queue as its dead-letter queue.
    RedriveAllowPolicy:
      redrivePermission: byQueue
      sourceQueueArns:
        - ${arnOf(`${file}-delay`)}
# Nobody sends to the delay DLQ: only the delay queue's redrive fills it (not a SendMessage,
# so not stopped here).
${sendDenied(`${api.kind}DelayDeadLetterQueuePolicy`, `${api.kind}DelayDeadLetterQueue`, 'nobody')}
# What reaches the delay queue reaches the work queue through the mover: only the functions'
# role may send to it, whatever another identity's policy grants.
${sendDenied(`${api.kind}DelayQueueSendPolicy`, `${api.kind}DelayQueue`, 'functions')}
`
    : '';
  // Unordered: the backlog's own queue (per-key order cannot span two queues, so a per-key
  // kind's backlog stays in its FIFO work queue's groups).
  const bulk = perKey
    ? ''
    : `# The backlog's own queue: the resync's Resyncs and the forwarder's resyncs and relists (its
# bulkQueueUrl). Consumed by the same function at bulkMaximumConcurrency, beside the work queue.
${api.kind}BulkQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}-bulk
    VisibilityTimeout: 361 # as the work queue: the same function consumes it
    MessageRetentionPeriod: 345600 # 4 days
    SqsManagedSseEnabled: true
    RedrivePolicy:
      deadLetterTargetArn: !GetAtt ${api.kind}DeadLetterQueue.Arn
      maxReceiveCount: 5
`;
  const sources = [arnOf(`${file}${suffix}`), ...(perKey ? [] : [arnOf(`${file}-bulk`)])];
  return `${delay}${api.kind}DeadLetterQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}-dlq${suffix}${fifo}
    MessageRetentionPeriod: 1209600 # 14 days: time to inspect and redrive
    SqsManagedSseEnabled: true
    # Only the kind's ${perKey ? 'work queue' : 'work and bulk queues'} may name this queue as ${perKey ? 'its' : 'their'} dead-letter queue.
    RedriveAllowPolicy:
      redrivePermission: byQueue
      sourceQueueArns:
${sources.map((arn) => `        - ${arn}`).join('\n')}
# Who may send to the DLQ: the functions (poison and exhausted messages) and nobody else,
# whatever their identity policy grants. A redrive is SQS moving the message, not a SendMessage.
${sendDenied(`${api.kind}DeadLetterQueuePolicy`, `${api.kind}DeadLetterQueue`, 'functions')}
${api.kind}WorkQueue:
  Type: AWS::SQS::Queue
  Properties:
    QueueName: \${self:service}-\${sls:stage}-${file}${suffix}${fifoWork}
    VisibilityTimeout: 361 # 6 x 60 s function timeout + 1 s batching window
    MessageRetentionPeriod: 345600 # 4 days
    SqsManagedSseEnabled: true
    RedrivePolicy:
      deadLetterTargetArn: !GetAtt ${api.kind}DeadLetterQueue.Arn
      maxReceiveCount: 5
${bulk}`;
}

export function serverlessOutputs(api: ApiEntry, ordering: Ordering): string {
  const bulk =
    ordering === 'per-key'
      ? ''
      : `${api.kind}BulkQueueUrl:
  Description: Queue the forwarder sends ${api.kind} resyncs and relists to (its bulkQueueUrl)
  Value: !Ref ${api.kind}BulkQueue
`;
  return `${api.kind}WorkQueueUrl:
  Description: Queue the forwarder sends ${api.kind} messages to
  Value: !Ref ${api.kind}WorkQueue
${bulk}${api.kind}DeadLetterQueueUrl:
  Value: !Ref ${api.kind}DeadLetterQueue
`;
}
