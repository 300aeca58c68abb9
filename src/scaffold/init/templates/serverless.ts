/**
 * Template of a new project's `serverless.yml`: the osls service with the scheduled resync
 * function and the +operless:scaffold markers where `create api` and `create webhook` insert
 * each kind's function, queues and outputs. Pure.
 */
import { marker } from '../../files.ts';

export function serverlessYaml(name: string, namespaces: readonly string[]): string {
  return `# ${name}: Kubernetes operator functions on AWS Lambda + SQS, built with Operless.
#
#   npm run package                      # offline: bundles + CloudFormation into .serverless/
#   npx osls deploy --stage prod --param="clusterName=my-eks" --param="clusterId=prod"
#
# Each kind has its own work queue, dead-letter queue (an unordered kind also a bulk queue for
# its resyncs and relists; a per-key one a delay queue) and reconcile function (added by
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
    # Kinds with unordered ordering: the cap of their bulk queue's event source (2-1000). The
    # resync's and the forwarder's relists' messages go there, drained beside the work queue at
    # this lower concurrency, so a live change never waits behind a backlog. Keep it below
    # maximumConcurrency. (Per-key kinds have no bulk queue: their order cannot span two queues.)
    bulkMaximumConcurrency: 2
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
      # Each kind's work queue URL and, unordered, its bulk queue's, where the resync sends
      # (functions/resync.ts reads the variables of each kind).
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
