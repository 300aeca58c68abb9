/**
 * `serverless package` (osls + serverless-esbuild) runs offline with no credentials and
 * produces the CloudFormation this project promises: queue + DLQ + redrive, the event source
 * mapping with partial batch responses and a concurrency cap, Node 24 on arm64, IAM scoped to
 * its own resources. Each function's zip and bundle size is recorded as a test diagnostic.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { extractBundle, packageService, type CloudFormationResource, type PackageResult } from '../../scripts/package.ts';
import { createdResources, isTrue, resolveValue } from '../support/cfn-conditions.ts';

type Json = Record<string, any>;

const byType = (result: PackageResult, type: string): [string, CloudFormationResource][] =>
  Object.entries(result.template.Resources).filter(([, r]) => r.Type === type);
const getAtt = (logicalId: string) => ({ 'Fn::GetAtt': [logicalId, 'Arn'] });

const work = mkdtempSync(join(tmpdir(), 'operless-package-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

test('default parameters: queues, event source mapping, runtime, IAM', async (t) => {
  const result = await packageService({ stage: 'ci', outDir: join(work, 'default') });
  const resources = result.template.Resources;

  await t.test('work queue with a DLQ redrive and a visibility timeout >= 6 x timeout + window', () => {
    const queue = resources.WorkQueue?.Properties as Json;
    const dlq = resources.DeadLetterQueue?.Properties as Json;
    // Stage-aware names; a FIFO queue's ends in .fifo (ordering: per-key).
    assert.deepEqual(queue.QueueName, { 'Fn::If': ['PerKeyOrdering', 'operless-memcached-ci-work.fifo', 'operless-memcached-ci-work'] });
    assert.deepEqual(dlq.QueueName, { 'Fn::If': ['PerKeyOrdering', 'operless-memcached-ci-dlq.fifo', 'operless-memcached-ci-dlq'] });
    assert.deepEqual(queue.RedrivePolicy.deadLetterTargetArn, getAtt('DeadLetterQueue'));
    assert.ok(queue.RedrivePolicy.maxReceiveCount >= 1);
    const fn = resources.MemcachedLambdaFunction?.Properties as Json;
    const [, esm] = byType(result, 'AWS::Lambda::EventSourceMapping').find(([, r]) => r.Condition === undefined)!;
    const window = (esm.Properties as Json).MaximumBatchingWindowInSeconds;
    assert.ok(queue.VisibilityTimeout >= 6 * fn.Timeout + window, `visibility ${queue.VisibilityTimeout} < 6 x ${fn.Timeout} + ${window}`);
    assert.ok(dlq.MessageRetentionPeriod > queue.MessageRetentionPeriod, 'the DLQ keeps messages longer than the queue');
  });

  await t.test('event source mapping: batches, partial batch responses, maximum concurrency', () => {
    // Besides the per-key delay queue's mapping, which exists only under its condition.
    const mappings = byType(result, 'AWS::Lambda::EventSourceMapping').filter(([, r]) => r.Condition === undefined);
    assert.equal(mappings.length, 1);
    const esm = mappings[0]![1].Properties as Json;
    assert.deepEqual(esm.EventSourceArn, getAtt('WorkQueue'));
    assert.deepEqual(esm.FunctionName, getAtt('MemcachedLambdaFunction'));
    assert.deepEqual(esm.FunctionResponseTypes, ['ReportBatchItemFailures']);
    assert.equal(esm.BatchSize, 10);
    assert.ok(esm.MaximumBatchingWindowInSeconds >= 0 && esm.MaximumBatchingWindowInSeconds <= 300);
    assert.equal(esm.ScalingConfig.MaximumConcurrency, 5);
  });

  await t.test('functions: nodejs24.x on arm64, ESM handlers, queue URLs in the environment', () => {
    const functions = byType(result, 'AWS::Lambda::Function');
    assert.deepEqual(functions.map(([id]) => id).sort(), ['MemcachedLambdaFunction', 'ResyncLambdaFunction', 'WebhooksLambdaFunction']);
    for (const [, fn] of functions) {
      const p = fn.Properties as Json;
      assert.equal(p.Runtime, 'nodejs24.x');
      assert.deepEqual(p.Architectures, ['arm64']);
      assert.deepEqual(p.Environment.Variables.OPERLESS_QUEUE_URL, { Ref: 'WorkQueue' });
      assert.equal(p.Environment.Variables.OPERLESS_CLUSTER, 'default');
      assert.match(p.FunctionName, /^operless-memcached-ci-/);
    }
    const memcached = resources.MemcachedLambdaFunction?.Properties as Json;
    assert.deepEqual(memcached.Environment.Variables.OPERLESS_DLQ_URL, { Ref: 'DeadLetterQueue' });
    const [[, rule]] = byType(result, 'AWS::Events::Rule') as [[string, CloudFormationResource]];
    assert.match((rule.Properties as Json).ScheduleExpression, /^rate\(/);
  });

  await t.test('IAM: send only to its own queues; receive/delete only on the work queue; logs scoped; nothing else', () => {
    const role = resources.IamRoleLambdaExecution?.Properties as Json;
    const statements = role.Policies.flatMap((p: Json) => p.PolicyDocument.Statement) as Json[];
    for (const s of statements) {
      assert.equal(s.Effect, 'Allow');
      const resourcesOf = ([] as unknown[]).concat(s.Resource);
      assert.ok(!resourcesOf.includes('*'), `statement ${JSON.stringify(s.Action)} has Resource "*"`);
      for (const action of s.Action as string[]) {
        if (action.startsWith('sqs:')) {
          const allowed = action === 'sqs:SendMessage' ? [getAtt('WorkQueue'), getAtt('DeadLetterQueue')] : [getAtt('WorkQueue')];
          for (const r of resourcesOf)
            assert.ok(
              allowed.some((a) => JSON.stringify(a) === JSON.stringify(r)),
              `${action} on ${JSON.stringify(r)}`,
            );
        } else {
          assert.ok(action.startsWith('logs:'), `unexpected action ${action}`);
          for (const r of resourcesOf) assert.match(JSON.stringify(r), /log-group:\/aws\/lambda\/operless-memcached-ci/);
        }
      }
    }
    const actions = statements.flatMap((s) => s.Action);
    assert.ok(actions.includes('sqs:SendMessage'));
    assert.ok(actions.includes('sqs:ReceiveMessage') && actions.includes('sqs:DeleteMessage'));
    assert.ok(!actions.some((a: string) => a.startsWith('eks:') || a.startsWith('ssm:')), 'EKS/SSM only through the conditional policies');
    assert.equal(resources.EksAccessPolicy?.Condition, 'UsesEks');
    assert.equal(resources.KubeconfigParameterPolicy?.Condition, 'UsesKubeconfigParameter');
    // The conditions are false with the default (empty) parameters.
    for (const condition of ['UsesEks', 'UsesKubeconfigParameter', 'UsesVpc']) assert.equal(isTrue(result.template, condition), false, condition);
  });

  await t.test('alarms: DLQ not empty, work queue oldest message too old; no actions without alarmTopicArn', () => {
    const dlq = resolveValue(result.template, resources.DeadLetterQueueAlarm?.Properties) as Json;
    assert.equal(dlq.MetricName, 'ApproximateNumberOfMessagesVisible');
    assert.deepEqual(dlq.Dimensions, [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['DeadLetterQueue', 'QueueName'] } }]);
    assert.equal(dlq.ComparisonOperator, 'GreaterThanThreshold');
    assert.equal(dlq.Threshold, 0, 'one message in the DLQ alarms');
    const age = resolveValue(result.template, resources.WorkQueueAgeAlarm?.Properties) as Json;
    assert.equal(age.MetricName, 'ApproximateAgeOfOldestMessage');
    assert.deepEqual(age.Dimensions, [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['WorkQueue', 'QueueName'] } }]);
    assert.equal(age.Threshold, 900);
    for (const alarm of [dlq, age]) {
      assert.equal(alarm.Namespace, 'AWS/SQS');
      assert.equal(alarm.TreatMissingData, 'notBreaching');
      assert.deepEqual(alarm.AlarmActions, { Ref: 'AWS::NoValue' }, 'no topic: no actions');
    }
  });

  await t.test('hardening: deployment bucket private and versioned, failed resyncs to the DLQ', () => {
    const bucket = resources.ServerlessDeploymentBucket?.Properties as Json;
    assert.deepEqual(bucket.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    assert.deepEqual(bucket.VersioningConfiguration, { Status: 'Enabled' });
    assert.deepEqual((resources.ResyncLambdaFunction!.Properties as Json).DeadLetterConfig, { TargetArn: getAtt('DeadLetterQueue') });
    for (const id of ['MemcachedLogGroup', 'ResyncLogGroup']) {
      const group = resolveValue(result.template, resources[id]?.Properties) as Json;
      assert.equal(group.RetentionInDays, 14, `${id} retention`);
      assert.deepEqual(group.KmsKeyId, { Ref: 'AWS::NoValue' }, `${id}: no KMS key by default`);
    }
  });

  await t.test('bundles: per function an ESM entry and its own chunks that load and export handler; sizes recorded', async () => {
    assert.deepEqual(
      result.functions.map((f) => f.name),
      ['memcached', 'resync', 'webhooks'],
    );
    for (const fn of result.functions) {
      t.diagnostic(
        `${fn.name}: zip ${fn.zipBytes} bytes, bundle ${fn.bundleEntry}: cold start loads ${fn.bundleBytes} bytes, ${fn.bundleTotalBytes} bytes in ${fn.bundleFiles.length} files`,
      );
      assert.equal(fn.bundleEntry, `functions/${fn.name}.mjs`);
      // Code splitting (serverless.yml): the chunks sit in the function's own folder, and its
      // zip holds no other function's chunks (describeZip refuses a module the entry never imports).
      const chunks = fn.bundleFiles.slice(1);
      assert.ok(chunks.length > 0, `${fn.name}: lazily imported code is split into chunks`);
      for (const chunk of chunks) assert.ok(chunk.startsWith(`functions/${fn.name}.chunks/`), `${fn.name}: chunk ${chunk} in its own folder`);
      assert.ok(fn.bundleBytes < fn.bundleTotalBytes, `${fn.name}: a cold start loads less than the whole bundle`);
      assert.ok(fn.bundleTotalBytes <= 1.5 * 1024 * 1024, `${fn.name} bundle (entry + chunks) is ${fn.bundleTotalBytes} bytes, over the 1.5 MiB budget`);
      const path = extractBundle(fn);
      const mod = (await import(pathToFileURL(path).href)) as { handler?: unknown };
      assert.equal(typeof mod.handler, 'function', `${fn.bundleEntry} exports handler`);
    }
    t.diagnostic(`serverless package took ${result.durationMs} ms`);
  });
});

test('EKS, kubeconfig parameter and VPC parameters: scoped policies and VPC config', async () => {
  const result = await packageService({
    stage: 'prod',
    outDir: join(work, 'params'),
    params: {
      clusterName: 'shop-eks',
      kubeconfigParameter: '/operless/kubeconfig',
      subnetIds: 'subnet-1,subnet-2',
      securityGroupIds: 'sg-1',
      clusterId: 'shop-eu',
      eventBusName: 'shop-events',
      eventArchiveRetentionDays: '30',
      alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:ops',
      oldestMessageAlarmSeconds: '120',
      deadLetterAlarmThreshold: '3',
      logKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/k',
    },
  });
  const resources = result.template.Resources;
  const eks = (resources.EksAccessPolicy?.Properties as Json | undefined)?.PolicyDocument.Statement;
  assert.deepEqual(eks, [
    {
      Effect: 'Allow',
      Action: ['eks:DescribeCluster'],
      Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}' },
    },
  ]);
  assert.equal(resolveValue(result.template, eks?.[0]?.Resource), 'arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/shop-eks');
  assert.deepEqual((resources.EksAccessPolicy?.Properties as Json | undefined)?.Roles, [{ Ref: 'IamRoleLambdaExecution' }]);
  const ssm = (resources.KubeconfigParameterPolicy?.Properties as Json | undefined)?.PolicyDocument.Statement;
  assert.deepEqual(ssm, [
    {
      Effect: 'Allow',
      Action: ['ssm:GetParameter'],
      Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${KubeconfigParameter}' },
    },
  ]);
  assert.equal(resolveValue(result.template, ssm?.[0]?.Resource), 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/operless/kubeconfig');
  const fn = resources.MemcachedLambdaFunction?.Properties as Json;
  assert.equal(fn.Environment.Variables.OPERLESS_EKS_CLUSTER, 'shop-eks');
  assert.equal(fn.Environment.Variables.OPERLESS_KUBECONFIG_SSM_PARAMETER, '/operless/kubeconfig');
  assert.equal(fn.Environment.Variables.OPERLESS_CLUSTER, 'shop-eu');
  assert.deepEqual(resolveValue(result.template, fn.VpcConfig), { SubnetIds: ['subnet-1', 'subnet-2'], SecurityGroupIds: ['sg-1'] });
  for (const condition of ['UsesEks', 'UsesKubeconfigParameter', 'UsesVpc']) assert.equal(isTrue(result.template, condition), true, condition);
  assert.equal((resources.WorkQueue?.Properties as Json | undefined)?.QueueName['Fn::If'][2], 'operless-memcached-prod-work');
  const dlqAlarm = resolveValue(result.template, resources.DeadLetterQueueAlarm?.Properties) as Json;
  const ageAlarm = resolveValue(result.template, resources.WorkQueueAgeAlarm?.Properties) as Json;
  assert.equal(Number(dlqAlarm.Threshold), 3, 'a --param arrives as a string; CloudFormation reads it as the number');
  assert.equal(Number(ageAlarm.Threshold), 120);
  for (const alarm of [dlqAlarm, ageAlarm]) {
    assert.deepEqual(alarm.AlarmActions, ['arn:aws:sns:us-east-1:123456789012:ops']);
    assert.deepEqual(alarm.OKActions, ['arn:aws:sns:us-east-1:123456789012:ops']);
  }
  assert.equal((resolveValue(result.template, resources.MemcachedLogGroup?.Properties) as Json).KmsKeyId, 'arn:aws:kms:us-east-1:123456789012:key/k');

  // The EventBridge sink: the bus, a rule for the kind passing the bare message to the work
  // queue, the queue policy letting only that rule send, and the archive.
  assert.ok(isTrue(result.template, 'UsesEventBus'));
  assert.equal(resolveValue(result.template, (resources.EventBus?.Properties as Json | undefined)?.Name), 'shop-events');
  const rule = resources.MemcachedEventRule?.Properties as Json;
  assert.deepEqual(rule.EventPattern, { source: ['operless'], detail: { kind: ['Memcached'] } });
  assert.deepEqual(resolveValue(result.template, rule.Targets), [
    {
      Id: 'work-queue',
      Arn: getAtt('WorkQueue'),
      InputPath: '$.detail',
      RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86400 },
      DeadLetterConfig: { Arn: getAtt('EventRuleDeadLetterQueue') },
    },
  ]);
  assertRuleDeadLetters(result);
  // One queue policy (a queue has one): the rule's Allow; no forwarderRoleArn here, so no Deny.
  const statements = resolveValue(result.template, (resources.WorkQueuePolicy?.Properties as Json | undefined)?.PolicyDocument.Statement) as Json[];
  assert.deepEqual(
    statements.map((st) => st.Sid),
    ['EventRuleSends'],
  );
  assert.deepEqual(statements[0]!.Condition, { ArnEquals: { 'aws:SourceArn': getAtt('MemcachedEventRule') } });
  assert.deepEqual(statements[0]!.Principal, { Service: 'events.amazonaws.com' });
  assert.equal(Number((resources.EventArchive?.Properties as Json | undefined)?.RetentionDays), 30); // a --param is a string; CloudFormation takes either
  for (const id of ['EventBus', 'MemcachedEventRule', 'EventArchive']) assert.equal(resources[id]?.Condition, 'UsesEventBus', id);
});

/**
 * What the rule cannot deliver is kept and alarmed: the target's dead-letter queue (standard:
 * EventBridge takes no FIFO one), writable by the rule only, its depth alarmed, and the
 * rule's FailedInvocations alarmed under the custom bus's dimensions (both, or the metric is
 * another one).
 */
