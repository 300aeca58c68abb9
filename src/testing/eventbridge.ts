/**
 * A real Amazon EventBridge emulator for tests: moto's server (PyPI, provisioned into the cache
 * by `build.sh moto`) on a loopback port. It serves EventBridge (event buses, PutEvents, rules
 * with event patterns, targets with InputTransformer, archives) and SQS from the same endpoint;
 * a rule's SQS target can only be one of moto's own queues, so the EventBridge path of a test
 * runs forwarder → moto bus → moto rule → moto queue → function.
 *
 * What moto does differently (checked against its source, moto 5.2): a target's `InputPath` is
 * ignored (the target receives the whole event envelope), PutEvents does not check the 256 KiB
 * request limit, and a replay sends every archived event to every rule of the bus, untransformed,
 * whatever its time range and `FilterArns`.
 *
 * Guarantees: `startEventBridge()` resolves when the server answers; `routeToQueue` creates a
 * queue, its rule and target; `stop()` ends the process and removes its folder; no orphans
 * (process.ts); a server that fails to start quotes its log tail.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand, type Target } from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LOOPBACK } from './config.ts';
import { httpCall } from './http.ts';
import { assertPortFree, freePorts } from './ports.ts';
import { removeOnExit, startProcess } from './process.ts';
import { provision } from './provision.ts';
import { waitComponentReady } from './readiness.ts';

/** moto's account and the region its clients here use. */
export const EMULATOR_ACCOUNT = '123456789012';
export const EMULATOR_REGION = 'us-east-1';

/** A rule on a bus that sends the events of one source (and optionally one kind) to a queue. */
export interface QueueRoute {
  readonly bus: string;
  readonly rule: string;
  readonly source: string;
  /** Only the events whose detail names this kind; every event of `source` when absent. */
  readonly kind?: string;
  readonly queueName: string;
  /** How the target shapes what the queue receives (default: the whole event). */
  readonly input?: Pick<Target, 'InputPath' | 'InputTransformer'>;
}

export interface EventBridgeEmulator {
  /** http://127.0.0.1:PORT, for both EventBridge and SQS clients. */
  readonly endpoint: string;
  readonly region: string;
  readonly logPath: string;
  /** A client of the emulator's EventBridge (dummy credentials); destroyed on stop(). */
  events(): EventBridgeClient;
  /** A client of the emulator's SQS; destroyed on stop(). */
  sqs(): SQSClient;
  /** Creates an event bus; returns its ARN. */
  createBus(name: string): Promise<string>;
  /** Creates the queue (if new), a rule matching `source` (and `kind`) and its SQS target; returns the queue URL. */
  routeToQueue(route: QueueRoute): Promise<string>;
  stop(): Promise<void>;
}

/** The event pattern of a route: its source, and its kind when given. Pure. */
export function routePattern(route: Pick<QueueRoute, 'source' | 'kind'>): string {
  return JSON.stringify({ source: [route.source], ...(route.kind ? { detail: { kind: [route.kind] } } : {}) });
}

export async function startEventBridge(options: { readyTimeoutMs?: number } = {}): Promise<EventBridgeEmulator> {
  const { motoPython } = await provision({ targets: ['moto'] });
  if (!motoPython) throw new Error('provisioning returned no moto; this is a bug in provision.ts');
  const dir = mkdtempSync(join(tmpdir(), 'operless-moto-'));
  const forgetDir = removeOnExit(dir);
  const [port = 0] = await freePorts(1);
  await assertPortFree('moto', port);
  const endpoint = `http://${LOOPBACK}:${port}`;
  const logPath = join(dir, 'moto.log');
  const proc = startProcess({ name: 'moto', command: motoPython, args: ['-m', 'moto.server', '-H', LOOPBACK, '-p', String(port)], logPath, cleanupDir: dir });
  const clients = new Set<{ destroy(): void }>();
  const stop = async () => {
    for (const c of clients) c.destroy();
    clients.clear();
    await proc.stop();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    forgetDir();
  };
  try {
    await waitComponentReady(
      proc,
      async () => {
        const res = await httpCall(`${endpoint}/moto-api/data.json`, { timeoutMs: 2000 });
        return res.status === 200 || `HTTP ${res.status}`;
      },
      options.readyTimeoutMs ?? 60_000,
      { logPattern: /Address already in use/i, hint: ' Its port is in use by another process: try again.' },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const config = { endpoint, region: EMULATOR_REGION, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
  const track = <T extends { destroy(): void }>(client: T): T => (clients.add(client), client);
  const admin = track(new EventBridgeClient(config));
  const adminSqs = track(new SQSClient(config));
  return {
    endpoint,
    region: EMULATOR_REGION,
    logPath,
    events: () => track(new EventBridgeClient(config)),
    sqs: () => track(new SQSClient(config)),
    async createBus(name) {
      return (await admin.send(new CreateEventBusCommand({ Name: name }))).EventBusArn ?? '';
    },
    async routeToQueue(route) {
      const { QueueUrl: queueUrl = '' } = await adminSqs.send(new CreateQueueCommand({ QueueName: route.queueName }));
      const { Attributes } = await adminSqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
      await admin.send(new PutRuleCommand({ Name: route.rule, EventBusName: route.bus, EventPattern: routePattern(route), State: 'ENABLED' }));
      await admin.send(
        new PutTargetsCommand({ Rule: route.rule, EventBusName: route.bus, Targets: [{ Id: 'queue', Arn: Attributes?.QueueArn ?? '', ...route.input }] }),
      );
      return queueUrl;
    },
    stop,
  };
}
