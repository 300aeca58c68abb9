/**
 * `operless dev`: the whole loop locally (what `npm start` runs). See src/devloop/dev-loop.ts.
 */
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { asOrdering, ORDERINGS } from '../../contract/ordering.ts';
import { errorMessage } from '../../observability/log.ts';
import { targetOption } from '../target.ts';
import type { CommandResult } from './command.ts';

export const devSpec: CommandSpec = {
  name: 'dev',
  summary: 'run the whole loop locally: control plane, queue, forwarder, functions',
  usage: '[options]',
  details:
    'Starts a real kube-apiserver + etcd + kube-controller-manager (built from pinned Go modules on the\n' +
    'first run and cached in ~/.cache/operless), an embedded SQS-compatible queue, the forwarder and the\n' +
    "project's functions behind a local Lambda event-source-mapping runner; installs the CRDs and the\n" +
    'samples in infra/samples/, and prints events, reconciles and status changes as they happen.\n' +
    'Pods are marked Ready by a simulated kubelet (no container runs). Ctrl-C stops everything.',
  options: {
    broker: { type: 'string', description: 'Queue: embedded | elasticmq | sqs', default: 'embedded', placeholder: 'kind' },
    'queue-url': targetOption('queue-url', 'With --broker sqs: the work queue URL'),
    'dlq-url': targetOption('dlq-url', 'With --broker sqs: the dead-letter queue URL'),
    region: targetOption('region', 'With --broker sqs: the AWS region (default AWS_REGION)'),
    context: targetOption('context', 'Use this kubeconfig context instead of a local control plane'),
    kubeconfig: targetOption('kubeconfig', 'Kubeconfig file for --context (default KUBECONFIG or ~/.kube/config)'),
    project: { type: 'string', description: 'Project folder (default: the current folder)', placeholder: 'dir' },
    runtime: {
      type: 'string',
      description: "Where functions run: inprocess (fast) | emulator (Lambda's own runtime: aws-lambda-ric under AWS's emulator)",
      default: 'inprocess',
      placeholder: 'kind',
    },
    ordering: {
      type: 'string',
      description:
        'Queues: unordered (standard) | per-key (FIFO by object key, plus a delay queue per function: one reconcile of a key at a time, requeues merge)',
      default: 'unordered',
      placeholder: 'mode',
    },
    'no-samples': { type: 'boolean', description: 'Do not apply infra/samples/*.yaml' },
    traces: { type: 'boolean', description: "Print each change's trace (forward → reconcile → follow-ups, with the API requests) as a tree" },
    verbose: { type: 'boolean', short: 'v', description: 'Debug-level component logs' },
  },
  examples: [
    'npm start',
    'npm start -- --traces',
    'npm start -- --runtime emulator',
    'npm start -- --ordering per-key',
    'npx operless dev --broker elasticmq',
    'npx operless dev --context kind-dev --no-samples',
  ],
};

export async function dev(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(devSpec, argv);
  if (args.values.help) return { output: helpText(devSpec) };
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
  const brokerName = stringOption(args.values, 'broker') ?? 'embedded';
  let broker: import('../../devloop/dev-queues.ts').BrokerChoice;
  if (brokerName === 'embedded' || brokerName === 'elasticmq') broker = { type: brokerName };
  else if (brokerName === 'sqs') {
    const queueUrl = stringOption(args.values, 'queue-url');
    const dlqUrl = stringOption(args.values, 'dlq-url');
    const region = stringOption(args.values, 'region') ?? process.env.AWS_REGION;
    if (!queueUrl || !dlqUrl || !region) throw new UsageError('--broker sqs needs --queue-url, --dlq-url and --region (or AWS_REGION)');
    broker = { type: 'sqs', queueUrl, dlqUrl, region };
  } else {
    throw new UsageError(`--broker must be embedded, elasticmq or sqs, got "${brokerName}"`);
  }
  const runtime = stringOption(args.values, 'runtime') ?? 'inprocess';
  if (runtime !== 'inprocess' && runtime !== 'emulator') throw new UsageError(`--runtime must be inprocess or emulator, got "${runtime}"`);
  const traces = args.values.traces === true;
  if (traces && runtime === 'emulator')
    throw new UsageError(
      '--traces needs --runtime inprocess (under the emulator the functions run in processes of their own; send their spans to a collector with OTEL_EXPORTER_OTLP_ENDPOINT instead)',
    );
  const orderingText = stringOption(args.values, 'ordering') ?? 'unordered';
  const ordering = asOrdering(orderingText);
  if (!ordering) throw new UsageError(`--ordering must be ${ORDERINGS.join(' or ')}, got ${JSON.stringify(orderingText)}`);
  if (ordering === 'per-key' && broker.type === 'sqs') {
    throw new UsageError(
      '--ordering per-key needs the local broker (embedded or --broker elasticmq): with --broker sqs the deployed queues decide (deploy with ordering=per-key and give its FIFO work queue as --queue-url)',
    );
  }
  const { startDevLoop } = await import('../../devloop/dev-loop.ts');
  const context = stringOption(args.values, 'context');
  const kubeconfigPath = stringOption(args.values, 'kubeconfig');
  const loop = await startDevLoop({
    root: stringOption(args.values, 'project') ?? process.cwd(),
    broker,
    ...(context ? { context } : {}),
    ...(kubeconfigPath ? { kubeconfigPath } : {}),
    applySamples: args.values['no-samples'] !== true,
    runtime,
    traces,
    ordering,
    verbose: args.values.verbose === true,
  });
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`operless dev: ${signal} again; exiting now\n`);
        process.exit(130);
      }
      stopping = true;
      process.stdout.write(`» ${signal}: stopping the functions, the forwarder, the queue and the control plane\n`);
      loop.stop().then(resolve, (err: unknown) => {
        process.stderr.write(`operless dev: error while stopping: ${errorMessage(err)}\n`);
        resolve();
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  return { output: '» stopped; nothing left running\n' };
}
