/**
 * IAM of the packaged CloudFormation, checked on the template `serverless package` writes
 * (offline), across EVERY IAM resource — the Lambda execution role and each extra policy —
 * with the optional EKS/SSM parameters on. What test/integration/serverless-package.test.ts
 * already asserts statement by statement (the SQS actions per queue, the EKS/SSM statements)
 * is not repeated; this adds the blanket rules:
 *
 * - no wildcard action (`*`, `sqs:*`, `logs:*`, ...), no `Resource: "*"`, and a `*` inside a
 *   resource ARN only in the service's own log groups (`/aws/lambda/<service>-<stage>*:*`, the
 *   serverless default naming every function of the service and stage, and their streams);
 * - no `NotAction`/`NotResource`, and no managed policy (AWS managed policies such as
 *   AWSLambdaSQSQueueExecutionRole grant SQS on every queue) except
 *   AWSLambdaVPCAccessExecutionRole, only under the `UsesVpc` condition;
 * - no IAM, STS or KMS administration actions (`iam:*`, `sts:AssumeRole`, `iam:PassRole`);
 * - the role trusts only `lambda.amazonaws.com`;
 * - no credentials in the functions' environment;
 * - the optional grants exist exactly when configured, as CloudFormation decides them from the
 *   stack parameters: kms:Decrypt on the kubeconfig's customer key (through SSM only),
 *   secretsmanager:GetSecretValue on the one secret behind /aws/reference/secretsmanager/, and
 *   the work queue's policy letting only the forwarder's and the functions' roles send, and the
 *   forwarder's role allowed lambda:InvokeFunction on exactly the webhooks function (a resource
 *   policy; no identity policy of the stack grants any lambda: action);
 * - every queue the stack creates, dead-letter queues included, has a queue policy denying
 *   SendMessage to every principal but the ones that must send (issue 29: the DLQs had none),
 *   and every dead-letter queue admits only its own source queues' redrive (RedriveAllowPolicy).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageService, type PackageResult } from '../../scripts/package.ts';
import { createdResources, resolveValue } from '../support/cfn-conditions.ts';

type Json = Record<string, any>;
const work = mkdtempSync(join(tmpdir(), 'operless-iam-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** The IAM actions the runtime calls, and nothing else (src/queue, src/kube/eks.ts, src/kube/factory.ts, CloudWatch Logs). */
const USED_ACTIONS = new Set([
  'sqs:SendMessage',
  'sqs:ReceiveMessage',
  'sqs:DeleteMessage',
  'sqs:GetQueueAttributes',
  'sqs:ChangeMessageVisibility',
  'logs:CreateLogStream',
  'logs:CreateLogGroup',
  'logs:PutLogEvents',
  'logs:TagResource',
  'eks:DescribeCluster',
  'ssm:GetParameter',
  // Only when configured: the SecureString's customer key, a Secrets Manager kubeconfig.
  'kms:Decrypt',
  'secretsmanager:GetSecretValue',
]);
/** The grants that exist only when their parameter is set. */
const OPTIONAL_GRANTS = ['KubeconfigKmsPolicy', 'SecretsManagerReferencePolicy', 'WorkQueuePolicy', 'WebhooksInvokePermission'];

function iamDocuments(result: PackageResult): { where: string; statements: Json[] }[] {
  const docs: { where: string; statements: Json[] }[] = [];
  for (const [id, r] of Object.entries(result.template.Resources)) {
    const p = (r.Properties ?? {}) as Json;
    if (r.Type === 'AWS::IAM::Role') {
      // The only managed policy: AWSLambdaVPCAccessExecutionRole, and only when the function runs in
      // a VPC (its ENI actions cannot be scoped to resources; AWS requires it for VPC functions).
      if (p.ManagedPolicyArns !== undefined) {
        assert.deepEqual(
          p.ManagedPolicyArns,
          {
            'Fn::If': [
              'UsesVpc',
              [{ 'Fn::Sub': 'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole' }],
              { Ref: 'AWS::NoValue' },
            ],
          },
          `${id}: no managed policy but the VPC execution role, and that only in a VPC`,
        );
      }
      for (const policy of p.Policies ?? [])
        docs.push({ where: `${id}/${policy.PolicyName?.['Fn::Join'] ? 'inline' : policy.PolicyName}`, statements: [].concat(policy.PolicyDocument.Statement) });
      const trust = [].concat(p.AssumeRolePolicyDocument.Statement) as Json[];
      for (const s of trust) {
        assert.equal(s.Effect, 'Allow');
        assert.deepEqual([].concat(s.Action), ['sts:AssumeRole'], `${id} trust: only sts:AssumeRole`);
        assert.deepEqual([].concat(s.Principal?.Service ?? []), ['lambda.amazonaws.com'], `${id} trusts only Lambda`);
        assert.equal(s.Principal?.AWS, undefined, `${id} trusts no account or user`);
      }
    } else if (r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy') {
      docs.push({ where: id, statements: [].concat(p.PolicyDocument.Statement) });
    } else {
      assert.ok(!/^AWS::IAM::(User|AccessKey|Group|InstanceProfile)$/.test(r.Type), `no ${r.Type} (${id})`);
    }
  }
  return docs;
}

