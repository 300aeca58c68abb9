/**
 * Where a CLI command points: the work queue, its DLQ, the SQS endpoint, the cluster and
 * the forwarder's health endpoint.
 *
 * Resolution order for every field: command-line flag, then environment variable, then the
 * state file that a running `operless dev` writes (`.operless/dev.json` in the project), so
 * in a second terminal `operless status` just works against the local loop. A field that is
 * needed but unresolved fails with a message listing the three ways to set it.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { UsageError, stringOption, type OptionSpec, type ParsedArgs } from './args.ts';
import { readDevState, type DevFunctionState } from '../devloop/dev-state.ts';

/** Options every queue- or cluster-facing command accepts. */
export const TARGET_OPTIONS = {
  'queue-url': { type: 'string', description: 'Work queue URL (env OPERLESS_QUEUE_URL)', placeholder: 'url' },
  'dlq-url': { type: 'string', description: 'Dead-letter queue URL (env OPERLESS_DLQ_URL)', placeholder: 'url' },
  endpoint: { type: 'string', description: 'SQS endpoint override for local brokers (env AWS_ENDPOINT_URL_SQS)', placeholder: 'url' },
  region: { type: 'string', description: 'AWS region (env AWS_REGION)', placeholder: 'region' },
  kubeconfig: { type: 'string', description: 'Kubeconfig file (env KUBECONFIG)', placeholder: 'path' },
  context: { type: 'string', description: 'Kubeconfig context to use', placeholder: 'name' },
  cluster: { type: 'string', description: 'Cluster id carried in messages (env OPERLESS_CLUSTER)', placeholder: 'id' },
  'forwarder-url': { type: 'string', description: 'Forwarder health/metrics base URL (env OPERLESS_FORWARDER_URL)', placeholder: 'url' },
  json: { type: 'boolean', description: 'Print machine-readable JSON' },
} satisfies OptionSpec;

/** One of the target flags (its type and placeholder) as a command that uses it otherwise describes it. */
export function targetOption(name: keyof typeof TARGET_OPTIONS, description: string): OptionSpec[string] {
  return { ...TARGET_OPTIONS[name], description };
}

export interface Target {
  readonly queueUrl?: string;
  readonly dlqUrl?: string;
  readonly endpoint?: string;
  readonly region: string;
  readonly kubeconfigPath?: string;
  readonly context?: string;
  readonly cluster: string;
  readonly forwarderUrl?: string;
  /** From a running `operless dev`: every function's queues (queueUrl/dlqUrl are the first's). */
  readonly devFunctions?: Readonly<Record<string, DevFunctionState>>;
  readonly json: boolean;
  /** Where each value came from, for `doctor` and error messages. */
  readonly source: 'flags/env' | 'operless dev';
}

export function resolveTarget(args: ParsedArgs, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Target {
  const dev = readDevState(cwd);
  const pick = (flag: string, envName: string, fromDev: string | undefined) => stringOption(args.values, flag) ?? env[envName] ?? fromDev;
  const queueUrl = pick('queue-url', 'OPERLESS_QUEUE_URL', dev?.queueUrl);
  return {
    queueUrl,
    dlqUrl: pick('dlq-url', 'OPERLESS_DLQ_URL', dev?.dlqUrl),
    endpoint: pick('endpoint', 'AWS_ENDPOINT_URL_SQS', dev?.sqsEndpoint),
    region: pick('region', 'AWS_REGION', dev?.region) ?? 'us-east-1',
    kubeconfigPath: pick('kubeconfig', 'KUBECONFIG', dev?.kubeconfigPath),
    context: stringOption(args.values, 'context'),
    cluster: pick('cluster', 'OPERLESS_CLUSTER', dev?.cluster) ?? 'default',
    forwarderUrl: pick('forwarder-url', 'OPERLESS_FORWARDER_URL', dev?.forwarderUrl),
    ...(dev?.functions ? { devFunctions: dev.functions } : {}),
    json: args.values.json === true,
    source: dev && !stringOption(args.values, 'queue-url') && !env.OPERLESS_QUEUE_URL ? 'operless dev' : 'flags/env',
  };
}

export function requireField(target: Target, field: 'queueUrl' | 'dlqUrl'): string {
  const value = target[field];
  const [flag, envName] = field === 'queueUrl' ? ['--queue-url', 'OPERLESS_QUEUE_URL'] : ['--dlq-url', 'OPERLESS_DLQ_URL'];
  if (value && !/^https?:\/\/[^/\s]+\/\S+$/.test(value)) {
    throw new UsageError(
      `${flag} (or ${envName}) must be an http(s) queue URL like https://sqs.eu-west-1.amazonaws.com/123456789012/my-queue, got ${JSON.stringify(value)}`,
    );
  }
  if (value) return value;
  throw new UsageError(
    `no ${field === 'queueUrl' ? 'work queue' : 'dead-letter queue'} configured: pass ${flag}, set ${envName}, or run this next to a running \`operless dev\``,
  );
}

/**
 * The work queue for messages about `kind`. An explicit `--queue-url` / `OPERLESS_QUEUE_URL`
 * wins; next to a running `operless dev`, the queue of the function that reconciles the kind
 * (a project with several kinds has a queue per kind, routed like the forwarder routes); else
 * the default work queue.
 */
export function queueUrlForKind(target: Target, kind: string): string {
  if (target.source === 'operless dev' && target.devFunctions) {
    const owner = Object.values(target.devFunctions).find((f) => f.kinds.includes(kind));
    if (owner) return owner.queueUrl;
  }
  return requireField(target, 'queueUrl');
}

/** An SQS client for the target; local endpoints get dummy credentials when none are set. */
export function sqsClient(target: Target, env: NodeJS.ProcessEnv = process.env): SQSClient {
  const local = target.endpoint !== undefined && /^https?:\/\/(localhost|127\.|\[::1\])/.test(target.endpoint);
  const credentials = local && !env.AWS_ACCESS_KEY_ID ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined;
  return new SQSClient({
    region: target.region,
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
  });
}
