/**
 * Scaffolding decisions, without a cluster: name checks and derivations, owned-kind
 * resolution, marker insertion, refusal to overwrite, and what `create api` plans.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { checkDomain, checkGroup, checkKind, checkProjectName, checkVersion, fullGroup, kebab, pluralOf, ScaffoldError } from '../../../src/scaffold/names.ts';
import { BUILTIN_KINDS, resolveOwned } from '../../../src/scaffold/known-kinds.ts';
import { applyChanges, insertAtMarker } from '../../../src/scaffold/files.ts';
import { planCreateApi } from '../../../src/scaffold/api/plan.ts';
import { resyncQueueVariable } from '../../../src/scaffold/api/serverless.ts';
import { planInit } from '../../../src/scaffold/init/plan.ts';
import { parseProjectFile, type ProjectFile } from '../../../src/scaffold/project-file.ts';
import { scaffoldApi, scaffoldWebhook } from '../../../src/scaffold/index.ts';
import { createApi } from '../../../src/cli/commands/create-api.ts';
import { UsageError } from '../../../src/cli/args.ts';

describe('names', () => {
  test('group: DNS-1123, the domain is appended to a single label', () => {
    assert.equal(fullGroup('cache', 'example.com'), 'cache.example.com');
    assert.equal(fullGroup('tenancy.acme.io', 'example.com'), 'tenancy.acme.io');
    for (const bad of ['Cache', 'cache_x', '-cache', 'cache.', '']) assert.throws(() => fullGroup(bad, 'example.com'), /DNS-1123/);
    assert.equal(checkGroup('tenancy.acme.io'), 'tenancy.acme.io');
    assert.throws(() => checkGroup('Tenancy'), /--group "Tenancy" must be a DNS-1123 name/);
  });
  test('version like v1, v1beta1, v1alpha1', () => {
    for (const good of ['v1', 'v2beta3', 'v1alpha1']) assert.equal(checkVersion(good), good);
    for (const bad of ['1', 'v0', 'v1alpha', 'V1', 'v1gamma1']) assert.throws(() => checkVersion(bad), /must look like v1, v1beta1 or v1alpha1/);
  });
  test('kind in PascalCase', () => {
    for (const good of ['Memcached', 'CacheCluster', 'S3Bucket']) assert.equal(checkKind(good), good);
    for (const bad of ['memcached', 'Cache-Cluster', 'Cache_Cluster', '1Cache']) assert.throws(() => checkKind(bad), /PascalCase/);
  });
  test('domain and project name', () => {
    assert.throws(() => checkDomain('localhost'), /with a dot/);
    assert.throws(() => checkProjectName('My_Operator'), /lower-case/);
    assert.equal(checkProjectName('my-operator'), 'my-operator');
  });
  test('plurals and file names', () => {
    assert.deepEqual(['Memcached', 'Policy', 'Ingress', 'Box', 'Gateway'].map(pluralOf), ['memcacheds', 'policies', 'ingresses', 'boxes', 'gateways']);
    assert.equal(kebab('CacheCluster'), 'cache-cluster');
  });
});

describe('create api checks its arguments before looking for the project', () => {
  // An empty folder: no operless.json. Each bad name must get its naming error, not "no operless.json".
  const cases: [Record<string, string>, RegExp][] = [
    [{ kind: 'memcached' }, /--kind "memcached" must be PascalCase/],
    [{ version: 'v0' }, /--version "v0" must look like v1, v1beta1 or v1alpha1/],
    [{ group: 'Cache' }, /--group "Cache" must be a DNS-1123 name/],
  ];
  const valid = { group: 'cache', version: 'v1alpha1', kind: 'Memcached' };
  for (const [bad, message] of cases) {
    test(`${Object.keys(bad)[0]}: ${message.source}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'scaffold-unit-'));
      try {
        const options = { ...valid, ...bad };
        assert.throws(
          () => scaffoldApi(dir, { ...options, namespaced: true }),
          (err: Error) => err instanceof ScaffoldError && message.test(err.message),
        );
        const argv = ['--project', dir, '--group', options.group, '--version', options.version, '--kind', options.kind];
        await assert.rejects(createApi(argv), (err: Error) => err instanceof UsageError && message.test(err.message));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
  test('valid names outside a project: the missing project file is reported', () => {
    const dir = mkdtempSync(join(tmpdir(), 'scaffold-unit-'));
    try {
      assert.throws(() => scaffoldApi(dir, { ...valid, namespaced: true }), /no operless\.json in .*operless init/);
      assert.equal(existsSync(join(dir, 'operless.json')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('owned kinds', () => {
  test('known kinds by name or plural, in any case, without repeats', () => {
    const owned = resolveOwned('Deployment, services,configmap,Deployment', true);
    assert.deepEqual(
      owned.map((k) => `${k.apiVersion} ${k.kind} ${k.plural}`),
      ['apps/v1 Deployment deployments', 'v1 Service services', 'v1 ConfigMap configmaps'],
    );
  });
  test('an unknown kind is refused with the list of known ones', () => {
    assert.throws(
      () => resolveOwned('Widget', true),
      (err: Error) => err instanceof ScaffoldError && /unknown kind "Widget".*Deployment/.test(err.message),
    );
  });
  test('a namespaced owner cannot own a cluster-scoped kind; a cluster-scoped one can', () => {
    assert.throws(() => resolveOwned('Namespace', true), /--cluster-scoped/);
    assert.equal(resolveOwned('Namespace,ResourceQuota', false).length, 2);
  });
  test('the built-in kinds carry the REST plural and scope the API server serves them under', () => {
    const byKind = new Map(BUILTIN_KINDS.map((k) => [k.kind, k]));
    const expected: [string, string, string, boolean][] = [
      ['Ingress', 'networking.k8s.io/v1', 'ingresses', true],
      ['NetworkPolicy', 'networking.k8s.io/v1', 'networkpolicies', true],
      ['PersistentVolumeClaim', 'v1', 'persistentvolumeclaims', true],
      ['HorizontalPodAutoscaler', 'autoscaling/v2', 'horizontalpodautoscalers', true],
      ['Namespace', 'v1', 'namespaces', false],
      ['ClusterRoleBinding', 'rbac.authorization.k8s.io/v1', 'clusterrolebindings', false],
      ['RoleBinding', 'rbac.authorization.k8s.io/v1', 'rolebindings', true],
    ];
    for (const [kind, apiVersion, plural, namespaced] of expected) assert.deepEqual(byKind.get(kind), { apiVersion, kind, plural, namespaced });
    assert.equal(BUILTIN_KINDS.length, 22);
    assert.deepEqual(
      BUILTIN_KINDS.filter((k) => !k.namespaced).map((k) => k.kind),
      ['Namespace', 'ClusterRole', 'ClusterRoleBinding'],
    );
  });
});

describe('files', () => {
  test('insertion goes before the marker, indented like it, and keeps the rest', () => {
    const text = 'functions:\n  mine: {}\n  # +operless:scaffold:functions\nresources: {}\n';
    assert.equal(
      insertAtMarker(text, 'functions', 'a:\n  b: 1\n'),
      'functions:\n  mine: {}\n  a:\n    b: 1\n  # +operless:scaffold:functions\nresources: {}\n',
    );
    assert.throws(() => insertAtMarker('x: 1\n', 'functions', 'a: 1', 'serverless.yml'), /serverless\.yml has no "\+operless:scaffold:functions" marker/);
  });
  test('existing files are refused as a whole (nothing written) unless force', () => {
    const dir = mkdtempSync(join(tmpdir(), 'scaffold-unit-'));
    try {
      writeFileSync(join(dir, 'b.txt'), 'mine');
      const plan = [
        { type: 'create', path: 'a.txt', content: 'A' },
        { type: 'create', path: 'b.txt', content: 'B' },
      ] as const;
      assert.throws(() => applyChanges(dir, plan), /refusing to overwrite b\.txt; pass --force/);
      assert.throws(() => readFileSync(join(dir, 'a.txt')), /ENOENT/, 'nothing was written');
      assert.deepEqual(
        applyChanges(dir, plan, { force: true }).map((c) => c.action),
        ['created', 'overwritten'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('create api plan', () => {
  const project: ProjectFile = { name: 'demo', domain: 'example.com', apis: [] };
  const plan = planCreateApi(project, { group: 'tenancy', version: 'v1alpha1', kind: 'Tenant', namespaced: false, owns: 'Namespace,ResourceQuota' });
  const content = (path: string) => {
    const change = plan.changes.find((c) => c.path === path && c.type !== 'insert');
    assert.ok(change, `${path} is planned`);
    return change.content;
  };

  test('the project file records the kind and the forwarder watches the primary and every owned kind', () => {
    assert.deepEqual(
      parseProjectFile(content('operless.json')).apis.map((a) => `${a.group}/${a.version} ${a.kind} ${a.namespaced}`),
      ['tenancy.example.com/v1alpha1 Tenant false'],
    );
    const watches = parse(content('infra/forwarder/watches.yaml'));
    assert.deepEqual(watches.primaries, [
      {
        apiVersion: 'tenancy.example.com/v1alpha1',
        kind: 'Tenant',
        plural: 'tenants',
        namespaced: false,
        queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-tenant', // serverless.yml's queue name, placeholder account
        bulkQueueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-tenant-bulk', // unordered: its resyncs and relists go to its bulk queue
      },
    ]);
    assert.deepEqual(
      watches.owned.map((o: { kind: string }) => o.kind),
      ['Namespace', 'ResourceQuota'],
    );
    assert.ok(
      watches.owned.every((o: { queueUrl?: string }) => o.queueUrl === undefined),
      "owned kinds follow their owner's queue",
    );
  });
  test('regenerating the watches keeps the queue URLs the user set, and gives a new kind its own placeholder', () => {
    const mine = 'https://sqs.eu-west-1.amazonaws.com/111122223333/demo-prod-tenant';
    const edited = content('infra/forwarder/watches.yaml')
      .replace(/ queueUrl: \S+/, ` queueUrl: ${mine}`)
      .replace(/bulkQueueUrl: \S+/, `bulkQueueUrl: ${mine}-bulk`);
    const second = planCreateApi(plan.project, { group: 'cache', version: 'v1', kind: 'CacheNode', namespaced: true }, { watches: edited });
    const watches = parse(second.changes.find((c) => c.path === 'infra/forwarder/watches.yaml')!.content);
    assert.deepEqual(
      watches.primaries.map((p: { kind: string; queueUrl: string; bulkQueueUrl: string }) => [p.kind, p.queueUrl, p.bulkQueueUrl]),
      [
        ['Tenant', mine, `${mine}-bulk`],
        [
          'CacheNode',
          'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-cache-node',
          'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-cache-node-bulk',
        ],
      ],
    );
  });
  test('the CRD is cluster-scoped with the status subresource; RBAC covers the kind, its status and the owned kinds', () => {
    const crd = parse(content('infra/crds/tenants.tenancy.example.com.yaml'));
    assert.equal(crd.spec.scope, 'Cluster');
    assert.deepEqual(crd.spec.versions[0].subresources, { status: {} });
    const [role] = content('infra/rbac/tenant-function.yaml')
      .split('\n---\n')
      .slice(1)
      .map((d) => parse(d));
    const resources = role.rules.flatMap((r: { resources: string[] }) => r.resources);
    for (const r of ['tenants', 'tenants/status', 'namespaces', 'resourcequotas', 'events']) assert.ok(resources.includes(r), r);
  });
  test('serverless.yml gets a function with its own queue, DLQ and event source', () => {
    const inserts = plan.changes
      .filter((c) => c.type === 'insert' && c.path === 'serverless.yml')
      .map((c) => c.content)
      .join('\n');
    assert.match(inserts, /handler: functions\/tenant\.handler/);
    assert.match(inserts, /arn: !GetAtt TenantWorkQueue\.Arn/);
    assert.match(inserts, /deadLetterTargetArn: !GetAtt TenantDeadLetterQueue\.Arn/);
  });
  test('the kind joins the scheduled resync: its queue URL variable in serverless.yml and its entry in functions/resync.ts', () => {
    assert.equal(resyncQueueVariable('WebApp'), 'WEB_APP_QUEUE_URL');
    const inserts = (path: string, marker: string) =>
      plan.changes.filter((c) => c.type === 'insert' && c.path === path && c.marker === marker).map((c) => c.content);
    assert.deepEqual(inserts('serverless.yml', 'resync-queues'), ['TENANT_QUEUE_URL: !Ref TenantWorkQueue\nTENANT_BULK_QUEUE_URL: !Ref TenantBulkQueue']);
    assert.deepEqual(inserts('functions/resync.ts', 'resync-imports'), ["import { TENANT } from '../src/tenant/types.ts';"]);
    assert.deepEqual(inserts('functions/resync.ts', 'resync-kinds'), [
      "{ kind: TENANT, queueUrlVariable: 'TENANT_QUEUE_URL', bulkQueueUrlVariable: 'TENANT_BULK_QUEUE_URL' },",
    ]);
  });
  test('applied to a fresh init project, every insertion finds its marker and the YAML stays valid', () => {
    const dir = mkdtempSync(join(tmpdir(), 'scaffold-unit-'));
    try {
      applyChanges(dir, planInit({ name: 'demo', domain: 'example.com', operlessDependency: '^0.1.0', toolVersions: {} }));
      const before = parse(readFileSync(join(dir, 'serverless.yml'), 'utf8'), { customTags: (tags) => tags, logLevel: 'silent' });
      assert.deepEqual(Object.keys(before.functions), ['resync'], 'a fresh project has one function: the resync');
      assert.match(before.functions.resync.events[0].schedule.rate, /^\$\{param:resyncSchedule\}$/, 'on the resyncSchedule parameter');
      applyChanges(dir, plan.changes);
      const after = parse(readFileSync(join(dir, 'serverless.yml'), 'utf8'), { customTags: (tags) => tags, logLevel: 'silent' });
      assert.deepEqual(Object.keys(after.functions), ['resync', 'tenant']);
      assert.deepEqual(Object.keys(after.functions.resync.environment), ['TENANT_QUEUE_URL', 'TENANT_BULK_QUEUE_URL']);
      assert.deepEqual(Object.keys(after.resources.Resources), ['TenantDeadLetterQueue', 'TenantDeadLetterQueuePolicy', 'TenantWorkQueue', 'TenantBulkQueue']);
      assert.deepEqual(Object.keys(after.resources.Outputs), ['TenantWorkQueueUrl', 'TenantBulkQueueUrl', 'TenantDeadLetterQueueUrl']);
      assert.equal(after.params.default.bulkMaximumConcurrency, 2, "the bulk lane's cap, below maximumConcurrency");
      assert.ok(after.params.default.bulkMaximumConcurrency < after.params.default.maximumConcurrency);
      assert.match(
        readFileSync(join(dir, 'functions/resync.ts'), 'utf8'),
        /import \{ TENANT \} from '\.\.\/src\/tenant\/types\.ts';\n[\s\S]*\{ kind: TENANT, queueUrlVariable: 'TENANT_QUEUE_URL', bulkQueueUrlVariable: 'TENANT_BULK_QUEUE_URL' \},\n\s*\/\/ \+operless:scaffold:resync-kinds/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test('the generated sample and SQS event name the same object (no namespace: cluster-scoped)', () => {
    const sample = parse(content('infra/samples/tenant.yaml'));
    const body = JSON.parse(JSON.parse(content('events/tenant-added.json')).Records[0].body);
    assert.deepEqual([body.kind, body.name, body.namespace], [sample.kind, sample.metadata.name, undefined]);
  });
  test("the same kind twice is refused unless forced; a namespaced kind may own the project's own kinds", () => {
    assert.throws(
      () => planCreateApi(plan.project, { group: 'tenancy', version: 'v1alpha1', kind: 'Tenant', namespaced: false }),
      /already has kind Tenant.*--force/,
    );
    const again = planCreateApi(plan.project, { group: 'tenancy', version: 'v1alpha1', kind: 'Tenant', namespaced: false, force: true });
    assert.equal(again.project.apis.length, 1);
    const app = planCreateApi(plan.project, { group: 'apps', version: 'v1', kind: 'Site', namespaced: false, owns: 'Tenant' });
    assert.deepEqual(
      app.api.owns.map((o) => o.kind),
      ['Tenant'],
    );
  });
  test('init writes .npmrc with install-links only for a file: dependency', () => {
    const paths = (dep: string) => planInit({ name: 'demo', domain: 'example.com', operlessDependency: dep, toolVersions: {} }).map((c) => c.path);
    assert.ok(paths('file:../operless').includes('.npmrc'));
    assert.ok(!paths('^0.1.0').includes('.npmrc'));
  });
});

describe('create api --ordering', () => {
  const project: ProjectFile = { name: 'demo', domain: 'example.com', apis: [] };
  const inserts = (ordering?: 'per-key' | 'unordered') => {
    const plan = planCreateApi(project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, ...(ordering ? { ordering } : {}) });
    const at = (marker: string) => plan.changes.find((c) => c.type === 'insert' && c.path === 'serverless.yml' && c.marker === marker)!.content;
    return { functions: parse(at('functions')), resources: parse(at('resources')) };
  };

  test('per-key: FIFO work queue and DLQ by key, a standard delay queue with its DLQ, consumed by the same function', () => {
    const { functions, resources } = inserts('per-key');
    assert.equal(resources.DatabaseWorkQueue.Properties.QueueName, '${self:service}-${sls:stage}-database.fifo');
    assert.equal(resources.DatabaseWorkQueue.Properties.FifoQueue, true);
    assert.equal(resources.DatabaseWorkQueue.Properties.DeduplicationScope, 'messageGroup');
    assert.equal(resources.DatabaseDeadLetterQueue.Properties.QueueName, '${self:service}-${sls:stage}-database-dlq.fifo');
    assert.equal(resources.DatabaseDelayQueue.Properties.FifoQueue, undefined, 'the delay queue is standard: it takes per-message delays');
    assert.equal(resources.DatabaseDelayDeadLetterQueue.Properties.FifoQueue, undefined);
    const fn = functions.database;
    assert.ok(fn.environment.OPERLESS_DELAY_QUEUE_URL, 'the delay queue URL is in the environment');
    assert.equal(fn.environment.OPERLESS_ORDERING, 'per-key', 'the function checks its queues against the ordering at cold start');
    assert.equal(fn.events.length, 2, 'the work queue and the delay queue invoke the function');
    assert.equal(fn.events[1].sqs.functionResponseType, 'ReportBatchItemFailures');
    assert.equal(fn.events[1].sqs.maximumConcurrency, '${param:maximumConcurrency}', 'the mover is capped as the reconciles are');
    const policy = resources.DatabaseDelayQueueSendPolicy.Properties;
    assert.equal(policy.PolicyDocument.Statement[0].Effect, 'Deny');
    assert.deepEqual(policy.PolicyDocument.Statement[0].Action, ['sqs:SendMessage']);
    assert.equal(
      Object.keys(policy.PolicyDocument.Statement[0].Condition.ArnNotEquals).join(),
      'aws:PrincipalArn',
      "everyone but the functions' role is denied sending to the delay queue",
    );
    assert.equal(resources.DatabaseBulkQueue, undefined, 'per-key order cannot span two queues: no bulk queue');
    assert.ok(!fn.events.some((e: { sqs: { arn: string } }) => JSON.stringify(e.sqs.arn).includes('Bulk')));
    // Each DLQ: only its source queue may name it (the FIFO work queue; the delay queue), the
    // functions alone send to the work DLQ, nobody to the delay DLQ.
    assert.deepEqual(resources.DatabaseDeadLetterQueue.Properties.RedriveAllowPolicy, {
      redrivePermission: 'byQueue',
      sourceQueueArns: ['arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${self:service}-${sls:stage}-database.fifo'],
    });
    assert.deepEqual(resources.DatabaseDelayDeadLetterQueue.Properties.RedriveAllowPolicy.sourceQueueArns, [
      'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${self:service}-${sls:stage}-database-delay',
    ]);
    assert.deepEqual(resources.DatabaseDeadLetterQueuePolicy.Properties.PolicyDocument.Statement[0].Condition, {
      ArnNotEquals: { 'aws:PrincipalArn': ['IamRoleLambdaExecution.Arn'] },
    });
    assert.equal(resources.DatabaseDelayDeadLetterQueuePolicy.Properties.PolicyDocument.Statement[0].Condition, undefined, 'nobody sends to the delay DLQ');
  });

  test('unordered (the default): standard queues, no delay queue', () => {
    for (const { functions, resources } of [inserts(), inserts('unordered')]) {
      assert.equal(resources.DatabaseWorkQueue.Properties.QueueName, '${self:service}-${sls:stage}-database');
      assert.equal(resources.DatabaseWorkQueue.Properties.FifoQueue, undefined);
      assert.equal(resources.DatabaseDelayQueue, undefined);
      assert.equal(functions.database.environment.OPERLESS_ORDERING, 'unordered');
      // The bulk lane: its own standard queue redriving to the kind's DLQ, a second event source
      // of the same function capped at bulkMaximumConcurrency (the repository's serverless.yml has the same).
      assert.equal(resources.DatabaseBulkQueue.Properties.QueueName, '${self:service}-${sls:stage}-database-bulk');
      assert.equal(resources.DatabaseBulkQueue.Properties.FifoQueue, undefined);
      assert.deepEqual(resources.DatabaseBulkQueue.Properties.RedrivePolicy, { deadLetterTargetArn: 'DatabaseDeadLetterQueue.Arn', maxReceiveCount: 5 });
      assert.deepEqual(
        functions.database.events.map((e: { sqs: { arn: string; maximumConcurrency: string } }) => [e.sqs.arn, e.sqs.maximumConcurrency]),
        [
          ['DatabaseWorkQueue.Arn', '${param:maximumConcurrency}'],
          ['DatabaseBulkQueue.Arn', '${param:bulkMaximumConcurrency}'],
        ],
      );
      assert.deepEqual(resources.DatabaseDeadLetterQueue.Properties.RedriveAllowPolicy.sourceQueueArns, [
        'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${self:service}-${sls:stage}-database',
        'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${self:service}-${sls:stage}-database-bulk',
      ]);
      assert.equal(resources.DatabaseDeadLetterQueuePolicy.Properties.PolicyDocument.Statement[0].Sid, 'OnlyFunctionsSend');
    }
  });

  const file = (plan: ReturnType<typeof planCreateApi>, path: string) =>
    plan.changes.find((c) => c.path === path && c.type !== 'insert')?.content ?? assert.fail(`${path} is planned`);
  const primaryUrls = (plan: ReturnType<typeof planCreateApi>) =>
    Object.fromEntries(
      (parse(file(plan, 'infra/forwarder/watches.yaml')) as { primaries: { kind: string; queueUrl: string }[] }).primaries.map((p) => [p.kind, p.queueUrl]),
    );

  test("the ordering is kept in operless.json and shows in the forwarder's watches: a per-key kind's queue URL ends in .fifo", () => {
    const db = planCreateApi(project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, ordering: 'per-key' });
    assert.equal(parseProjectFile(file(db, 'operless.json')).apis[0]?.ordering, 'per-key');
    assert.deepEqual(primaryUrls(db), { Database: 'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-database.fifo' });
    // A second kind, unordered: the first keeps its ordering and its .fifo URL; the new one has none.
    const both = planCreateApi(
      db.project,
      { group: 'db', version: 'v1', kind: 'Table', namespaced: true },
      { watches: file(db, 'infra/forwarder/watches.yaml') },
    );
    assert.deepEqual(
      parseProjectFile(file(both, 'operless.json')).apis.map((a) => a.ordering),
      ['per-key', undefined],
      'unordered is the default, not written',
    );
    assert.deepEqual(primaryUrls(both), {
      Database: 'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-database.fifo',
      Table: 'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-table',
    });
  });

  test('a queue URL the user set is kept; a placeholder of the other ordering is not', () => {
    const db = planCreateApi(project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, ordering: 'per-key' });
    const userSet = 'queueUrl: https://sqs.eu-west-1.amazonaws.com/210987654321/prod-database.fifo';
    const edited = file(db, 'infra/forwarder/watches.yaml').replace(/queueUrl: .*/, userSet);
    const again = planCreateApi(db.project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, force: true }, { watches: edited });
    assert.equal(primaryUrls(again).Database, 'https://sqs.eu-west-1.amazonaws.com/210987654321/prod-database.fifo');
    const stale = file(db, 'infra/forwarder/watches.yaml').replace('database.fifo', 'database');
    const fixed = planCreateApi(db.project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, force: true }, { watches: stale });
    assert.equal(
      primaryUrls(fixed).Database,
      'https://sqs.us-east-1.amazonaws.com/123456789012/demo-dev-database.fifo',
      'the unordered placeholder is regenerated',
    );
  });

  test("--force keeps the kind's ordering, and refuses to change it (its queues in serverless.yml are not rewritten)", () => {
    const db = planCreateApi(project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, ordering: 'per-key' });
    const forced = planCreateApi(db.project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, force: true });
    assert.equal(forced.api.ordering, 'per-key');
    assert.throws(
      () => planCreateApi(db.project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, force: true, ordering: 'unordered' }),
      /--ordering unordered: Database was created with --ordering per-key, and --force does not rewrite its queues in serverless.yml/,
    );
  });

  test('operless.json: an unknown ordering is refused, naming the kind', () => {
    const text = JSON.stringify({
      name: 'demo',
      domain: 'example.com',
      apis: [{ group: 'db.example.com', version: 'v1', kind: 'Database', plural: 'databases', namespaced: true, owns: [], ordering: 'fifo' }],
    });
    assert.throws(() => parseProjectFile(text), /apis\[0\] \(Database\): "ordering" must be unordered or per-key, got "fifo"/);
  });

  test('an unknown ordering is refused, naming the option', async () => {
    assert.throws(
      () => planCreateApi(project, { group: 'db', version: 'v1', kind: 'Database', namespaced: true, ordering: 'fifo' as never }),
      /--ordering must be unordered or per-key/,
    );
    await assert.rejects(
      createApi(['--group', 'db', '--version', 'v1', '--kind', 'Database', '--ordering', 'fifo']),
      (err: Error) => err instanceof UsageError && /--ordering must be unordered or per-key, got "fifo"/.test(err.message),
    );
  });
});
describe('create api --watches', () => {
  const project: ProjectFile = { name: 'demo', domain: 'example.com', apis: [] };
  const plan = planCreateApi(project, {
    group: 'cache',
    version: 'v1alpha1',
    kind: 'Cache',
    namespaced: true,
    owns: 'Deployment',
    watches: 'ConfigMap,secrets',
  });
  const content = (path: string) => plan.changes.find((c) => c.path === path && c.type !== 'insert')?.content ?? assert.fail(`${path} is planned`);

  test('each related kind gets spec.<kind>Ref, a related watch in the controller and the forwarder, and get/list/watch only', async () => {
    assert.deepEqual(
      parseProjectFile(content('operless.json')).apis[0]?.watches?.map((w) => w.kind),
      ['ConfigMap', 'Secret'],
    );
    assert.match(content('src/cache/types.ts'), /configMapRef: object\(/);
    assert.match(content('src/cache/types.ts'), /secretRef: object\(/);
    assert.match(content('infra/crds/caches.cache.example.com.yaml'), /configMapRef:/);
    assert.match(
      content('src/cache/controller.ts'),
      /watches: \[\{ kind: CONFIGMAPS, map: \{ field: 'spec\.configMapRef\.name' \} \}, \{ kind: SECRETS, map: \{ field: 'spec\.secretRef\.name' \} \}\]/,
    );
    const watches = parse(content('infra/forwarder/watches.yaml'));
    assert.deepEqual(
      watches.related.map((r: { kind: string; for: { field: string }[] }) => `${r.kind} ${r.for.map((t) => t.field).join()}`),
      ['ConfigMap spec.configMapRef.name', 'Secret spec.secretRef.name'],
    );
    const rbac = parse(content('infra/rbac/forwarder.yaml').split('---')[1]!);
    assert.deepEqual(rbac.rules.find((r: { apiGroups: string[] }) => r.apiGroups[0] === '').resources, ['configmaps', 'secrets']);
    const fn = parse(content('infra/rbac/cache-function.yaml').split('---')[1]!);
    assert.deepEqual(
      fn.rules.filter((r: { apiGroups: string[] }) => r.apiGroups[0] === '').map((r: { resources: string[]; verbs: string[] }) => `${r.resources} ${r.verbs}`),
      ['configmaps get', 'secrets get'],
    );
  });
  test('--watches refuses an unknown or cluster-scoped kind, and a cluster-scoped primary', () => {
    assert.throws(
      () => planCreateApi(project, { group: 'cache', version: 'v1alpha1', kind: 'Cache', namespaced: true, watches: 'Namespace' }),
      /--watches: unknown or cluster-scoped kind "Namespace"/,
    );
    assert.throws(
      () => planCreateApi(project, { group: 'cache', version: 'v1alpha1', kind: 'Cache', namespaced: false, watches: 'ConfigMap' }),
      /must be --namespaced/,
    );
  });
});

test('create api: a kind is owned or related, never both (the forwarder watches it once)', () => {
  const project: ProjectFile = { name: 'demo', domain: 'example.com', apis: [] };
  assert.throws(
    () => planCreateApi(project, { group: 'cache', version: 'v1', kind: 'Cache', namespaced: true, owns: 'ConfigMap', watches: 'ConfigMap' }),
    /Cache owns ConfigMap already/,
  );
  const first = planCreateApi(project, { group: 'cache', version: 'v1', kind: 'Cache', namespaced: true, watches: 'ConfigMap' });
  assert.throws(
    () => planCreateApi(first.project, { group: 'web', version: 'v1', kind: 'Site', namespaced: true, owns: 'ConfigMap' }),
    /Cache watches ConfigMap as a related kind already/,
  );
});

describe('namespace-scoped mode (--namespaces)', () => {
  const project: ProjectFile = { name: 'demo', domain: 'example.com', apis: [] };
  const plan = planCreateApi(project, {
    group: 'cache',
    version: 'v1alpha1',
    kind: 'Cache',
    namespaced: true,
    owns: 'Deployment',
    namespaces: 'team-b,team-a',
  });
  const content = (path: string) => plan.changes.find((c) => c.path === path && c.type !== 'insert')?.content ?? assert.fail(`${path} is planned`);
  const docs = (path: string) =>
    content(path)
      .split(/^---$/m)
      .map((d) => parse(d))
      .filter((d) => d && typeof d === 'object');

  test('operless.json keeps the namespaces; the watches carry them; the RBAC is a Role and RoleBinding per namespace', () => {
    assert.deepEqual(parseProjectFile(content('operless.json')).namespaces, ['team-a', 'team-b']);
    assert.deepEqual(parse(content('infra/forwarder/watches.yaml')).namespaces, ['team-a', 'team-b']);
    for (const file of ['infra/rbac/cache-function.yaml', 'infra/rbac/forwarder.yaml']) {
      assert.deepEqual(
        docs(file).map((d) => `${d.kind} ${d.metadata.namespace}`),
        ['Role team-a', 'Role team-b', 'RoleBinding team-a', 'RoleBinding team-b'],
        file,
      );
    }
    assert.equal(parse(content('infra/samples/cache.yaml')).metadata.namespace, 'team-a', 'the sample lives in a listed namespace');
    assert.match(content('test/cache.test.ts'), /create', 'namespace', 'team-a'/);
    assert.match(content('test/cache.test.ts'), /tester\.reconcile\(cacheController, \{ namespace: 'team-a', name: 'cache-sample' \}\)/);
  });

  test('a later kind keeps the namespaces; "" goes back to cluster-wide; a bad name is refused naming --namespaces', () => {
    const next = planCreateApi(plan.project, { group: 'web', version: 'v1', kind: 'Site', namespaced: true });
    assert.deepEqual(next.project.namespaces, ['team-a', 'team-b']);
    const wide = planCreateApi(plan.project, { group: 'web', version: 'v1', kind: 'Site', namespaced: true, namespaces: '' });
    assert.equal(wide.project.namespaces, undefined);
    assert.match(wide.changes.find((c) => c.path === 'infra/rbac/site-function.yaml')?.content ?? '', /kind: ClusterRole\n/);
    assert.throws(
      () => planCreateApi(project, { group: 'web', version: 'v1', kind: 'Site', namespaced: true, namespaces: 'Team_A' }),
      (err: Error) => err instanceof ScaffoldError && /^--namespaces: .*"Team_A"/.test(err.message),
    );
    assert.throws(
      () => parseProjectFile(JSON.stringify({ name: 'd', domain: 'e.com', apis: [], namespaces: ['Bad'] })),
      /"namespaces" must be a namespace name/,
    );
  });

  test('init --namespaces: operless.json and the serverless param carry them, and the functions get OPERLESS_NAMESPACES', () => {
    const files = planInit({ name: 'demo', domain: 'example.com', operlessDependency: '^0.1.0', toolVersions: {}, namespaces: ['team-a'] });
    const file = (path: string) => files.find((f) => f.path === path)?.content ?? assert.fail(`${path} is planned`);
    assert.deepEqual(parseProjectFile(file('operless.json')).namespaces, ['team-a']);
    assert.match(file('serverless.yml'), /namespaces: 'team-a'/);
    assert.match(file('serverless.yml'), /OPERLESS_NAMESPACES: \$\{param:namespaces\}/);
  });
});

describe('create webhook', () => {
  const scaffolded = () => {
    const dir = mkdtempSync(join(tmpdir(), 'scaffold-webhook-'));
    applyChanges(dir, planInit({ name: 'demo', domain: 'example.com', operlessDependency: '^0.1.0', toolVersions: {} }));
    scaffoldApi(dir, { group: 'apps', version: 'v1', kind: 'WebApp', namespaced: true });
    return dir;
  };
  test('refusals name what is wrong: unknown kind, nothing asked, conversion without its other version, twice', () => {
    const dir = scaffolded();
    try {
      assert.throws(
        () => scaffoldWebhook(dir, { kind: 'Cache', validation: true }),
        /no kind Cache \(it has WebApp\); add it with `operless create api` first/,
      );
      assert.throws(() => scaffoldWebhook(dir, { kind: 'WebApp' }), /at least one of --defaulting, --validation, --conversion/);
      assert.throws(() => scaffoldWebhook(dir, { kind: 'WebApp', conversion: true }), /--conversion needs --spoke <version>/);
      assert.throws(() => scaffoldWebhook(dir, { kind: 'WebApp', conversion: true, spoke: 'v1' }), /--spoke v1 is WebApp's own version/);
      assert.throws(
        () => scaffoldWebhook(dir, { kind: 'WebApp', conversion: true, spoke: 'v2' }),
        /--spoke v2 outranks WebApp's own version v1 .*Make the newest version the hub: move WebApp to v2 .*--spoke v1 /,
      );
      assert.throws(() => scaffoldWebhook(dir, { kind: 'WebApp', validation: true, spoke: 'v2' }), /--spoke .* give it with --conversion/);
      scaffoldWebhook(dir, { kind: 'WebApp', validation: true });
      assert.throws(() => scaffoldWebhook(dir, { kind: 'WebApp', validation: true }), /WebApp has webhooks already/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test('the webhook module, the one webhooks function, serverless.yml, the spoke as an unserved version and the chart values; --force adds nothing twice', () => {
    const dir = scaffolded();
    try {
      scaffoldWebhook(dir, { kind: 'WebApp', defaulting: true, validation: true, conversion: true, spoke: 'v1beta1' });
      const read = (path: string) => readFileSync(join(dir, path), 'utf8');
      assert.match(read('src/web-app/webhook.ts'), /defineWebhook<WebApp>\(\{[\s\S]*default: [\s\S]*validate: [\s\S]*'apps\.example\.com\/v1beta1': \{/);
      assert.match(read('src/web-app/v1beta1.ts'), /version: 'v1beta1'/);
      assert.match(read('src/resources.ts'), /unservedVersions: \[WebAppV1beta1Resource\]/);
      const yaml = parse(read('serverless.yml'), { customTags: (tags) => tags, logLevel: 'silent' });
      assert.deepEqual(Object.keys(yaml.functions), ['resync', 'webApp', 'webhooks']);
      assert.equal(yaml.params.default.forwarderRoleArn, '');
      // (the YAML reader drops the !GetAtt tag: the value is its argument)
      assert.deepEqual(yaml.resources.Resources.WebhooksInvokePermission.Properties, {
        FunctionName: 'WebhooksLambdaFunction.Arn',
        Action: 'lambda:InvokeFunction',
        Principal: '${param:forwarderRoleArn}',
      });
      const values = parse(read('infra/forwarder/webhooks.yaml'));
      assert.deepEqual(values.settings.webhooks.functions, { 'web-app': 'demo-dev-webhooks' });
      assert.deepEqual(
        values.webhooks.resources.map((r: { alias: string }) => r.alias),
        ['web-app'],
      );
      const before = ['functions/webhooks.ts', 'src/resources.ts', 'serverless.yml'].map(read);
      scaffoldWebhook(dir, { kind: 'WebApp', defaulting: true, validation: true, conversion: true, spoke: 'v1beta1', force: true });
      assert.deepEqual(['functions/webhooks.ts', 'src/resources.ts', 'serverless.yml'].map(read), before, 'nothing inserted twice');
      assert.equal(read('functions/webhooks.ts').match(/webAppWebhook,/g)?.length, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