function checkStatements(result: PackageResult): string[] {
  const problems: string[] = [];
  const docs = iamDocuments(result);
  assert.ok(docs.length > 0, 'the template has IAM policies');
  for (const { where, statements } of docs) {
    for (const s of statements) {
      const at = `${where} ${JSON.stringify(s.Action)}`;
      if (s.Effect !== 'Allow') problems.push(`${at}: Effect ${s.Effect}`);
      if (s.NotAction || s.NotResource || s.NotPrincipal) problems.push(`${at}: NotAction/NotResource/NotPrincipal`);
      for (const action of [].concat(s.Action) as string[]) {
        if (action.includes('*')) problems.push(`${at}: wildcard action ${action}`);
        if (!USED_ACTIONS.has(action)) problems.push(`${at}: ${action} is not an action the runtime uses`);
      }
      for (const resource of [].concat(s.Resource)) {
        const text = JSON.stringify(resource);
        if (resource === '*') problems.push(`${at}: Resource "*"`);
        // The function's own log groups: serverless's "/aws/lambda/<service>-<stage>*" (every
        // function of this service and stage) and ":*" for their streams. No other wildcard.
        const wild = text.replace(/log-group:\/aws\/lambda\/operless-memcached-(dev|prod|ci)\*?:\*(:\*)?/g, '');
        if (wild.includes('*')) problems.push(`${at}: wildcard in resource ${text}`);
      }
    }
  }
  return problems;
}

function checkEnvironment(result: PackageResult): void {
  for (const [id, r] of Object.entries(result.template.Resources)) {
    if (r.Type !== 'AWS::Lambda::Function') continue;
    const vars = ((r.Properties as Json).Environment?.Variables ?? {}) as Json;
    for (const name of Object.keys(vars)) {
      assert.doesNotMatch(
        name,
        /^AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN)$|TOKEN|PASSWORD|SECRET|KUBECONFIG_INLINE/i,
        `${id} has ${name} in its environment`,
      );
    }
  }
}

test('default parameters: every IAM statement is scoped (no wildcard action or resource, only actions the runtime uses)', async () => {
  const result = await packageService({ outDir: join(work, 'default') });
  assert.deepEqual(checkStatements(result), []);
  checkEnvironment(result);
  const created = createdResources(result.template);
  for (const id of OPTIONAL_GRANTS) assert.ok(id in result.template.Resources && !created.includes(id), `${id} is in the template but not created by default`);
});

test('with EKS and an SSM kubeconfig parameter: the extra policies are scoped too', async () => {
  const result = await packageService({
    stage: 'prod',
    outDir: join(work, 'eks'),
    // The reference prefix inside the name, not at its start: not a Secrets Manager reference.
    params: { clusterName: 'shop-eks', kubeconfigParameter: '/team/aws/reference/secretsmanager/kubeconfig', clusterId: 'shop-eu' },
  });
  assert.deepEqual(checkStatements(result), []);
  checkEnvironment(result);
  const created = createdResources(result.template);
  for (const id of OPTIONAL_GRANTS) assert.ok(!created.includes(id), `${id} is not created`);
  const all = iamDocuments(result)
    .filter((d) => created.includes(d.where.split('/')[0] ?? ''))
    .flatMap((d) => d.statements.flatMap((s) => ([] as string[]).concat(s.Action)));
  assert.ok(all.includes('eks:DescribeCluster') && all.includes('ssm:GetParameter'), 'the parameters add their scoped statements');
  for (const forbidden of ['iam:PassRole', 'sts:AssumeRole', 'kms:Decrypt', 'ssm:GetParameters', 'ssm:GetParametersByPath', 'eks:ListClusters']) {
    assert.ok(!all.includes(forbidden), `no ${forbidden}`);
  }
});