function assertRuleDeadLetters(result: PackageResult): void {
  const resources = result.template.Resources;
  const created = createdResources(result.template);
  for (const id of ['EventRuleDeadLetterQueue', 'EventRuleDeadLetterQueuePolicy', 'EventRuleDeadLetterQueueAlarm', 'EventRuleFailedInvocationsAlarm']) {
    assert.equal(resources[id]?.Condition, 'UsesEventBus', id);
    assert.ok(created.includes(id), `${id} is created`);
  }
  const dlq = resources.EventRuleDeadLetterQueue!.Properties as Json;
  assert.equal(dlq.FifoQueue, undefined, 'a standard queue');
  assert.equal(dlq.SqsManagedSseEnabled, true);
  const policy = resources.EventRuleDeadLetterQueuePolicy!.Properties as Json;
  assert.deepEqual(policy.Queues, [{ Ref: 'EventRuleDeadLetterQueue' }]);
  assert.deepEqual(
    policy.PolicyDocument.Statement,
    [
      {
        Sid: 'EventRuleDeadLetters',
        Effect: 'Allow',
        Principal: { Service: 'events.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: getAtt('EventRuleDeadLetterQueue'),
        Condition: { ArnEquals: { 'aws:SourceArn': getAtt('MemcachedEventRule') } },
      },
      {
        Sid: 'OnlyEventRuleSends',
        Effect: 'Deny',
        Principal: '*',
        Action: ['sqs:SendMessage'],
        Resource: getAtt('EventRuleDeadLetterQueue'),
        Condition: { ArnNotEquals: { 'aws:SourceArn': getAtt('MemcachedEventRule') } },
      },
    ],
    'only the rule writes its dead letters; every other sender is denied',
  );
  const depth = resolveValue(result.template, resources.EventRuleDeadLetterQueueAlarm!.Properties) as Json;
  assert.equal(depth.MetricName, 'ApproximateNumberOfMessagesVisible');
  assert.deepEqual(depth.Dimensions, [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['EventRuleDeadLetterQueue', 'QueueName'] } }]);
  assert.equal(depth.Threshold, 0);
  assert.equal(depth.ComparisonOperator, 'GreaterThanThreshold');
  const rule = resources.MemcachedEventRule!.Properties as Json;
  const failed = resolveValue(result.template, resources.EventRuleFailedInvocationsAlarm!.Properties) as Json;
  assert.equal(failed.Namespace, 'AWS/Events');
  assert.equal(failed.MetricName, 'FailedInvocations');
  assert.deepEqual(
    failed.Dimensions,
    [
      { Name: 'EventBusName', Value: resolveValue(result.template, { Ref: 'EventBusName' }) },
      { Name: 'RuleName', Value: rule.Name },
    ],
    "the rule's own name on its own bus",
  );
  assert.equal(failed.Statistic, 'Sum');
  assert.equal(failed.TreatMissingData, 'notBreaching', 'EventBridge emits it only when non-zero');
}

