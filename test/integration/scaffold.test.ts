/**
 * The scaffolding end to end, as a user runs it: `operless init` into a temporary folder, the
 * project's `npm install` (Operless installed as a package: this repository staged and compiled
 * into a folder of the test's own, like a published version — the checkout's dist/ is left
 * alone) and its offline `npm run package` (osls +
 * serverless-esbuild, as the project pins them) while it has no kind yet; then `operless
 * create api` (a cluster-scoped kind owning a Namespace, and a namespaced one owning a
 * Secret and reading a ConfigMap, `--watches`), `operless create webhook` (the namespaced kind:
 * defaulting, validation, conversion to a second version), the generated project's own `npm test` (type-check against the
 * .d.ts, the generated integration tests on a real control plane from ~/.cache/operless), and
 * `npm run package` again: the CloudFormation template has each kind's function, work queue,
 * DLQ (redrive, its redrive-allow and send policies) and event sources (the unordered kind's
 * bulk queue at its own cap), passes cfn-lint, the scheduled resync function feeding every kind's
 * queue (the unordered kind's bulk queue), and the webhooks function only the forwarder's role may invoke. Finally the packaged resync bundle — the very file Lambda would run — is invoked
 * against a real API server and ElasticMQ: each kind's sample lands on its own kind's queue.
 *
 * Slow by nature (npm install from the registry cache: about 15 s here; the generated tests
 * about 20 s; each package about 5 s), so exactly one project is generated.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ReceiveMessageCommand, type ReceiveMessageCommandOutput } from '@aws-sdk/client-sqs';
import { DIST, stagePackage } from '../../scripts/build-package.ts';
import { offlinePackageEnv, zipEntries, type CloudFormationResource, type CloudFormationTemplate } from '../../scripts/package.ts';
import { provision, startBroker, startControlPlane, type Broker, type ControlPlane } from '../../src/testing/index.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'bin', 'operless.js');
let work: string;
let project: string;
/** The staged package the project depends on (`file:`), built by this test alone. */
let operlessPackage: string;
/** The checkout's dist/ before the test (its mtime, or absent): left alone by it. */
let distBefore: number | undefined;
let plane: ControlPlane | undefined;
let broker: Broker | undefined;

