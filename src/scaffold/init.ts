/**
 * `operless init`: the files of a new operator project that depends on Operless as a package.
 * Pure: `planInit` returns the files; `files.ts` writes them. The project starts with no kinds
 * (`operless create api` adds them at the `+operless:scaffold:*` markers) and its `npm test`
 * passes from the start (test/project.test.ts checks that every kind is wired everywhere).
 * It starts with one function, the scheduled resync (`functions/resync.ts`), which feeds
 * every kind's work queue once kinds exist, so `osls package` works from the start too
 * (serverless-esbuild fails on a service without functions).
 *
 * Toolchain pins (Node 24 via the `node` devDependency, TypeScript, osls, serverless-esbuild)
 * are the ones this Operless version is tested with, read from its own package.json.
 */
import type { FileChange } from './files.ts';
import { PROJECT_FILE, renderProjectFile } from './project-file.ts';
import { marker } from './files.ts';

export interface InitOptions {
  readonly name: string;
  readonly domain: string;
  /** The `operless` dependency specifier, e.g. `^0.1.0` or `file:/path/to/operless`. */
  readonly operlessDependency: string;
  /** Pinned versions of the dev tools, by package name. */
  readonly toolVersions: Readonly<Record<string, string>>;
  /** Namespace-scoped mode: the namespaces the operator runs for (kube/scope.ts); empty/absent = cluster-wide. */
  readonly namespaces?: readonly string[];
}

/** Dev tools a generated project pins (versions come from Operless's own package.json). */
export const PROJECT_DEV_TOOLS = ['@types/aws-lambda', '@types/node', 'esbuild', 'node', 'osls', 'serverless-esbuild', 'typescript'] as const;

export function planInit(options: InitOptions): FileChange[] {
  const create = (path: string, content: string): FileChange => ({ type: 'create', path, content });
  const files: FileChange[] = [
    create('package.json', packageJson(options)),
    create('tsconfig.json', TSCONFIG),
    create('.gitignore', GITIGNORE),
    create(PROJECT_FILE, renderProjectFile({ name: options.name, domain: options.domain, apis: [], ...(options.namespaces?.length ? { namespaces: options.namespaces } : {}) })),
    create('serverless.yml', serverlessYaml(options.name, options.namespaces ?? [])),
    create('src/resources.ts', RESOURCES),
    create('functions/README.md', FUNCTIONS_README),
    create('functions/resync.ts', RESYNC_FUNCTION),
    create('events/README.md', EVENTS_README),
    create('infra/forwarder/values.yaml', forwarderValues(options.name)),
    create('infra/samples/README.md', '# Sample resources: `kubectl apply -f infra/samples/`. `npm start` applies them to the local cluster.\n'),
    create('test/project.test.ts', PROJECT_TEST),
    create('README.md', readme(options)),
  ];
  if (options.operlessDependency.startsWith('file:')) {
    // Install a local Operless the way a published one is installed (a copy, not a symlink),
    // so the project uses its compiled dist/ exactly as it would from the registry.
    files.push(create('.npmrc', 'install-links=true\n'));
  }
  return files;
}