// Issue 29 item 9: a rule's SqsParameters.MessageGroupId is one static string, so with a FIFO
// work queue the rule delivers to the standard delay queue and the mover moves each event into
// the FIFO queue grouped by its key (the earlier template targeted the FIFO queue with no group:
// undeployable, or every event lost).
test('eventBusName with ordering per-key: the rule delivers to the standard delay queue, which only the functions and the rule may send to', async () => {
  const forwarder = 'arn:aws:iam::123456789012:role/operless-forwarder';
  const result = await packageService({
    stage: 'ci',
    outDir: join(work, 'per-key-bus'),
    params: { ordering: 'per-key', eventBusName: 'b', forwarderRoleArn: forwarder },
  });
  const resources = result.template.Resources;
  const rule = resources.MemcachedEventRule!.Properties as Json;
  const [target, ...others] = resolveValue(result.template, rule.Targets) as Json[];
  assert.equal(others.length, 0);
  assert.deepEqual(target!.Arn, getAtt('DelayQueue'), 'the delay queue under per-key');
  assert.equal(target!.Id, 'delay-queue');
  for (const condition of ['UsesEventBus', 'PerKeyOrdering', 'EventBusToDelayQueue']) assert.equal(isTrue(result.template, condition), true, condition);
  assert.equal(isTrue(result.template, 'EventBusToWorkQueue'), false);
  assert.equal(target!.SqsParameters, undefined, 'a standard queue: no message group (one static group would serialise every object)');
  assert.equal(target!.InputPath, '$.detail');
  assert.deepEqual(target!.DeadLetterConfig, { Arn: getAtt('EventRuleDeadLetterQueue') });
  assert.deepEqual(target!.RetryPolicy, { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86400 });
  const delay = resources.DelayQueue!.Properties as Json;
  assert.equal(delay.FifoQueue, undefined, 'the delay queue is standard');
  assertRuleDeadLetters(result);

  // The rule sends to the delay queue, not the work queue: the work queue's policy no longer
  // admits it; the delay queue's admits it and the functions only.
  const statementsOf = (id: string) => resolveValue(result.template, (resources[id]!.Properties as Json).PolicyDocument.Statement) as Json[];
  const role = getAtt('IamRoleLambdaExecution');
  assert.deepEqual(statementsOf('WorkQueuePolicy'), [
    {
      Sid: 'OnlyForwarderAndFunctionsSend',
      Effect: 'Deny',
      Principal: '*',
      Action: ['sqs:SendMessage'],
      Resource: getAtt('WorkQueue'),
      Condition: { ArnNotEquals: { 'aws:PrincipalArn': [forwarder, role] } },
    },
  ]);
  assert.deepEqual(statementsOf('DelayQueueSendPolicy'), [
    {
      Sid: 'OnlyFunctionsSend',
      Effect: 'Deny',
      Principal: '*',
      Action: ['sqs:SendMessage'],
      Resource: getAtt('DelayQueue'),
      Condition: { ArnNotEquals: { 'aws:PrincipalArn': [role], 'aws:SourceArn': getAtt('MemcachedEventRule') } },
    },
    {
      Sid: 'EventRuleSends',
      Effect: 'Allow',
      Principal: { Service: 'events.amazonaws.com' },
      Action: 'sqs:SendMessage',
      Resource: getAtt('DelayQueue'),
      Condition: { ArnEquals: { 'aws:SourceArn': getAtt('MemcachedEventRule') } },
    },
  ]);
});