/** Runs a command with this repository's Node 24 first on PATH; returns its output. */
function run(command: string, args: string[], cwd: string, options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}) {
  // Without NODE_TEST_CONTEXT: the project's own `node --test` must not think it is nested in this one.
  const { NODE_TEST_CONTEXT: _nested, ...inherited } = process.env;
  const env = options.env ?? {
    ...inherited,
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: options.timeoutMs ?? 600_000 });
  return { code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/**
 * The project's `npm run package`, offline like this repository's (scripts/package.ts): an
 * environment rebuilt from scratch (no AWS credentials or config, a throw-away HOME, telemetry
 * off). Returns the template and each function's zip entries.
 */
function packageProject(args: readonly string[] = []): { template: CloudFormationTemplate; zips: Map<string, string[]> } {
  const home = mkdtempSync(join(tmpdir(), 'operless-scaffold-home-'));
  try {
    const env = { ...offlinePackageEnv(home), npm_config_cache: join(process.env.HOME ?? home, '.npm') };
    rmSync(join(project, '.serverless'), { recursive: true, force: true });
    const r = run('npm', ['run', 'package', ...(args.length > 0 ? ['--', ...args] : [])], project, { env, timeoutMs: 300_000 });
    assert.equal(r.code, 0, r.out);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  const dir = join(project, '.serverless');
  const template = JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as CloudFormationTemplate;
  const zips = new Map<string, string[]>();
  for (const name of ['resync', 'tenant', 'webApp', 'webhooks']) {
    const zip = join(dir, `${name}.zip`);
    if (existsSync(zip))
      zips.set(
        name,
        zipEntries(readFileSync(zip)).map((e) => e.name),
      );
  }
  return { template, zips };
}

/** A function's environment variables in the template (empty when it has none). */
function environmentOf(template: CloudFormationTemplate, id: string): Record<string, unknown> {
  const environment = template.Resources[id]?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined;
  return environment?.Variables ?? {};
}

function resourcesOfType(template: CloudFormationTemplate, type: string): [string, CloudFormationResource][] {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === type);
}

before(() => {
  distBefore = statSync(DIST, { throwIfNoEntry: false })?.mtimeMs;
  work = mkdtempSync(join(tmpdir(), 'operless-scaffold-'));
  operlessPackage = stagePackage(join(work, 'operless-package'));
  project = join(work, 'demo-operator');
});
after(async () => {
  await broker?.stop();
  await plane?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('init creates a project that depends on Operless as a package and says what to do next', () => {
  const r = run(process.execPath, [CLI, 'init', project, '--domain', 'example.com', '--operless-version', `file:${operlessPackage}`], work);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Created operator project demo-operator/);
  assert.match(r.out, /npm install && npm test/);
  const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
  assert.equal(pkg.dependencies.operless, `file:${operlessPackage}`);
  assert.equal(pkg.scripts.start, 'operless dev');
  assert.equal(pkg.scripts.package, 'osls package --stage dev');
  const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).devDependencies;
  for (const tool of ['node', 'osls', 'serverless-esbuild', 'esbuild', 'typescript']) assert.equal(pkg.devDependencies[tool], own[tool], tool);
  assert.equal(readFileSync(join(project, '.npmrc'), 'utf8'), 'install-links=true\n');
});

test('init refuses to overwrite the project without --force', () => {
  const r = run(process.execPath, [CLI, 'init', project, '--domain', 'example.com'], work);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /refusing to overwrite package\.json, .*pass --force/);
});

test('the fresh project installs and packages offline: one function, the scheduled resync', () => {
  const install = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], project);
  assert.equal(install.code, 0, install.out);
  assert.ok(existsSync(join(project, 'node_modules', 'operless', 'dist', 'index.js')), 'operless is installed as a package with its dist/');
  const installed = JSON.parse(readFileSync(join(project, 'node_modules', 'operless', 'package.json'), 'utf8')) as {
    exports: Record<string, { default?: string }>;
  };
  const resyncEntry = installed.exports['./resync']?.default;
  assert.ok(resyncEntry && existsSync(join(project, 'node_modules', 'operless', resyncEntry)), `with the operless/resync entry (${resyncEntry})`);
  const { template, zips } = packageProject();
  assert.deepEqual(
    resourcesOfType(template, 'AWS::Lambda::Function').map(([id]) => id),
    ['ResyncLambdaFunction'],
  );
  assert.deepEqual(resourcesOfType(template, 'AWS::SQS::Queue'), [], 'no kind, no queue');
  assert.deepEqual([...zips.keys()], ['resync']);
  assert.ok(zips.get('resync')?.includes('functions/resync.mjs'), `the zip holds the ESM bundle: ${zips.get('resync')}`);
});

