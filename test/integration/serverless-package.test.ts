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
    assert.equal(queue.QueueName, 'operless-memcached-ci-work', 'stage-aware name');
    assert.equal(dlq.QueueName, 'operless-memcached-ci-dlq');
    assert.deepEqual(queue.RedrivePolicy.deadLetterTargetArn, getAtt('DeadLetterQueue'));
    assert.ok(queue.RedrivePolicy.maxReceiveCount >= 1);
    const fn = resources.MemcachedLambdaFunction?.Properties as Json;
    const [[, esm]] = byType(result, 'AWS::Lambda::EventSourceMapping') as [[string, CloudFormationResource]];
    const window = (esm.Properties as Json).MaximumBatchingWindowInSeconds;
    assert.ok(queue.VisibilityTimeout >= 6 * fn.Timeout + window, `visibility ${queue.VisibilityTimeout} < 6 x ${fn.Timeout} + ${window}`);
    assert.ok(dlq.MessageRetentionPeriod > queue.MessageRetentionPeriod, 'the DLQ keeps messages longer than the queue');
  });

  await t.test('event source mapping: batches, partial batch responses, maximum concurrency', () => {
    const mappings = byType(result, 'AWS::Lambda::EventSourceMapping');
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
    assert.deepEqual(functions.map(([id]) => id).sort(), ['MemcachedLambdaFunction', 'ResyncLambdaFunction']);
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
          const allowed = action === 'sqs:SendMessage'
            ? [getAtt('WorkQueue'), getAtt('DeadLetterQueue')]
            : [getAtt('WorkQueue')];
          for (const r of resourcesOf) assert.ok(allowed.some((a) => JSON.stringify(a) === JSON.stringify(r)), `${action} on ${JSON.stringify(r)}`);
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
    assert.deepEqual(result.template.Conditions?.UsesEks, { 'Fn::Not': [{ 'Fn::Equals': ['', ''] }] });
    assert.deepEqual(result.template.Conditions?.UsesVpc, { 'Fn::Not': [{ 'Fn::Equals': ['', ''] }] });
  });

  await t.test('bundles: one ESM file per function that loads and exports handler; sizes recorded', async () => {
    assert.deepEqual(result.functions.map((f) => f.name), ['memcached', 'resync']);
    for (const fn of result.functions) {
      t.diagnostic(`${fn.name}: zip ${fn.zipBytes} bytes, bundle ${fn.bundleEntry} ${fn.bundleBytes} bytes`);
      assert.equal(fn.bundleEntry, `functions/${fn.name}.mjs`);
      assert.ok(fn.bundleBytes <= 1.5 * 1024 * 1024, `${fn.name} bundle is ${fn.bundleBytes} bytes, over the 1.5 MiB budget`);
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
    },
  });
  const resources = result.template.Resources;
  const eks = (resources.EksAccessPolicy?.Properties as Json | undefined)?.PolicyDocument.Statement;
  assert.deepEqual(eks, [{
    Effect: 'Allow',
    Action: ['eks:DescribeCluster'],
    Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/shop-eks' },
  }]);
  assert.deepEqual((resources.EksAccessPolicy?.Properties as Json | undefined)?.Roles, [{ Ref: 'IamRoleLambdaExecution' }]);
  const ssm = (resources.KubeconfigParameterPolicy?.Properties as Json | undefined)?.PolicyDocument.Statement;
  assert.deepEqual(ssm, [{
    Effect: 'Allow',
    Action: ['ssm:GetParameter'],
    Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/operless/kubeconfig' },
  }]);
  const fn = resources.MemcachedLambdaFunction?.Properties as Json;
  assert.equal(fn.Environment.Variables.OPERLESS_EKS_CLUSTER, 'shop-eks');
  assert.equal(fn.Environment.Variables.OPERLESS_KUBECONFIG_SSM_PARAMETER, '/operless/kubeconfig');
  assert.equal(fn.Environment.Variables.OPERLESS_CLUSTER, 'shop-eu');
  assert.deepEqual(fn.VpcConfig['Fn::If'][1].SubnetIds, { 'Fn::Split': [',', 'subnet-1,subnet-2'] });
  assert.deepEqual(result.template.Conditions?.UsesVpc, { 'Fn::Not': [{ 'Fn::Equals': ['subnet-1,subnet-2', ''] }] });
  assert.equal((resources.WorkQueue?.Properties as Json | undefined)?.QueueName, 'operless-memcached-prod-work');

  // The EventBridge sink: the bus, a rule for the kind passing the bare message to the work
  // queue, the queue policy letting only that rule send, and the archive.
  assert.deepEqual(result.template.Conditions?.UsesEventBus, { 'Fn::Not': [{ 'Fn::Equals': ['shop-events', ''] }] });
  assert.equal((resources.EventBus?.Properties as Json | undefined)?.Name, 'shop-events');
  const rule = resources.MemcachedEventRule?.Properties as Json;
  assert.deepEqual(rule.EventPattern, { source: ['operless'], detail: { kind: ['Memcached'] } });
  assert.deepEqual(rule.Targets, [{ Id: 'work-queue', Arn: getAtt('WorkQueue'), InputPath: '$.detail' }]);
  const policy = resources.WorkQueueEventsPolicy?.Properties as Json;
  assert.deepEqual(policy.PolicyDocument.Statement[0].Condition, { ArnEquals: { 'aws:SourceArn': getAtt('MemcachedEventRule') } });
  assert.deepEqual(policy.PolicyDocument.Statement[0].Principal, { Service: 'events.amazonaws.com' });
  assert.equal(Number((resources.EventArchive?.Properties as Json | undefined)?.RetentionDays), 30); // a --param is a string; CloudFormation takes either
  for (const id of ['EventBus', 'MemcachedEventRule', 'WorkQueueEventsPolicy', 'EventArchive']) assert.equal(resources[id]?.Condition, 'UsesEventBus', id);
});