test('ordering per-key: FIFO work queue and DLQ, a standard delay queue consumed by the same function, its URL in the environment', async () => {
  const result = await packageService({ stage: 'ci', outDir: join(work, 'per-key'), params: { ordering: 'per-key' } });
  const resources = result.template.Resources;
  const perKey = (value: unknown) => ({ 'Fn::If': ['PerKeyOrdering', value, { Ref: 'AWS::NoValue' }] });
  assert.deepEqual(result.template.Conditions?.PerKeyOrdering, { 'Fn::Equals': [{ Ref: 'Ordering' }, 'per-key'] });
  assert.equal(((result.template as unknown as Json).Parameters?.Ordering as Json | undefined)?.Default, 'per-key');
  const queue = resources.WorkQueue?.Properties as Json;
  assert.equal(queue.QueueName['Fn::If'][1], 'operless-memcached-ci-work.fifo');
  assert.deepEqual(queue.FifoQueue, perKey(true));
  assert.deepEqual(queue.DeduplicationScope, perKey('messageGroup'));
  assert.equal((resources.DeadLetterQueue!.Properties as Json).QueueName['Fn::If'][1], 'operless-memcached-ci-dlq.fifo');
  for (const id of ['DelayQueue', 'DelayDeadLetterQueue', 'DelayQueueEventSource', 'DelayQueuePolicy'])
    assert.equal(resources[id]?.Condition, 'PerKeyOrdering', id);
  const delayEsm = resources.DelayQueueEventSource?.Properties as Json;
  assert.deepEqual(delayEsm.EventSourceArn, getAtt('DelayQueue'));
  assert.deepEqual(delayEsm.FunctionName, getAtt('MemcachedLambdaFunction'));
  assert.deepEqual(delayEsm.FunctionResponseTypes, ['ReportBatchItemFailures']);
  const fn = resources.MemcachedLambdaFunction?.Properties as Json;
  assert.deepEqual(
    fn.Environment.Variables.OPERLESS_DELAY_QUEUE_URL,
    { 'Fn::If': ['PerKeyOrdering', { Ref: 'DelayQueue' }, ''] },
    "follows the stack's Ordering parameter (a plain Ref breaks Ordering=unordered, cfn-lint W1001)",
  );
  assert.deepEqual(
    fn.Environment.Variables.OPERLESS_ORDERING,
    { Ref: 'Ordering' },
    "the function is told its ordering, the stack's, and checks its queues against it at cold start",
  );
  const policy = (resources.DelayQueuePolicy!.Properties as Json).PolicyDocument.Statement as Json[];
  assert.deepEqual(
    policy.map((s) => s.Resource),
    [getAtt('DelayQueue')],
  );

  // Issue 29 item 10: what reaches the delay queue reaches the work queue through the mover, so
  // only the functions may send to it — without forwarderRoleArn too (the forwarder never does).
  for (const id of ['DelayQueueSendPolicy', 'DelayDeadLetterQueueAlarm', 'DelayQueueAgeAlarm']) {
    assert.equal(resources[id]?.Condition, 'PerKeyOrdering', id);
    assert.ok(createdResources(result.template).includes(id), `${id} is created`);
  }
  const sendPolicy = resources.DelayQueueSendPolicy!.Properties as Json;
  assert.deepEqual(sendPolicy.Queues, [{ Ref: 'DelayQueue' }]);
  assert.deepEqual(
    resolveValue(result.template, sendPolicy.PolicyDocument.Statement),
    [
      {
        Sid: 'OnlyFunctionsSend',
        Effect: 'Deny',
        Principal: '*',
        Action: ['sqs:SendMessage'],
        Resource: getAtt('DelayQueue'),
        Condition: { ArnNotEquals: { 'aws:PrincipalArn': [getAtt('IamRoleLambdaExecution')] } },
      },
    ],
    "every principal but the functions' role is denied SendMessage on the delay queue",
  );
  assert.equal(delayEsm.ScalingConfig?.MaximumConcurrency, 5, "the mover's invocations are capped as the work queue's");
  const delayDlqAlarm = resolveValue(result.template, resources.DelayDeadLetterQueueAlarm!.Properties) as Json;
  assert.equal(delayDlqAlarm.MetricName, 'ApproximateNumberOfMessagesVisible');
  assert.deepEqual(delayDlqAlarm.Dimensions, [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['DelayDeadLetterQueue', 'QueueName'] } }]);
  assert.equal(Number(delayDlqAlarm.Threshold), 0);
  const delayAgeAlarm = resolveValue(result.template, resources.DelayQueueAgeAlarm!.Properties) as Json;
  assert.equal(delayAgeAlarm.MetricName, 'ApproximateAgeOfOldestMessage');
  assert.deepEqual(delayAgeAlarm.Dimensions, [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['DelayQueue', 'QueueName'] } }]);
  assert.ok(Number(delayAgeAlarm.Threshold) > 900, "above one hop (SQS's longest delay), or every long requeue would alarm");
});