test('create api adds two kinds; a second time it refuses', () => {
  const tenant = run(
    process.execPath,
    [CLI, 'create', 'api', '--group', 'tenancy', '--version', 'v1alpha1', '--kind', 'Tenant', '--cluster-scoped', '--owns', 'Namespace'],
    project,
  );
  assert.equal(tenant.code, 0, tenant.out);
  assert.match(tenant.out, /Added Tenant \(tenancy\.example\.com\/v1alpha1, cluster-scoped, owns Namespace\)/);
  assert.match(tenant.out, /updated\s+functions\/resync\.ts/);
  const app = run(
    process.execPath,
    [CLI, 'create', 'api', '--group', 'apps', '--version', 'v1', '--kind', 'WebApp', '--owns', 'Secret', '--watches', 'ConfigMap', '--ordering', 'per-key'],
    project,
  );
  assert.equal(app.code, 0, app.out);
  assert.match(app.out, /Added WebApp \(apps\.example\.com\/v1, namespaced, owns Secret, watches ConfigMap, per-key ordering\)/);
  assert.match(
    readFileSync(join(project, 'infra', 'forwarder', 'watches.yaml'), 'utf8'),
    /queueUrl: \S+\/demo-operator-dev-web-app\.fifo\n/,
    'the forwarder sends WebApp messages to its FIFO queue',
  );
  const again = run(process.execPath, [CLI, 'create', 'api', '--group', 'apps', '--version', 'v1', '--kind', 'WebApp'], project);
  assert.equal(again.code, 2, again.out);
  assert.match(again.out, /already has kind WebApp/);
  for (const path of [
    'infra/crds/tenants.tenancy.example.com.yaml',
    'infra/crds/webapps.apps.example.com.yaml',
    'test/web-app.test.ts',
    'functions/tenant.ts',
  ]) {
    assert.ok(existsSync(join(project, path)), path);
  }
});

test('create webhook gives WebApp defaulting, validation and a conversion to v1beta1: its files, the CRD listing v1beta1 unserved, the chart values', () => {
  const r = run(
    process.execPath,
    [CLI, 'create', 'webhook', '--kind', 'WebApp', '--defaulting', '--validation', '--conversion', '--spoke', 'v1beta1'],
    project,
  );
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Added webhooks to WebApp \(defaulting, validation, conversion v1 ↔ v1beta1\)/);
  for (const path of ['src/web-app/webhook.ts', 'src/web-app/v1beta1.ts', 'functions/webhooks.ts', 'test/web-app-webhook.test.ts'])
    assert.ok(existsSync(join(project, path)), path);
  const unknown = run(process.execPath, [CLI, 'create', 'webhook', '--kind', 'Cache', '--validation'], project);
  assert.equal(unknown.code, 2, unknown.out);
  assert.match(unknown.out, /no kind Cache \(it has Tenant, WebApp\)/);
  // What the user runs next (the command says so): the CRD now lists v1beta1, not served.
  const crd = run('npm', ['run', 'crd'], project);
  assert.equal(crd.code, 0, crd.out);
  const versions = (
    parse(readFileSync(join(project, 'infra/crds/webapps.apps.example.com.yaml'), 'utf8')) as {
      spec: { versions: { name: string; served: boolean; storage: boolean }[] };
    }
  ).spec.versions;
  assert.deepEqual(
    versions.map((v) => [v.name, v.served, v.storage]),
    [
      ['v1', true, true],
      ['v1beta1', false, false],
    ],
  );
  const values = parse(readFileSync(join(project, 'infra/forwarder/webhooks.yaml'), 'utf8')) as Record<string, any>;
  assert.deepEqual(values.settings, { webhooks: { enabled: true, functions: { 'web-app': 'demo-operator-dev-webhooks' } } });
  assert.deepEqual(values.webhooks.resources, [
    {
      alias: 'web-app',
      apiVersion: 'apps.example.com/v1',
      plural: 'webapps',
      namespaced: true,
      default: { failurePolicy: 'Fail', timeoutSeconds: 10 },
      validate: { failurePolicy: 'Fail', timeoutSeconds: 10 },
    },
  ]);
  assert.match(
    readFileSync(join(project, 'infra/forwarder/webhooks.yaml'), 'utf8'),
    /--set-file 'webhooks\.resources\[0\]\.conversion\.crd=infra\/crds\/webapps\.apps\.example\.com\.yaml'/,
  );
});

