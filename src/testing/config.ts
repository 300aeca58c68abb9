/**
 * Command lines and config files of the test environment's components, as pure functions:
 * etcd, kube-apiserver (envtest's flags), kube-controller-manager, a kubeconfig, and
 * ElasticMQ's HOCON. The harness writes and runs what these return; unit tests check them.
 *
 * Guarantees: every component binds to 127.0.0.1 only; the API server authorizes with RBAC
 * (so least-privilege tests mean something) and authenticates a token from a token file (the
 * admin, in `system:masters`), client certificates from the test CA, and service-account tokens.
 */
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { QueueSpec } from '../local/memory-queue-server.ts';

export const LOOPBACK = '127.0.0.1';

export interface EtcdPorts {
  readonly client: number;
  readonly peer: number;
}

export function etcdArgs(dataDir: string, ports: EtcdPorts): string[] {
  const client = `http://${LOOPBACK}:${ports.client}`;
  const peer = `http://${LOOPBACK}:${ports.peer}`;
  return [
    '--name=operless-test',
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=operless-test=${peer}`,
    '--unsafe-no-fsync=true', // test data: durability buys nothing, fsync costs seconds
    '--log-level=warn',
  ];
}

/** Files the API server reads; all paths absolute. */
export interface ApiServerFiles {
  readonly servingCert: string;
  readonly servingKey: string;
  readonly certDir: string;
  readonly clientCa: string;
  readonly tokenFile: string;
  readonly serviceAccountPublicKey: string;
  readonly serviceAccountPrivateKey: string;
}

export interface ApiServerArgsInput {
  readonly port: number;
  readonly etcdClientPort: number;
  readonly files: ApiServerFiles;
  /** The API server's watch cache (on by default, as in a real cluster). */
  readonly watchCache?: boolean;
  /** More flags, `--name=value`; they override defaults of the same name. */
  readonly extraArgs?: readonly string[];
}

export function apiServerArgs(input: ApiServerArgsInput): string[] {
  const { port, files } = input;
  const defaults = [
    `--etcd-servers=http://${LOOPBACK}:${input.etcdClientPort}`,
    `--secure-port=${port}`,
    `--bind-address=${LOOPBACK}`,
    `--advertise-address=${LOOPBACK}`,
    `--cert-dir=${files.certDir}`,
    `--tls-cert-file=${files.servingCert}`,
    `--tls-private-key-file=${files.servingKey}`,
    `--client-ca-file=${files.clientCa}`,
    `--token-auth-file=${files.tokenFile}`,
    '--authorization-mode=RBAC',
    // Without it every pod needs a ServiceAccount that no controller creates (envtest does the same).
    '--disable-admission-plugins=ServiceAccount',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    `--service-account-issuer=https://${LOOPBACK}:${port}/`,
    `--service-account-key-file=${files.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${files.serviceAccountPrivateKey}`,
    `--watch-cache=${input.watchCache ?? true}`,
    '--profiling=false',
  ];
  return mergeFlags(defaults, input.extraArgs ?? []);
}

/** The controllers that make owner references and namespace deletion work, like a real cluster. */
export const DEFAULT_CONTROLLERS: readonly string[] = ['garbage-collector-controller', 'namespace-controller'];
/** Adds Deployments -> ReplicaSets -> Pods (pods are never scheduled: there is no kubelet). */
export const WORKLOAD_CONTROLLERS: readonly string[] = [...DEFAULT_CONTROLLERS, 'deployment-controller', 'replicaset-controller'];

/** The controller list for `controllers: true | string[]`; empty means do not run the controller manager. */
export function controllerList(option: boolean | readonly string[] | undefined): string[] {
  if (option === true) return [...DEFAULT_CONTROLLERS];
  if (!option) return [];
  return [...option];
}

export interface ControllerManagerArgsInput {
  readonly kubeconfigPath: string;
  readonly controllers: readonly string[];
  readonly port: number;
  readonly certDir: string;
  readonly serviceAccountPrivateKey: string;
  readonly rootCa: string;
  readonly extraArgs?: readonly string[];
}