const ACCOUNT = '123456789012';
const KEY = `arn:aws:kms:eu-west-1:${ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab`;
const FORWARDER = `arn:aws:iam::${ACCOUNT}:role/operless-forwarder`;

test('customer key, Secrets Manager kubeconfig and forwarder role: each grant exactly as narrow as configured', async () => {
  const result = await packageService({
    stage: 'prod',
    outDir: join(work, 'configured'),
    params: { kubeconfigParameter: '/aws/reference/secretsmanager/operless/kubeconfig', kubeconfigKmsKeyArn: KEY, forwarderRoleArn: FORWARDER },
  });
  assert.deepEqual(checkStatements(result), []);
  const created = createdResources(result.template);
  for (const id of OPTIONAL_GRANTS) assert.ok(created.includes(id), `${id} is created`);
  const statementsOf = (id: string) => resolveValue(result.template, (result.template.Resources[id]!.Properties as Json).PolicyDocument.Statement) as Json[];

  assert.deepEqual(
    statementsOf('KubeconfigKmsPolicy'),
    [
      {
        Effect: 'Allow',
        Action: ['kms:Decrypt'],
        Resource: KEY,
        Condition: { StringEquals: { 'kms:ViaService': 'ssm.${AWS::Region}.amazonaws.com' } },
      },
    ],
    'decrypt with that key only, and only through SSM',
  );
  assert.deepEqual(
    statementsOf('SecretsManagerReferencePolicy'),
    [
      {
        Effect: 'Allow',
        Action: ['secretsmanager:GetSecretValue'],
        Resource: 'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:operless/kubeconfig-??????',
      },
    ],
    'the one secret behind the reference path',
  );

  const queuePolicy = result.template.Resources.WorkQueuePolicy?.Properties as Json;
  assert.deepEqual(queuePolicy.Queues, [{ Ref: 'WorkQueue' }]);
  assert.deepEqual(
    statementsOf('WorkQueuePolicy'),
    [
      {
        Sid: 'OnlyForwarderAndFunctionsSend',
        Effect: 'Deny',
        Principal: '*',
        Action: ['sqs:SendMessage'],
        Resource: { 'Fn::GetAtt': ['WorkQueue', 'Arn'] },
        Condition: { ArnNotEquals: { 'aws:PrincipalArn': [FORWARDER, { 'Fn::GetAtt': ['IamRoleLambdaExecution', 'Arn'] }] } },
      },
    ],
    'every other principal is denied SendMessage on the work queue',
  );

  // The forwarder invokes the webhooks function (and only it): one Lambda resource policy, on that
  // function, for that role, for that action. No other Lambda permission names the role.
  const permissions = Object.entries(result.template.Resources).filter(([id, r]) => r.Type === 'AWS::Lambda::Permission' && created.includes(id));
  const forRole = permissions.filter(([, r]) => resolveValue(result.template, (r.Properties as Json).Principal) === FORWARDER);
  assert.deepEqual(
    forRole.map(([id, r]) => [id, resolveValue(result.template, r.Properties)]),
    [
      [
        'WebhooksInvokePermission',
        {
          FunctionName: { 'Fn::GetAtt': ['WebhooksLambdaFunction', 'Arn'] },
          Action: 'lambda:InvokeFunction',
          Principal: FORWARDER,
        },
      ],
    ],
    'lambda:InvokeFunction on exactly the webhooks function, for the forwarder role only',
  );
  const webhooksFunction = result.template.Resources.WebhooksLambdaFunction;
  assert.ok(webhooksFunction, 'the webhooks function is in the template');
  assert.equal((webhooksFunction.Properties as Json).Handler, 'functions/webhooks.handler', 'the function it names is the webhooks handler');
});

const getAtt = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
const arnOf = (name: string) => `arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${AWS::AccountId}:${name}`;