test("the generated project's own tests pass against a real control plane", () => {
  const tested = run('npm', ['test'], project);
  assert.equal(tested.code, 0, tested.out);
  assert.match(tested.out, /✔ reconciling the sample Tenant: Ready=True with observedGeneration, nothing requeued/);
  assert.match(tested.out, /✔ reconciling the sample WebApp: Ready=True with observedGeneration, nothing requeued/);
  assert.match(tested.out, /Tenant: function, queues, CRD, RBAC, sample, event and watches are in place/);
  for (const name of [
    'WebApp defaulting: a missing spec.message is filled in',
    'WebApp validation: a blank spec.message is denied',
    'WebApp conversion: v1beta1 to the hub and back',
  ]) {
    assert.ok(tested.out.includes(name), `the generated webhook test "${name}" ran (and "fail 0" below: passed)`);
  }
  assert.match(tested.out, /# fail 0|ℹ fail 0/);
});

test('packaged with two kinds: a function, work queue, DLQ and event source per kind (FIFO and a delay queue for the per-key one), the resync schedule feeding both queues, the webhooks function', () => {
  const { template, zips } = packageProject();
  const resources = template.Resources;
  assert.deepEqual(
    resourcesOfType(template, 'AWS::Lambda::Function')
      .map(([id]) => id)
      .sort(),
    ['ResyncLambdaFunction', 'TenantLambdaFunction', 'WebAppLambdaFunction', 'WebhooksLambdaFunction'],
  );
  // The webhooks function: invoked by the forwarder's role (param forwarderRoleArn) and nothing else.
  const invokers = resourcesOfType(template, 'AWS::Lambda::Permission').filter(([, r]) =>
    JSON.stringify(r.Properties?.FunctionName).includes('WebhooksLambdaFunction'),
  );
  assert.deepEqual(
    invokers.map(([id, r]) => [id, r.Properties]),
    [
      [
        'WebhooksInvokePermission',
        {
          FunctionName: { 'Fn::GetAtt': ['WebhooksLambdaFunction', 'Arn'] },
          Action: 'lambda:InvokeFunction',
          Principal: '',
        },
      ],
    ],
  );
  assert.equal(resources.WebhooksLambdaFunction?.Properties?.Timeout, 9);
  // Tenant is unordered (standard queues); WebApp was created with --ordering per-key.
  for (const [kind, file, suffix] of [
    ['Tenant', 'tenant', ''],
    ['WebApp', 'web-app', '.fifo'],
  ] as const) {
    const queue = resources[`${kind}WorkQueue`]?.Properties;
    const dlq = resources[`${kind}DeadLetterQueue`]?.Properties;
    assert.equal(queue?.QueueName, `demo-operator-dev-${file}${suffix}`);
    assert.equal(dlq?.QueueName, `demo-operator-dev-${file}-dlq${suffix}`);
    assert.equal(queue?.FifoQueue, suffix ? true : undefined);
    assert.deepEqual(queue?.RedrivePolicy, { deadLetterTargetArn: { 'Fn::GetAtt': [`${kind}DeadLetterQueue`, 'Arn'] }, maxReceiveCount: 5 });
    const mappings = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping').filter(([, r]) =>
      JSON.stringify(r.Properties?.FunctionName).includes(`${kind}LambdaFunction`),
    );
    // Unordered: the bulk lane (resyncs and relists) at its own lower cap; per-key: the delay queue's mover, capped as the reconciles are.
    const caps = suffix ? { [`${kind}WorkQueue`]: 5, [`${kind}DelayQueue`]: 5 } : { [`${kind}WorkQueue`]: 5, [`${kind}BulkQueue`]: 2 };
    assert.deepEqual(
      Object.fromEntries(
        mappings.map(([, r]) => [
          (r.Properties?.EventSourceArn as { 'Fn::GetAtt'?: string[] } | undefined)?.['Fn::GetAtt']?.[0],
          (r.Properties?.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency,
        ]),
      ),
      caps,
      `${kind}'s function is fed by its own queues, each capped`,
    );
    for (const [, mapping] of mappings) assert.deepEqual(mapping.Properties?.FunctionResponseTypes, ['ReportBatchItemFailures']);
    assert.equal(
      resources[`${kind}BulkQueue`]?.Properties?.QueueName,
      suffix ? undefined : `demo-operator-dev-${file}-bulk`,
      'a bulk queue for the unordered kind only',
    );
    if (!suffix)
      assert.deepEqual(resources[`${kind}BulkQueue`]?.Properties?.RedrivePolicy, {
        deadLetterTargetArn: { 'Fn::GetAtt': [`${kind}DeadLetterQueue`, 'Arn'] },
        maxReceiveCount: 5,
      });
    // The DLQ: only the kind's own queues may name it; only the functions send to it.
    const arn = (name: string) => ({ 'Fn::Sub': `arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${AWS::AccountId}:demo-operator-dev-${name}` });
    assert.deepEqual(dlq?.RedriveAllowPolicy, {
      redrivePermission: 'byQueue',
      sourceQueueArns: suffix ? [arn(`${file}.fifo`)] : [arn(file), arn(`${file}-bulk`)],
    });
    assert.deepEqual(
      (resources[`${kind}DeadLetterQueuePolicy`]?.Properties as { PolicyDocument: { Statement: unknown[] } } | undefined)?.PolicyDocument.Statement,
      [
        {
          Sid: 'OnlyFunctionsSend',
          Effect: 'Deny',
          Principal: '*',
          Action: ['sqs:SendMessage'],
          Resource: { 'Fn::GetAtt': [`${kind}DeadLetterQueue`, 'Arn'] },
          Condition: { ArnNotEquals: { 'aws:PrincipalArn': [{ 'Fn::GetAtt': ['IamRoleLambdaExecution', 'Arn'] }] } },
        },
      ],
    );
    // per-key: only the functions' role may send to the delay queue (the mover moves what is there into the work queue).
    assert.deepEqual(
      resources[`${kind}DelayQueueSendPolicy`]?.Properties,
      suffix
        ? {
            Queues: [{ Ref: `${kind}DelayQueue` }],
            PolicyDocument: {
              Version: '2012-10-17',
              Statement: [
                {
                  Sid: 'OnlyFunctionsSend',
                  Effect: 'Deny',
                  Principal: '*',
                  Action: ['sqs:SendMessage'],
                  Resource: { 'Fn::GetAtt': [`${kind}DelayQueue`, 'Arn'] },
                  Condition: { ArnNotEquals: { 'aws:PrincipalArn': [{ 'Fn::GetAtt': ['IamRoleLambdaExecution', 'Arn'] }] } },
                },
              ],
            },
          }
        : undefined,
    );
    const variables = environmentOf(template, `${kind}LambdaFunction`);
    assert.deepEqual([variables.OPERLESS_QUEUE_URL, variables.OPERLESS_DLQ_URL], [{ Ref: `${kind}WorkQueue` }, { Ref: `${kind}DeadLetterQueue` }]);
    assert.deepEqual(variables.OPERLESS_DELAY_QUEUE_URL, suffix ? { Ref: `${kind}DelayQueue` } : undefined);
    assert.equal(variables.OPERLESS_ORDERING, suffix ? 'per-key' : 'unordered', 'the function is told its ordering (checked against its queues at cold start)');
  }
  const rules = resourcesOfType(template, 'AWS::Events::Rule');
  assert.equal(rules.length, 1);
  assert.equal(rules[0]![1].Properties?.ScheduleExpression, 'rate(10 minutes)');
  assert.match(JSON.stringify(rules[0]![1].Properties?.Targets), /ResyncLambdaFunction/);
  const resync = environmentOf(template, 'ResyncLambdaFunction');
  assert.deepEqual(
    [resync.TENANT_QUEUE_URL, resync.WEB_APP_QUEUE_URL],
    [{ Ref: 'TenantWorkQueue' }, { Ref: 'WebAppWorkQueue' }],
    "the resync feeds every kind's queue",
  );
  assert.deepEqual(
    [resync.TENANT_BULK_QUEUE_URL, resync.WEB_APP_BULK_QUEUE_URL],
    [{ Ref: 'TenantBulkQueue' }, undefined],
    "the unordered kind's resync goes to its bulk queue",
  );
  assert.equal(resync.OPERLESS_CLUSTER, 'default');
  assert.deepEqual([...zips.keys()].sort(), ['resync', 'tenant', 'webApp', 'webhooks']);
  assert.ok(zips.get('webhooks')?.includes('functions/webhooks.mjs'), `${zips.get('webhooks')}`);
  assert.ok(zips.get('webApp')?.includes('functions/web-app.mjs'), `${zips.get('webApp')}`);
  // Code splitting with the template's chunk folders: each zip holds its entry and its own
  // chunks (functions/<name>.chunks/), never another function's.
  for (const [name, entries] of zips) {
    const entry = entries.find((e) => e.endsWith('.mjs') && !e.includes('.chunks/'))!;
    const own = `${entry.slice(0, -'.mjs'.length)}.chunks/`;
    assert.deepEqual(
      entries.filter((e) => e.endsWith('.mjs') && e !== entry && !e.startsWith(own)),
      [],
      `${name}.zip holds only ${entry} and ${own}`,
    );
  }
  assert.ok(
    zips.get('webApp')?.some((e) => e.startsWith('functions/web-app.chunks/')),
    `the reconcile function is split into chunks: ${zips.get('webApp')}`,
  );
  // The template's esbuild plugins (operless/dist/build/esbuild-plugins.js) are in effect:
  // client-node's unreachable imports are stubs, so undici is not in the reconcile bundle
  // (entry or chunks).
  const webApp = zipEntries(readFileSync(join(project, '.serverless', 'webApp.zip')))
    .filter((e) => e.name.endsWith('.mjs'))
    .map((e) => e.read().toString('utf8'))
    .join('\n');
  assert.match(webApp, /is not bundled by Operless/, 'the reconcile bundle carries the stubs');
  assert.doesNotMatch(webApp, /UND_ERR_/, 'undici is not bundled');
});

test("cfn-lint finds nothing in the generated project's packaged template (bulk queue, DLQ policies, both orderings)", async () => {
  // Packaged as a deploy would be: with the forwarder's role, which the webhooks function's
  // invoke permission requires (its Principal is '' without it, and the deploy fails: E3033).
  const { cfnLint } = await provision({ targets: ['pytools'] });
  assert.ok(cfnLint, 'cfn-lint is provisioned');
  packageProject(['--param=forwarderRoleArn=arn:aws:iam::123456789012:role/demo-forwarder']);
  const template = join(project, '.serverless', 'cloudformation-template-update-stack.json');
  const r = spawnSync(cfnLint, ['--format', 'json', '--', template], { encoding: 'utf8', timeout: 300_000 });
  const findings = JSON.parse(r.stdout || '[]') as { Rule: { Id: string }; Level: string; Message: string; Location: { Start: { LineNumber: number } } }[];
  assert.deepEqual(
    findings.map((f) => `${f.Level} ${f.Rule.Id}:${f.Location.Start.LineNumber} ${f.Message}`),
    [],
    'cfn-lint findings',
  );
  assert.equal(r.status, 0, r.stderr);
});

test("the packaged resync bundle sends each kind's sample a Resync message on that kind's own queue, the unordered kind's bulk queue (real API server and ElasticMQ)", async () => {
  // The exact file Lambda would run, next to the project's node_modules (the runtime's AWS SDK).
  const zip = readFileSync(join(project, '.serverless', 'resync.zip'));
  assert.ok(
    zipEntries(zip).some((e) => e.name === 'functions/resync.mjs'),
    'resync.zip has functions/resync.mjs',
  );
  const root = join(project, '.serverless', 'bundles', 'resync');
  for (const e of zipEntries(zip).filter((e) => e.name.startsWith('functions/'))) {
    mkdirSync(dirname(join(root, e.name)), { recursive: true });
    writeFileSync(join(root, e.name), e.read());
  }
  const bundle = join(root, 'functions', 'resync.mjs');

  plane = await startControlPlane({
    crds: ['tenants.tenancy.example.com.yaml', 'webapps.apps.example.com.yaml'].map((f) => join(project, 'infra', 'crds', f)),
  });
  for (const file of ['infra/rbac/tenant-function.yaml', 'infra/rbac/web-app-function.yaml', 'infra/samples/tenant.yaml', 'infra/samples/web-app.yaml']) {
    const applied = await plane.kubectl(['apply', '-f', join(project, file)]);
    assert.equal(applied.code, 0, applied.stderr);
  }
  // The functions' one IAM role, mapped to both kinds' groups (what an EKS access entry does).
  const identity = await plane.identity('demo-operator-functions', ['demo-operator:tenant', 'demo-operator:web-app']);
  broker = await startBroker({ queues: [{ name: 'tenant' }, { name: 'tenant-bulk' }, { name: 'web-app' }] });

  const invoke = [
    'const { handler } = await import(process.argv[1]);',
    'const reports = await handler({}, { getRemainingTimeInMillis: () => 60000 });',
    "process.stdout.write('\\nREPORTS ' + JSON.stringify(reports) + '\\n');",
  ].join('\n');
  const r = run(process.execPath, ['--input-type=module', '-e', invoke, bundle], project, {
    env: {
      PATH: process.env.PATH,
      OPERLESS_CLUSTER: 'default',
      OPERLESS_LOG_LEVEL: 'warn',
      OPERLESS_KUBECONFIG: identity.kubeconfigPath,
      TENANT_QUEUE_URL: broker.queueUrl('tenant'),
      TENANT_BULK_QUEUE_URL: broker.queueUrl('tenant-bulk'),
      WEB_APP_QUEUE_URL: broker.queueUrl('web-app'),
      AWS_ENDPOINT_URL_SQS: broker.endpoint,
      AWS_REGION: broker.region,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    },
    timeoutMs: 60_000,
  });
  assert.equal(r.code, 0, r.out);
  const reports = JSON.parse(/^REPORTS (.*)$/m.exec(r.out)?.[1] ?? 'null') as Record<string, { listed: number; sent: number; failed: number }>;
  assert.deepEqual(reports.Tenant, { listed: 1, sent: 1, failed: 0, pages: 1, skipped: 0, forbidden: 0 });
  assert.deepEqual(reports.WebApp, { listed: 1, sent: 1, failed: 0, pages: 1, skipped: 0, forbidden: 0 });

  const sqs = broker.sqs();
  // Tenant (unordered): its bulk queue, its work queue left to live changes; WebApp (per-key): its FIFO work queue.
  for (const [queue, expected] of [
    ['tenant-bulk', [['Tenant', 'tenant-sample', 'Resync', 'default']]],
    ['tenant', []],
    ['web-app', [['WebApp', 'web-app-sample', 'Resync', 'default']]],
  ] as const) {
    const got: ReceiveMessageCommandOutput = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: broker.queueUrl(queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    const bodies = (got.Messages ?? []).map((m) => JSON.parse(m.Body ?? '{}') as { kind: string; name: string; reason: string; cluster: string });
    assert.deepEqual(
      bodies.map((b) => [b.kind, b.name, b.reason, b.cluster]),
      expected,
      `queue ${queue} carries only its kind's resync`,
    );
  }
});

test("the checkout's dist/ is left alone: the package was built into the test's own folder", () => {
  assert.equal(statSync(DIST, { throwIfNoEntry: false })?.mtimeMs, distBefore, `${DIST} was rebuilt or removed by this test`);
  assert.ok(existsSync(join(operlessPackage, 'dist', 'index.js')), 'the staged package has its dist/');
});