export function controllerManagerArgs(input: ControllerManagerArgsInput): string[] {
  const defaults = [
    `--kubeconfig=${input.kubeconfigPath}`,
    `--authentication-kubeconfig=${input.kubeconfigPath}`,
    `--authorization-kubeconfig=${input.kubeconfigPath}`,
    `--controllers=${input.controllers.join(',')}`,
    '--leader-elect=false',
    '--use-service-account-credentials=false',
    `--bind-address=${LOOPBACK}`,
    `--secure-port=${input.port}`,
    `--cert-dir=${input.certDir}`,
    `--service-account-private-key-file=${input.serviceAccountPrivateKey}`,
    `--root-ca-file=${input.rootCa}`,
    '--profiling=false',
  ];
  return mergeFlags(defaults, input.extraArgs ?? []);
}

/** `--name=value` flags: later ones replace earlier ones of the same name. */
export function mergeFlags(defaults: readonly string[], overrides: readonly string[]): string[] {
  const name = (flag: string) => flag.split('=', 1)[0] ?? flag;
  const overridden = new Set(overrides.map(name));
  return [...defaults.filter((f) => !overridden.has(name(f))), ...overrides];
}

/** One line of the API server's `--token-auth-file`: token,user,uid,"group1,group2". */
export function tokenFileLine(token: string, user: string, groups: readonly string[]): string {
  for (const value of [token, user, ...groups]) {
    if (/[",\n]/.test(value)) throw new Error(`token file values cannot contain commas, quotes or newlines: "${value}"`);
  }
  return `${token},${user},${user},"${groups.join(',')}"\n`;
}

export type KubeconfigCredentials = { readonly token: string } | { readonly clientCertPem: string; readonly clientKeyPem: string };

export interface KubeconfigInput {
  readonly server: string;
  readonly caPem: string;
  readonly user: string;
  readonly credentials: KubeconfigCredentials;
  /** Context and cluster name; `operless-test` by default. */
  readonly name?: string;
}

/** A kubeconfig that kubectl, client-go and `@kubernetes/client-node` all read. */
export function kubeconfigYaml(input: KubeconfigInput): string {
  const name = input.name ?? 'operless-test';
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const user =
    'token' in input.credentials
      ? { token: input.credentials.token }
      : { 'client-certificate-data': b64(input.credentials.clientCertPem), 'client-key-data': b64(input.credentials.clientKeyPem) };
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server: input.server, 'certificate-authority-data': b64(input.caPem) } }],
    users: [{ name: input.user, user }],
    contexts: [{ name, context: { cluster: name, user: input.user } }],
    'current-context': name,
    preferences: {},
  });
}

// --- ElasticMQ ---------------------------------------------------------------------------

/** One queue description for ElasticMQ and the embedded queue alike (src/queue). */
export type { QueueSpec } from '../local/memory-queue-server.ts';

/** The queues when none are given: a work queue and its DLQ, as serverless.yml deploys them. */
export const DEFAULT_QUEUES: readonly QueueSpec[] = [{ name: 'work', visibilityTimeoutSeconds: 30, dlq: { name: 'work-dlq', maxReceiveCount: 5 } }];

/** Every queue to create: the given ones plus any DLQ they name that is not given itself. */
export function expandQueues(queues: readonly QueueSpec[]): QueueSpec[] {
  const byName = new Map<string, QueueSpec>();
  for (const q of queues) {
    validateQueueName(q.name);
    if (byName.has(q.name)) throw new Error(`queue "${q.name}" is listed twice; give each queue once`);
    byName.set(q.name, q);
  }
  const out = [...queues];
  for (const q of queues) {
    if (!q.dlq) continue;
    validateQueueName(q.dlq.name);
    if (q.dlq.name === q.name) throw new Error(`queue "${q.name}" cannot be its own dead-letter queue`);
    if (!Number.isInteger(q.dlq.maxReceiveCount) || q.dlq.maxReceiveCount < 1 || q.dlq.maxReceiveCount > 1000) {
      throw new Error(`queue "${q.name}": dlq.maxReceiveCount must be an integer from 1 to 1000 (got ${q.dlq.maxReceiveCount})`);
    }
    if (!byName.has(q.dlq.name)) {
      const dlq: QueueSpec = { name: q.dlq.name };
      byName.set(dlq.name, dlq);
      out.push(dlq);
    }
  }
  // DLQs first: ElasticMQ (like SQS) needs a redrive target to exist.
  const isDlq = new Set(out.flatMap((q) => (q.dlq ? [q.dlq.name] : [])));
  return [...out.filter((q) => isDlq.has(q.name)), ...out.filter((q) => !isDlq.has(q.name))];
}