test("the bulk queue (unordered): its own mapping capped below the work queue's, the resync sends to it, alarmed, only the forwarder and the functions send; none with per-key ordering", async () => {
  const forwarder = 'arn:aws:iam::123456789012:role/forwarder';
  const result = await packageService({ stage: 'ci', outDir: join(work, 'bulk'), params: { forwarderRoleArn: forwarder } });
  const resources = result.template.Resources;
  const created = createdResources(result.template);
  for (const id of ['BulkQueue', 'BulkQueueEventSource', 'BulkQueueAccessPolicy', 'BulkQueuePolicy', 'BulkQueueAgeAlarm'])
    assert.ok(created.includes(id), `${id} is created`);
  const queue = resources.BulkQueue!.Properties as Json;
  assert.equal(queue.QueueName, 'operless-memcached-ci-bulk');
  assert.deepEqual(queue.RedrivePolicy.deadLetterTargetArn, getAtt('DeadLetterQueue'), 'what the backlog cannot reconcile ends in the DLQ');
  assert.equal(queue.VisibilityTimeout, (resources.WorkQueue!.Properties as Json).VisibilityTimeout);
  const esm = resources.BulkQueueEventSource!.Properties as Json;
  assert.deepEqual(esm.EventSourceArn, getAtt('BulkQueue'));
  assert.deepEqual(esm.FunctionName, getAtt('MemcachedLambdaFunction'));
  assert.deepEqual(esm.FunctionResponseTypes, ['ReportBatchItemFailures']);
  const [, workEsm] = byType(result, 'AWS::Lambda::EventSourceMapping').find(([, r]) => r.Condition === undefined)!;
  const live = (workEsm.Properties as Json).ScalingConfig.MaximumConcurrency;
  assert.ok(
    esm.ScalingConfig.MaximumConcurrency >= 2 && esm.ScalingConfig.MaximumConcurrency < live,
    `bulk ${esm.ScalingConfig.MaximumConcurrency} below live ${live}`,
  );
  const resync = resources.ResyncLambdaFunction!.Properties as Json;
  assert.deepEqual(resolveValue(result.template, resync.Environment.Variables.OPERLESS_BULK_QUEUE_URL), { Ref: 'BulkQueue' });
  assert.deepEqual(
    (resources.BulkQueueAccessPolicy!.Properties as Json).PolicyDocument.Statement.map((s: Json) => s.Resource),
    [getAtt('BulkQueue')],
  );
  assert.deepEqual(resolveValue(result.template, (resources.BulkQueuePolicy!.Properties as Json).PolicyDocument.Statement), [
    {
      Sid: 'OnlyForwarderAndFunctionsSend',
      Effect: 'Deny',
      Principal: '*',
      Action: ['sqs:SendMessage'],
      Resource: getAtt('BulkQueue'),
      Condition: { ArnNotEquals: { 'aws:PrincipalArn': [forwarder, getAtt('IamRoleLambdaExecution')] } },
    },
  ]);
  const alarm = resolveValue(result.template, resources.BulkQueueAgeAlarm!.Properties) as Json;
  assert.equal(alarm.MetricName, 'ApproximateAgeOfOldestMessage');
  assert.equal(Number(alarm.Threshold), 3600);

  const perKey = await packageService({ stage: 'ci', outDir: join(work, 'bulk-per-key'), params: { ordering: 'per-key' } });
  const perKeyCreated = createdResources(perKey.template);
  for (const id of ['BulkQueue', 'BulkQueueEventSource', 'BulkQueueAccessPolicy', 'BulkQueuePolicy', 'BulkQueueAgeAlarm'])
    assert.ok(!perKeyCreated.includes(id), `${id} is not created with per-key ordering`);
  assert.equal(
    resolveValue(perKey.template, (perKey.template.Resources.ResyncLambdaFunction!.Properties as Json).Environment.Variables.OPERLESS_BULK_QUEUE_URL),
    '',
    'per-key: the resync sends to the FIFO work queue',
  );
});
