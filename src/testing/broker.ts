/**
 * A real SQS-compatible broker for tests: ElasticMQ (from Maven Central, run on the local
 * Java) on a loopback port, speaking the SQS JSON protocol that `@aws-sdk/client-sqs` v3 uses.
 *
 * Guarantees:
 * - `startBroker()` resolves when the endpoint answers and every configured queue exists
 *   (default: `work` with visibility 30 s and redrive to `work-dlq` after 5 receives).
 * - Queues are declared in ElasticMQ's generated config, so redrive policies, visibility
 *   timeouts and delays are the broker's own behaviour, not the harness's.
 * - `restart()` keeps the port and re-creates the configured queues and every queue made
 *   with `createQueue()`. Messages: by default ElasticMQ keeps them in memory, so a restart
 *   loses them (unlike SQS). With `persistMessages: true` they are stored in an H2 file and
 *   survive restarts, as on SQS. Queues created directly through the SDK's CreateQueue do
 *   not survive a restart unless `persistMessages` is on.
 * - No orphans (see process.ts); failures quote the broker's log tail.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  createQueueAttributes,
  DEFAULT_QUEUES,
  elasticMqConfig,
  elasticMqJavaArgs,
  elasticMqStorageConfig,
  expandQueues,
  LOOPBACK,
  missingQueues,
} from './config.ts';
import type { QueueSpec } from './config.ts';
import { httpCall } from './http.ts';
import { assertPortFree, freePorts } from './ports.ts';
import { removeOnExit, startProcess } from './process.ts';
import type { ManagedProcess } from './process.ts';
import { provision } from './provision.ts';
import { waitComponentReady } from './readiness.ts';
import type { PortClash, ReadinessProbe } from './readiness.ts';

export interface BrokerOptions {
  /** Queues to create at start (and on every restart). Default: `DEFAULT_QUEUES` (work + work-dlq). */
  readonly queues?: readonly QueueSpec[];
  /** Keep messages (and SDK-created queues) across `restart()`, in an H2 database file. Default false. */
  readonly persistMessages?: boolean;
  /** How long the JVM may take to come up (default 60 s). */
  readonly readyTimeoutMs?: number;
}

export interface Broker {
  /** http://127.0.0.1:PORT — pass as `endpoint` to an SQSClient. */
  readonly endpoint: string;
  readonly region: string;
  /** The URL of a queue by name (whether or not it exists). */
  queueUrl(name: string): string;
  /** The ARN ElasticMQ gives a queue, for redrive policies. */
  queueArn(name: string): string;
  /** A new SQSClient for this broker (endpoint, region, dummy credentials); destroyed on stop(). */
  sqs(): SQSClient;
  /** Creates a queue (and its DLQ when named and missing); it is re-created on restart. Returns its URL. */
  createQueue(spec: QueueSpec): Promise<string>;
  /** Stops the broker for good and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Stops the broker process but keeps its port, queues and (with persistence) messages: an outage. */
  pause(): Promise<void>;
  /** Starts a paused broker again on the same port. */
  start(): Promise<void>;
  restart(): Promise<void>;
  /** Path of the broker's log file. */
  readonly logPath: string;
}

const REGION = 'us-east-1';
const ACCOUNT = '000000000000';
/** How the JVM reports a taken port. */
const PORT_CLASH: PortClash = {
  logPattern: /BindException|Address already in use/i,
  hint: ' Its port is in use by another process: stop that process and try again.',
};

/** One broker's fixed facts and the state its operations share. */
interface BrokerState {
  readonly options: BrokerOptions;
  readonly java: string;
  readonly elasticmqLib: string;
  readonly readyTimeoutMs: number;
  /** Temp dir: config, log and (with persistence) messages; removed on stop. */
  readonly dir: string;
  readonly forgetDir: () => void;
  readonly port: number;
  readonly endpoint: string;
  readonly configPath: string;
  readonly logPath: string;
  /** Queues as given (start options and `createQueue`), and expanded with their DLQs. */
  declared: QueueSpec[];
  queues: QueueSpec[];
  readonly clients: Set<SQSClient>;
  proc: ManagedProcess | undefined;
  stopped: boolean;
}

export async function startBroker(options: BrokerOptions = {}): Promise<Broker> {
  const state = await newBrokerState(options);
  try {
    await startElasticMq(state);
  } catch (err) {
    await stopElasticMq(state);
    rmSync(state.dir, { recursive: true, force: true });
    state.forgetDir();
    throw err;
  }
  return brokerHandle(state);
}