function validateQueueName(name: string): void {
  if (!/^[A-Za-z0-9_-]{1,80}(\.fifo)?$/.test(name)) {
    throw new Error(`"${name}" is not a valid SQS queue name: use 1-80 letters, digits, '-' or '_'`);
  }
}

/** ElasticMQ's HOCON config: the REST SQS endpoint on loopback and the queues. */
export function elasticMqConfig(port: number, queues: readonly QueueSpec[]): string {
  const lines = [
    'include classpath("application.conf")',
    `node-address { protocol = http, host = "${LOOPBACK}", port = ${port}, context-path = "" }`,
    `rest-sqs { enabled = true, bind-port = ${port}, bind-hostname = "${LOOPBACK}", sqs-limits = strict }`,
    'rest-stats { enabled = false }',
    'aws { region = "us-east-1", accountId = "000000000000" }',
    'queues {',
  ];
  for (const q of expandQueues(queues)) {
    const attrs: string[] = [];
    if (q.visibilityTimeoutSeconds !== undefined) attrs.push(`defaultVisibilityTimeout = ${seconds(q.visibilityTimeoutSeconds)} seconds`);
    if (q.delaySeconds !== undefined) attrs.push(`delay = ${seconds(q.delaySeconds)} seconds`);
    if (q.receiveMessageWaitSeconds !== undefined) attrs.push(`receiveMessageWait = ${seconds(q.receiveMessageWaitSeconds)} seconds`);
    if (q.dlq) attrs.push(`deadLettersQueue { name = "${q.dlq.name}", maxReceiveCount = ${q.dlq.maxReceiveCount} }`);
    if (q.name.endsWith('.fifo')) attrs.push('fifo = true');
    lines.push(`  "${q.name}" { ${attrs.join(', ')} }`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

function seconds(value: number): number {
  if (!Number.isInteger(value) || value < 0) throw new Error(`queue timings are whole seconds >= 0 (got ${value})`);
  return value;
}

/** The config lines that keep messages (H2 file) and queues across restarts, below `dir`. */
export function elasticMqStorageConfig(dir: string): string {
  return (
    `messages-storage { enabled = true, uri = "jdbc:h2:${join(dir, 'messages')}" }\n` +
    `queues-storage { enabled = true, path = "${join(dir, 'queues.conf')}" }\n`
  );
}

/** The JVM command line that runs ElasticMQ from its jars in `lib` with `configPath`. */
export function elasticMqJavaArgs(lib: string, configPath: string): string[] {
  return [
    '-XX:+UseSerialGC', // two cores: the default G1 threads only compete with the tests
    '-XX:TieredStopAtLevel=1', // faster start, plenty fast for tests
    '-Xss1m',
    `-Dconfig.file=${configPath}`,
    '-cp',
    join(lib, '*'),
    'org.elasticmq.server.Main',
  ];
}

/** The CreateQueue attributes of `queue`; `dlqArn` is its dead-letter queue's ARN when it names one. */
export function createQueueAttributes(queue: QueueSpec, dlqArn: string | undefined): Record<string, string> {
  const attributes: Record<string, string> = {};
  if (queue.visibilityTimeoutSeconds !== undefined) attributes.VisibilityTimeout = String(queue.visibilityTimeoutSeconds);
  if (queue.delaySeconds !== undefined) attributes.DelaySeconds = String(queue.delaySeconds);
  if (queue.receiveMessageWaitSeconds !== undefined) attributes.ReceiveMessageWaitTimeSeconds = String(queue.receiveMessageWaitSeconds);
  if (queue.dlq && dlqArn !== undefined) attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: queue.dlq.maxReceiveCount });
  if (queue.name.endsWith('.fifo')) attributes.FifoQueue = 'true';
  return attributes;
}

/** The names in `queueNames` that a ListQueues answer (XML) does not list. */
export function missingQueues(listQueuesBody: string, queueNames: readonly string[]): string[] {
  return queueNames.filter((name) => !listQueuesBody.includes(`/${name}<`));
}