function packageJson(options: InitOptions): string {
  const devDependencies: Record<string, string> = {};
  for (const tool of PROJECT_DEV_TOOLS) {
    const version = options.toolVersions[tool];
    if (version) devDependencies[tool] = version;
  }
  const pkg = {
    name: options.name,
    version: '0.1.0',
    private: true,
    description: `Kubernetes operator ${options.name}, built with Operless: reconcile functions on AWS Lambda fed by SQS.`,
    type: 'module',
    engines: { node: '>=24.0.0' },
    scripts: {
      start: 'operless dev',
      test: 'tsc --noEmit && node --test "test/**/*.test.ts"',
      typecheck: 'tsc --noEmit',
      crd: 'operless crd',
      package: 'osls package --stage dev',
    },
    dependencies: { operless: options.operlessDependency },
    devDependencies,
    allowScripts: { node: true, esbuild: true },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

const TSCONFIG = `${JSON.stringify(
  {
    compilerOptions: {
      target: 'ES2024',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2024'],
      types: ['node'],
      strict: true,
      noUncheckedIndexedAccess: true,
      verbatimModuleSyntax: true,
      erasableSyntaxOnly: true,
      allowImportingTsExtensions: true,
      resolveJsonModule: true,
      isolatedModules: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ['src', 'functions', 'test'],
  },
  null,
  2,
)}\n`;

const GITIGNORE = ['node_modules/', '.serverless/', '.esbuild/', '.build/', '.operless/', '*.log', ''].join('\n');

const RESOURCES = `/**
 * The custom resources of this project: \`operless crd\` renders each into
 * infra/crds/<plural>.<group>.yaml. \`operless create api\` adds entries below.
 */
import type { GeneratedResource } from 'operless/crd';
// ${marker('resource-imports')}

export const resources: GeneratedResource[] = [
  // ${marker('resources')}
];
`;

const FUNCTIONS_README = `# Lambda entry points

One module per kind, added by \`operless create api\`: it exports \`handler\` (what Lambda calls,
fed by the kind's SQS queue) and \`controllers\` (what the handler serves; \`operless dev\` derives
the forwarder's watches from them). Each is declared in serverless.yml with its own queue and DLQ.

\`resync.ts\` is the scheduled safety net (\`resyncSchedule\` in serverless.yml, every 10 minutes
by default): it lists every object of every kind and sends each a \`Resync\` message on its
kind's queue, so anything the forwarder ever missed is reconciled. \`operless create api\` adds
each kind to it.
`;

/** functions/resync.ts of a new project: kinds are inserted at the markers by `create api`. */
const RESYNC_FUNCTION = `/**
 * Lambda entry point: the scheduled resync (serverless.yml, \`resyncSchedule\`), the safety net
 * that heals anything the forwarder ever missed. It lists every object of every kind of this
 * project and sends each a \`Resync\` reconcile message on its kind's own work queue, whose
 * URL serverless.yml gives this function in the variable named below. \`operless create api\`
 * adds each new kind here (at the +operless:scaffold markers).
 *
 * Kinds are resynced independently: one that fails (API server, queue) does not stop the
 * others, and the invocation then fails naming each kind that did not finish, so it shows in
 * the function's error metrics. An extra Resync is harmless: reconciles read live state.
 */
import { createLogger } from 'operless';
import { createPerKindResyncHandler, type ResyncTarget } from 'operless/resync';
// ${marker('resync-imports')}

/** Every kind, and the environment variable holding the URL of its work queue. */
export const resyncTargets: ResyncTarget[] = [
  // ${marker('resync-kinds')}
];

export const handler = createPerKindResyncHandler({ targets: resyncTargets, log: createLogger() });
`;

const EVENTS_README = `# Sample Lambda SQS events

\`<kind>-added.json\`: an SQS event with one reconcile message, as the forwarder sends it. The
tests invoke the handler with it; \`npx osls invoke local --stage local -f <function> -p events/<kind>-added.json\`
does the same against the cluster in OPERLESS_KUBECONFIG.
`;

function serverlessYaml(name: string, namespaces: readonly string[]): string {
  return `# ${name}: Kubernetes operator functions on AWS Lambda + SQS, built with Operless.
#
#   npm run package                      # offline: bundles + CloudFormation into .serverless/
#   npx osls deploy --stage prod --param="clusterName=my-eks" --param="clusterId=prod"
#
# Each kind has its own work queue, dead-letter queue and reconcile function (added by
# \`operless create api\` at the +operless:scaffold markers; edit freely around them).
service: ${name}
frameworkVersion: '4'
configValidationMode: error

plugins:
  - serverless-esbuild

params:
  default:
    # Cluster id the forwarder writes into messages (its clusterId value).
    clusterId: default
    # Namespace-scoped mode: the namespaces the operator runs for, comma-separated (the same
    # list as operless.json and the forwarder's namespaces). Empty: all namespaces.
    namespaces: '${namespaces.join(',')}'
    # EKS cluster name (functions get endpoint + CA from eks:DescribeCluster and an IAM token).
    clusterName: ''
    # Upper bound of concurrent reconcile invocations per kind (2-1000): protects the API server.
    maximumConcurrency: 5
    # How often the resync function re-enqueues every object of every kind (heals anything
    # the forwarder missed).
    resyncSchedule: rate(10 minutes)
    logLevel: info
    # ${marker('params')}

provider:
  name: aws
  runtime: nodejs24.x
  architecture: arm64
  region: \${opt:region, 'us-east-1'}
  stage: \${opt:stage, 'dev'}
  memorySize: 256
  logRetentionInDays: 14
  environment:
    OPERLESS_CLUSTER: \${param:clusterId}
    OPERLESS_NAMESPACES: \${param:namespaces}
    OPERLESS_LOG_LEVEL: \${param:logLevel}
    OPERLESS_EKS_CLUSTER: \${param:clusterName}
  iam:
    role:
      statements:
        # Follow-ups (requeue, retry) go back to a kind's work queue; poison and exhausted
        # messages go to its DLQ; a record handed back after a failed send waits a short backoff.
        - Effect: Allow
          Action: [sqs:SendMessage, sqs:ChangeMessageVisibility]
          Resource:
            - !Sub 'arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${AWS::AccountId}:\${self:service}-\${sls:stage}-*'
        - Effect: Allow
          Action: [eks:DescribeCluster]
          Resource: !Sub 'arn:\${AWS::Partition}:eks:\${AWS::Region}:\${AWS::AccountId}:cluster/*'

package:
  individually: true

custom:
  esbuild:
    bundle: true
    minify: true
    sourcemap: false
    target: node24
    platform: node
    format: esm
    # Code splitting: what a function imports lazily (the SQS client, the kubeconfig loader, the
    # OpenTelemetry SDK) goes into chunks a cold start does not parse, in the function's own
    # folder functions/<name>.chunks/ (the plugins below fill in [entry]; operless docs/deploy.md,
    # "Bundle layout").
    splitting: true
    chunkNames: '[entry].chunks/[name]-[hash]'
    outputFileExtension: .mjs
    mainFields: [module, main]
    # The SQS client is bundled: the same bundle then runs on the managed runtime and in a
    # container image under aws-lambda-ric, which has no SDK (operless docs/deploy.md).
    exclude: []
    # Stubs for client-node code Operless never runs and built-ins without their ESM facade:
    # ~1.1 MiB smaller bundles and half the cold start (operless docs/deploy.md). Drop this line
    # if your reconcile code calls client-node's generated API clients (and then chunkNames'
    # [entry] stays literal: every function's chunks share one folder and every zip).
    plugins: node_modules/operless/dist/build/esbuild-plugins.js
    banner:
      js: "import { createRequire as __operlessCreateRequire } from 'node:module'; const require = __operlessCreateRequire(import.meta.url);"

functions:
  resync:
    handler: functions/resync.handler
    description: Re-enqueues every object of every kind on its kind's work queue (safety net)
    timeout: 300
    environment:
      # Each kind's work queue URL (functions/resync.ts reads the variable of each kind).
      # ${marker('resync-queues')}
    events:
      - schedule:
          rate: \${param:resyncSchedule}
  # ${marker('functions')}

resources:
  Resources:
    # ${marker('resources')}
  Outputs:
    # ${marker('outputs')}
`;
}

function forwarderValues(name: string): string {
  return `# Values for the Operless forwarder Helm chart (in the operless package: infra/forwarder/chart,
# docs/forwarder.md). The watches are in watches.yaml, regenerated by \`operless create api\`:
#
#   helm install ${name}-forwarder <chart> -f infra/forwarder/values.yaml -f infra/forwarder/watches.yaml
#
# One forwarder serves every kind, sending each kind's messages to that kind's own queue: the
# queue URLs are the \`queueUrl\` of each primary in watches.yaml (the stack's <Kind>WorkQueueUrl
# outputs of \`osls deploy\`); \`operless create api\` keeps the URLs you set there.
clusterId: my-cluster
serviceAccount:
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::123456789012:role/${name}-forwarder
`;
}

const PROJECT_TEST = `/**
 * The project is wired together: every kind in operless.json has its function and queues in
 * serverless.yml, a CRD, RBAC, a sample, a sample SQS event and forwarder watches, and the
 * scheduled resync function feeds its queue.
 * Fast, no cluster: it catches a half-done rename or a deleted file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

const project = JSON.parse(readFileSync('operless.json', 'utf8')) as {
  apis: { group: string; kind: string; plural: string }[];
};
const serverless = readFileSync('serverless.yml', 'utf8');
const resync = readFileSync('functions/resync.ts', 'utf8');

test('serverless.yml is a complete osls service with the scheduled resync function', () => {
  assert.match(serverless, /^service: /m);
  assert.match(serverless, /^functions:/m);
  assert.ok(serverless.includes('handler: functions/resync.handler'), 'the resync function is declared');
  assert.ok(serverless.includes('rate: \${param:resyncSchedule}'), 'on a schedule');
});

for (const api of project.apis) {
  const file = api.kind.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
  test(\`\${api.kind}: function, queues, CRD, RBAC, sample, event and watches are in place\`, () => {
    assert.ok(serverless.includes(\`handler: functions/\${file}.handler\`), 'serverless.yml declares its function');
    assert.ok(serverless.includes(\`\${api.kind}WorkQueue:\`) && serverless.includes(\`\${api.kind}DeadLetterQueue:\`), 'its queues');
    for (const path of [
      \`functions/\${file}.ts\`, \`src/\${file}/types.ts\`, \`src/\${file}/controller.ts\`,
      \`infra/crds/\${api.plural}.\${api.group}.yaml\`, \`infra/rbac/\${file}-function.yaml\`,
      \`infra/samples/\${file}.yaml\`, \`events/\${file}-added.json\`,
    ]) {
      assert.ok(existsSync(path), \`\${path} exists\`);
    }
    assert.ok(readFileSync('infra/forwarder/watches.yaml', 'utf8').includes(\`kind: \${api.kind}\`), 'the forwarder watches it');
    const variable = \`\${file.replace(/-/g, '_').toUpperCase()}_QUEUE_URL\`;
    assert.ok(resync.includes(\`queueUrlVariable: '\${variable}'\`), 'functions/resync.ts resyncs it');
    assert.ok(serverless.includes(\`\${variable}: !Ref \${api.kind}WorkQueue\`), 'the resync function gets its queue URL');
  });
}
`;

function readme(options: InitOptions): string {
  return `# ${options.name}

A Kubernetes operator built with Operless (its documentation: \`node_modules/operless/README.md\`
after \`npm install\`): an in-cluster forwarder turns watch events into SQS messages, and
stateless Lambda functions reconcile.

\`\`\`sh
npm install && npm test   # type-check, then the tests against a real local kube-apiserver
npm start                 # the whole loop locally: control plane, queue, forwarder, functions
\`\`\`

The first run builds the Kubernetes test binaries into ~/.cache/operless (or reuses them;
\`KUBEBUILDER_ASSETS\` is honoured).

## Add a kind

\`\`\`sh
npx operless create api --group cache --version v1alpha1 --kind Memcached --owns Deployment,Service
\`\`\`

creates \`src/<kind>/types.ts\` (schema: spec and status), \`src/<kind>/controller.ts\` (reconcile),
\`functions/<kind>.ts\`, its queue, DLQ and function in serverless.yml, the forwarder watches,
RBAC, a sample, a sample SQS event and an integration test, and adds the kind to the scheduled
resync function (\`functions/resync.ts\`). After editing a schema, \`npm run crd\` regenerates
\`infra/crds/\`.

## Layout

| path | what |
| --- | --- |
| \`src/<kind>/\` | the kind's schema (Operless CRD DSL) and controller |
| \`src/resources.ts\` | the resources \`operless crd\` renders |
| \`functions/\` | Lambda entry points (\`handler\`, \`controllers\`), and \`resync.ts\` (the scheduled resync of every kind) |
| \`serverless.yml\` | queues, DLQs, functions (osls + serverless-esbuild), the resync schedule |
| \`infra/crds/\` | generated CRDs |
| \`infra/rbac/\` | RBAC of the functions and of the forwarder |
| \`infra/forwarder/\` | Helm values and watches of the forwarder |
| \`infra/samples/\` | sample resources |
| \`events/\` | sample SQS events |
| \`test/\` | tests (\`node --test\`) |

## Deploy

\`npm run package\` builds the functions offline; \`npx osls deploy\` deploys them. Apply
\`infra/crds/\` and \`infra/rbac/\`, map the functions' IAM role to the Kubernetes groups the
RBAC binds (an EKS access entry), and install the forwarder with the values in \`infra/forwarder/\`.

## Depending on Operless

\`package.json\` depends on \`operless\` (\`${options.operlessDependency}\`). Upgrade with
\`npm install operless@<version>\`.
`;
}