async function newBrokerState(options: BrokerOptions): Promise<BrokerState> {
  const found = await provision({ targets: ['elasticmq'] });
  if (!found.elasticmqLib || !found.java) throw new Error('provisioning returned no ElasticMQ; this is a bug in provision.ts');
  const dir = mkdtempSync(join(tmpdir(), 'operless-broker-'));
  const forgetDir = removeOnExit(dir);
  const [port = 0] = await freePorts(1);
  const declared = [...(options.queues ?? DEFAULT_QUEUES)];
  return {
    options,
    java: found.java,
    elasticmqLib: found.elasticmqLib,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
    dir,
    forgetDir,
    port,
    endpoint: `http://${LOOPBACK}:${port}`,
    configPath: join(dir, 'elasticmq.conf'),
    logPath: join(dir, 'elasticmq.log'),
    declared,
    queues: expandQueues(declared),
    clients: new Set(),
    proc: undefined,
    stopped: false,
  };
}

/** Writes the config for the current queues and starts the JVM on the broker's port, unless it runs. */
async function startElasticMq(state: BrokerState): Promise<void> {
  if (state.stopped) throw new Error('this broker was stopped for good; start a new one with startBroker()');
  if (state.proc?.isRunning()) return;
  const storage = state.options.persistMessages ? elasticMqStorageConfig(state.dir) : '';
  writeFileSync(state.configPath, elasticMqConfig(state.port, state.queues) + storage);
  await assertPortFree('ElasticMQ', state.port);
  const started = startProcess({
    name: 'ElasticMQ',
    command: state.java,
    args: elasticMqJavaArgs(state.elasticmqLib, state.configPath),
    logPath: state.logPath,
    cleanupDir: state.dir,
  });
  state.proc = started;
  await waitComponentReady(
    started,
    queuesListed(
      state.endpoint,
      state.queues.map((q) => q.name),
    ),
    state.readyTimeoutMs,
    PORT_CLASH,
  );
}

/** Ready when ListQueues answers and names every configured queue. */
function queuesListed(endpoint: string, queueNames: readonly string[]): ReadinessProbe {
  return async () => {
    const res = await httpCall(`${endpoint}/?Action=ListQueues`, { timeoutMs: 2000 });
    if (res.status !== 200) return `HTTP ${res.status}`;
    const missing = missingQueues(res.body, queueNames);
    return missing.length === 0 || `queues not created yet: ${missing.join(', ')}`;
  };
}

async function stopElasticMq(state: BrokerState): Promise<void> {
  const p = state.proc;
  state.proc = undefined;
  await p?.stop();
}

function newSqsClient(state: BrokerState): SQSClient {
  const client = new SQSClient({
    endpoint: state.endpoint,
    region: REGION,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  state.clients.add(client);
  return client;
}

const queueUrlOf = (endpoint: string, name: string) => `${endpoint}/${ACCOUNT}/${name}`;
const queueArnOf = (name: string) => `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`;

/** Declares `spec` (so a restart re-creates it), then creates it and any DLQ it names through the SDK. */
async function createQueueOnBroker(state: BrokerState, spec: QueueSpec): Promise<string> {
  const nextDeclared = [...state.declared.filter((q) => q.name !== spec.name), spec];
  state.queues = expandQueues(nextDeclared); // validates before anything is created
  state.declared = nextDeclared;
  const client = newSqsClient(state);
  try {
    for (const q of expandQueues([spec])) {
      let dlqArn: string | undefined;
      if (q.dlq) {
        const dlqAttributes = await client.send(
          new GetQueueAttributesCommand({ QueueUrl: queueUrlOf(state.endpoint, q.dlq.name), AttributeNames: ['QueueArn'] }),
        );
        dlqArn = dlqAttributes.Attributes?.QueueArn ?? queueArnOf(q.dlq.name);
      }
      await client.send(new CreateQueueCommand({ QueueName: q.name, Attributes: createQueueAttributes(q, dlqArn) }));
    }
  } finally {
    state.clients.delete(client);
    client.destroy();
  }
  return queueUrlOf(state.endpoint, spec.name);
}

async function stopBrokerForGood(state: BrokerState): Promise<void> {
  if (state.stopped) return;
  state.stopped = true;
  for (const client of state.clients) client.destroy();
  state.clients.clear();
  await stopElasticMq(state);
  rmSync(state.dir, { recursive: true, force: true, maxRetries: 3 });
  state.forgetDir();
}

function brokerHandle(state: BrokerState): Broker {
  return {
    endpoint: state.endpoint,
    region: REGION,
    logPath: state.logPath,
    queueUrl: (name) => queueUrlOf(state.endpoint, name),
    queueArn: queueArnOf,
    sqs: () => newSqsClient(state),
    createQueue: (spec) => createQueueOnBroker(state, spec),
    stop: () => stopBrokerForGood(state),
    pause: () => stopElasticMq(state),
    start: () => startElasticMq(state),
    async restart() {
      await stopElasticMq(state);
      await startElasticMq(state);
    },
  };
}