/** Per created queue: the Deny-SendMessage statement of the queue policy naming it (undefined: none). */
function sendDenials(result: PackageResult): Map<string, Json | undefined> {
  const template = result.template;
  const created = createdResources(template);
  const queues = created.filter((id) => template.Resources[id]!.Type === 'AWS::SQS::Queue');
  const policies = created
    .filter((id) => template.Resources[id]!.Type === 'AWS::SQS::QueuePolicy')
    .map((id) => resolveValue(template, template.Resources[id]!.Properties) as Json);
  return new Map(
    queues.map((queue) => {
      const policy = policies.find((p) => (p.Queues as Json[]).some((q) => q.Ref === queue));
      const deny = ([].concat(policy?.PolicyDocument.Statement ?? []) as Json[]).find(
        (s) =>
          s.Effect === 'Deny' &&
          s.Principal === '*' &&
          ([] as string[]).concat(s.Action).includes('sqs:SendMessage') &&
          JSON.stringify(s.Resource) === JSON.stringify(getAtt(queue)),
      );
      return [queue, deny];
    }),
  );
}

test("every queue the stack creates, the dead-letter queues too, denies SendMessage to all but the principals that must send; a DLQ takes only its source queue's redrive", async () => {
  const role = getAtt('IamRoleLambdaExecution');
  const cases: { name: string; params: Record<string, string>; queues: string[] }[] = [
    { name: 'default', params: {}, queues: ['DeadLetterQueue'] },
    {
      name: 'per-key-bus',
      params: { ordering: 'per-key', eventBusName: 'b', forwarderRoleArn: FORWARDER },
      queues: ['DeadLetterQueue', 'WorkQueue', 'EventRuleDeadLetterQueue', 'DelayQueue', 'DelayDeadLetterQueue'],
    },
    { name: 'unordered-bus', params: { eventBusName: 'b', forwarderRoleArn: FORWARDER }, queues: ['DeadLetterQueue', 'WorkQueue', 'EventRuleDeadLetterQueue'] },
  ];
  for (const c of cases) {
    const result = await packageService({ stage: 'ci', outDir: join(work, `queues-${c.name}`), params: c.params });
    const denials = sendDenials(result);
    const perKey = c.params.ordering === 'per-key';
    // Without forwarderRoleArn the work queue stays open to the account (docs/deploy.md): only listed queues are checked.
    for (const queue of c.queues) assert.ok(denials.get(queue), `${c.name}: ${queue} has a queue policy denying SendMessage to other principals`);
    assert.deepEqual(
      denials.get('DeadLetterQueue')?.Condition,
      { ArnNotEquals: { 'aws:PrincipalArn': [role] } },
      `${c.name}: only the functions send to the DLQ`,
    );
    const resources = result.template.Resources;
    const redrive = (id: string) => resolveValue(result.template, (resources[id]!.Properties as Json).RedriveAllowPolicy) as Json;
    const sources = perKey ? [arnOf('operless-memcached-ci-work.fifo')] : [arnOf('operless-memcached-ci-work'), arnOf('operless-memcached-ci-bulk')];
    assert.deepEqual(
      redrive('DeadLetterQueue'),
      { redrivePermission: 'byQueue', sourceQueueArns: sources },
      `${c.name}: only the work queue (and, unordered, the bulk queue) redrives into the DLQ`,
    );
    assert.equal(
      (resolveValue(result.template, resources.WorkQueue!.Properties) as Json).QueueName,
      `operless-memcached-ci-work${perKey ? '.fifo' : ''}`,
      'the ARN names the work queue',
    );
    if (!perKey)
      assert.equal(
        (resolveValue(result.template, resources.BulkQueue!.Properties) as Json).QueueName,
        'operless-memcached-ci-bulk',
        'the ARN names the bulk queue',
      );
    if (perKey) {
      assert.equal(denials.get('DelayDeadLetterQueue')?.Condition, undefined, "nobody sends to the delay DLQ: only the delay queue's redrive fills it");
      assert.deepEqual(redrive('DelayDeadLetterQueue'), { redrivePermission: 'byQueue', sourceQueueArns: [arnOf('operless-memcached-ci-delay')] });
    }
    if (c.params.eventBusName) {
      assert.deepEqual(
        denials.get('EventRuleDeadLetterQueue')?.Condition,
        { ArnNotEquals: { 'aws:SourceArn': getAtt('MemcachedEventRule') } },
        `${c.name}: only the rule sends its dead letters`,
      );
    }
  }
});
