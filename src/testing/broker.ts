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
import { DEFAULT_QUEUES, elasticMqConfig, expandQueues, LOOPBACK } from './config.ts';
import type { QueueSpec } from './config.ts';
import { httpCall } from './http.ts';
import { assertPortFree, freePorts } from './ports.ts';
import { removeOnExit, sleep, startProcess } from './process.ts';
import type { ManagedProcess } from './process.ts';
import { provision } from './provision.ts';
import { ComponentNotReadyError } from './control-plane.ts';

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

export async function startBroker(options: BrokerOptions = {}): Promise<Broker> {
  const found = await provision({ targets: ['elasticmq'] });
  if (!found.elasticmqLib || !found.java) throw new Error('provisioning returned no ElasticMQ; this is a bug in provision.ts');
  const { elasticmqLib, java } = found;
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'operless-broker-'));
  const forgetDir = removeOnExit(dir);
  const [port = 0] = await freePorts(1);
  const endpoint = `http://${LOOPBACK}:${port}`;
  const configPath = join(dir, 'elasticmq.conf');
  const logPath = join(dir, 'elasticmq.log');
  let declared: QueueSpec[] = [...(options.queues ?? DEFAULT_QUEUES)];
  let queues: QueueSpec[] = expandQueues(declared);
  const clients = new Set<SQSClient>();
  let proc: ManagedProcess | undefined;
  let stopped = false;

  const writeConfig = () => {
    let text = elasticMqConfig(port, queues);
    if (options.persistMessages) {
      text += `messages-storage { enabled = true, uri = "jdbc:h2:${join(dir, 'messages')}" }\n`;
      text += `queues-storage { enabled = true, path = "${join(dir, 'queues.conf')}" }\n`;
    }
    writeFileSync(configPath, text);
  };

  const start = async () => {
    if (stopped) throw new Error('this broker was stopped for good; start a new one with startBroker()');
    if (proc?.isRunning()) return;
    writeConfig();
    await assertPortFree('ElasticMQ', port);
    const started = startProcess({
      name: 'ElasticMQ',
      command: java,
      args: [
        '-XX:+UseSerialGC', // two cores: the default G1 threads only compete with the tests
        '-XX:TieredStopAtLevel=1', // faster start, plenty fast for tests
        '-Xss1m',
        `-Dconfig.file=${configPath}`,
        '-cp',
        join(elasticmqLib, '*'),
        'org.elasticmq.server.Main',
      ],
      logPath,
      cleanupDir: dir,
    });
    proc = started;
    await waitBrokerReady(started, endpoint, queues.map((q) => q.name), readyTimeoutMs);
  };

  const stopProcess = async () => {
    const p = proc;
    proc = undefined;
    await p?.stop();
  };

  const newClient = () => {
    const client = new SQSClient({
      endpoint,
      region: REGION,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    clients.add(client);
    return client;
  };

  try {
    await start();
  } catch (err) {
    await stopProcess();
    rmSync(dir, { recursive: true, force: true });
    forgetDir();
    throw err;
  }

  const queueUrl = (name: string) => `${endpoint}/${ACCOUNT}/${name}`;
  const queueArn = (name: string) => `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`;

  return {
    endpoint,
    region: REGION,
    logPath,
    queueUrl,
    queueArn,
    sqs: newClient,
    async createQueue(spec) {
      const nextDeclared = [...declared.filter((q) => q.name !== spec.name), spec];
      queues = expandQueues(nextDeclared); // validates before anything is created
      declared = nextDeclared;
      const client = newClient();
      try {
        for (const q of expandQueues([spec])) {
          const attributes: Record<string, string> = {};
          if (q.visibilityTimeoutSeconds !== undefined) attributes.VisibilityTimeout = String(q.visibilityTimeoutSeconds);
          if (q.delaySeconds !== undefined) attributes.DelaySeconds = String(q.delaySeconds);
          if (q.receiveMessageWaitSeconds !== undefined) attributes.ReceiveMessageWaitTimeSeconds = String(q.receiveMessageWaitSeconds);
          if (q.dlq) {
            const dlqAttributes = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl(q.dlq.name), AttributeNames: ['QueueArn'] }));
            attributes.RedrivePolicy = JSON.stringify({
              deadLetterTargetArn: dlqAttributes.Attributes?.QueueArn ?? queueArn(q.dlq.name),
              maxReceiveCount: q.dlq.maxReceiveCount,
            });
          }
          await client.send(new CreateQueueCommand({ QueueName: q.name, Attributes: attributes }));
        }
      } finally {
        clients.delete(client);
        client.destroy();
      }
      return queueUrl(spec.name);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const client of clients) client.destroy();
      clients.clear();
      await stopProcess();
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      forgetDir();
    },
    pause: () => stopProcess(),
    start,
    async restart() {
      await stopProcess();
      await start();
    },
  };
}

async function waitBrokerReady(proc: ManagedProcess, endpoint: string, queueNames: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void proc.exited.then((code) => (exitCode = code ?? -1));
  let last = '';
  while (Date.now() < deadline) {
    if (exitCode !== undefined) {
      const tail = proc.logTail(40);
      const hint = /BindException|Address already in use/i.test(tail) ? ' Its port is in use by another process: stop that process and try again.' : '';
      throw new ComponentNotReadyError(`ElasticMQ exited (code ${exitCode}) before it became ready.${hint} Its log is ${proc.logPath}; last lines:\n${tail}`);
    }
    try {
      const res = await httpCall(`${endpoint}/?Action=ListQueues`, { timeoutMs: 2000 });
      if (res.status === 200) {
        const missing = queueNames.filter((name) => !res.body.includes(`/${name}<`));
        if (missing.length === 0) return;
        last = `queues not created yet: ${missing.join(', ')}`;
      } else last = `HTTP ${res.status}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(100);
  }
  await proc.stop();
  throw new ComponentNotReadyError(
    `ElasticMQ did not become ready within ${Math.round(timeoutMs / 1000)} s (last probe: ${last}). ` +
      `The machine may be overloaded: raise readyTimeoutMs, or read its log ${proc.logPath}; last lines:\n${proc.logTail(40)}`,
  );
}
