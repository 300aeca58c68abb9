/**
 * A failover at N watched primaries, cold standby against warm standby
 * (`leaderElection.warmStandby`, docs/forwarder.md "Warm standby"). Per mode: two replicas of the
 * shipped forwarder bundle (each its own process under the image's Node.js flags, leader election
 * on, `resyncOnStart`); the leader resyncs the N Memcacheds once (read back and discarded); the
 * follower stands by (warm: it lists and watches too). Then the leader is SIGKILLed and one
 * Memcached is created at once. Measured: seconds from the kill to the follower's "became the
 * leader" line, from the kill and from the takeover to the arrival of that change in the queue,
 * the messages sent after the kill (read back until 5 s of quiet), the LIST requests the API
 * server served for Memcacheds after the kill (its own apiserver_request_total), and the
 * follower's VmRSS before the kill (the cost of a warm store). Both modes wait for the lease to
 * expire alike. Its own control plane and embedded queue (the bench's stay idle meanwhile); the
 * load average is kept with each row.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { decodeMessage, type ReconcileMessage } from '../../src/contract/message.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { FORWARDER_NODE_FLAGS } from '../../src/build/forwarder-node-flags.ts';
import { forwarderEnv } from '../lib/forwarder-process.ts';
import { createKubeClient } from '../../src/kube/client.ts';
import { NAMESPACES } from '../../src/kube/kinds.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { startMemoryQueueServer, type MemoryQueueServer } from '../../src/local/memory-queue-server.ts';
import { startControlPlane, type ControlPlane } from '../../src/testing/index.ts';
import { createMemcacheds, names, sleep, until } from '../lib/objects.ts';
import { CRD, MEMCACHED_KIND } from '../lib/systems.ts';

export type StandbyMode = 'cold' | 'warm';

export interface FailoverRow {
  readonly mode: StandbyMode;
  readonly followerVmRssMiB: number;
  readonly killToTakeoverSeconds: number | null;
  readonly takeoverToChangeSeconds: number | null;
  readonly killToChangeSeconds: number | null;
  readonly messagesAfterKill: number;
  readonly messagesAfterKillByReason: Record<string, number>;
  readonly listRequestsAfterKill: number;
  /** The 1-minute load average at the row's start and end. */
  readonly loadavg: readonly [number, number];
}

export interface FailoverResult {
  readonly objects: number;
  /** Lease duration / renew deadline / retry period. */
  readonly lease: string;
  readonly rows: readonly FailoverRow[];
}

export interface FailoverOptions {
  readonly objects: number;
  readonly modes?: readonly StandbyMode[];
  readonly parallel?: number;
  /** Lease duration, renew deadline and retry period in seconds (default 5/3/1). */
  readonly lease?: readonly [number, number, number];
  readonly log?: (line: string) => void;
}

const NAMESPACE = 'failover';

interface Replica {
  readonly child: ChildProcess;
  readonly lines: { at: number; line: Record<string, unknown> }[];
  readonly exited: Promise<number | null>;
}

function vmRssMiB(pid: number): number {
  const kib = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib ?? Number.NaN) / 1024;
}

async function listRequests(cp: ControlPlane): Promise<number> {
  const r = await cp.kubectl(['get', '--raw', '/metrics']);
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('apiserver_request_total{') && l.includes('verb="LIST"') && l.includes('resource="memcacheds"'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Reads the queue until `quietMs` without a message once `done` holds; each message with its arrival time. */
async function drain(
  queues: MemoryQueueServer,
  queue: string,
  quietMs: number,
  done: (got: readonly { message: ReconcileMessage }[]) => boolean = () => true,
  capMs = 300_000,
): Promise<{ at: number; message: ReconcileMessage }[]> {
  const got: { at: number; message: ReconcileMessage }[] = [];
  const start = Date.now();
  let quietSince = Date.now();
  while ((!done(got) || Date.now() - quietSince < quietMs) && Date.now() - start < capMs) {
    const batch = queues.broker.receiveMessage(queue, { maxNumberOfMessages: 10 });
    if (batch.length === 0) {
      await sleep(10);
      continue;
    }
    quietSince = Date.now();
    for (const m of batch) {
      const decoded = decodeMessage(m.body);
      if (!decoded.ok) throw new Error(`invalid message: ${decoded.error}`);
      got.push({ at: quietSince, message: decoded.message });
    }
    queues.broker.deleteMessageBatch(
      queue,
      batch.map((m, i) => ({ id: `d${i}`, receiptHandle: m.receiptHandle })),
    );
  }
  return got;
}

export async function measureFailover(options: FailoverOptions): Promise<FailoverResult> {
  const N = options.objects;
  const modes = options.modes ?? ['cold', 'warm'];
  const [lease, renew, retry] = options.lease ?? [5, 3, 1];
  const rows: FailoverRow[] = [];
  const work = mkdtempSync(join(tmpdir(), 'operless-failover-'));
  const cp = await startControlPlane({ crds: [CRD] });
  const queues = await startMemoryQueueServer();
  const running = new Set<ChildProcess>();
  try {
    const admin = createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'bench' });
    await admin.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    const t0 = Date.now();
    await createMemcacheds(admin, NAMESPACE, names('mc', N), 1, options.parallel ?? 32);
    options.log?.(`  created ${N} Memcacheds in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const bundle = await bundleForwarder(join(work, 'forwarder.mjs'));

    const start = (mode: string, identity: string, queueUrl: string): Replica => {
      const configPath = join(work, `${identity}.yaml`);
      writeFileSync(
        configPath,
        stringify({
          clusterId: 'bench',
          queue: { url: queueUrl, region: queues.region },
          primaries: [{ ...MEMCACHED_KIND, namespaces: [NAMESPACE] }],
          resyncOnStart: true,
          leaderElection: {
            enabled: true,
            namespace: 'default',
            leaseName: `failover-${mode}`,
            identity,
            leaseDurationSeconds: lease,
            renewDeadlineSeconds: renew,
            retryPeriodSeconds: retry,
            warmStandby: mode === 'warm',
          },
          server: { port: 0, host: '127.0.0.1' },
        }),
      );
      const child = spawn(process.execPath, [...FORWARDER_NODE_FLAGS, bundle.outFile], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: forwarderEnv(configPath, cp.kubeconfigPath, queues.endpoint),
      });
      running.add(child);
      const lines: Replica['lines'] = [];
      for (const stream of [child.stdout!, child.stderr!]) {
        createInterface({ input: stream }).on('line', (l) => {
          try {
            lines.push({ at: Date.now(), line: JSON.parse(l) as Record<string, unknown> });
          } catch {
            lines.push({ at: Date.now(), line: { msg: l } });
          }
        });
      }
      const exited = new Promise<number | null>((resolve) =>
        child.on('exit', (code) => {
          running.delete(child);
          resolve(code);
        }),
      );
      return { child, lines, exited };
    };
    const seen = (r: Replica, re: RegExp) => r.lines.find((l) => re.test(String(l.line.msg)));

    for (const mode of modes) {
      const load = loadavg()[0]!;
      const queue = `failover-${mode}`;
      const queueUrl = await queues.createQueue({ name: queue, visibilityTimeoutSeconds: 600 });
      const a = start(mode, `${mode}-a`, queueUrl);
      await until('the first replica leads', () => seen(a, /became the leader/) !== undefined, 120_000);
      await drain(queues, queue, 5000, (got) => got.length >= N);
      const b = start(mode, `${mode}-b`, queueUrl);
      await until('the second replica stands by', () => seen(b, /another replica leads/) !== undefined, 120_000);
      if (mode === 'warm') await until('the follower watches', () => seen(b, /watch synced/) !== undefined, 300_000);
      await sleep(5000); // a few renewals: the leader's watermark is current
      const followerRss = vmRssMiB(b.child.pid!);
      const listsBefore = await listRequests(cp);
      const killed = Date.now();
      a.child.kill('SIGKILL');
      await a.exited;
      const during = `during-${mode}`;
      await createMemcacheds(admin, NAMESPACE, [during], 1, 1);
      const after = await drain(queues, queue, 5000, (got) => got.some((m) => m.message.name === during));
      const tookOver = seen(b, /became the leader/)?.at;
      const change = after.find((m) => m.message.name === during);
      const lists = (await listRequests(cp)) - listsBefore;
      b.child.kill('SIGTERM');
      await b.exited;
      const byReason: Record<string, number> = {};
      for (const m of after) byReason[m.message.reason] = (byReason[m.message.reason] ?? 0) + 1;
      const row: FailoverRow = {
        mode,
        followerVmRssMiB: Number(followerRss.toFixed(0)),
        killToTakeoverSeconds: tookOver ? Number(((tookOver - killed) / 1000).toFixed(2)) : null,
        takeoverToChangeSeconds: tookOver && change ? Number(((change.at - tookOver) / 1000).toFixed(2)) : null,
        killToChangeSeconds: change ? Number(((change.at - killed) / 1000).toFixed(2)) : null,
        messagesAfterKill: after.length,
        messagesAfterKillByReason: byReason,
        listRequestsAfterKill: lists,
        loadavg: [load, loadavg()[0]!],
      };
      rows.push(row);
      options.log?.(
        `  ${mode}: kill → leads ${row.killToTakeoverSeconds} s, leads → change in queue ${row.takeoverToChangeSeconds} s, ${row.messagesAfterKill} messages after the kill, ${row.listRequestsAfterKill} LISTs, follower VmRSS ${row.followerVmRssMiB} MiB`,
      );
    }
  } finally {
    for (const child of running) child.kill('SIGKILL');
    await queues.stop();
    await cp.stop();
    rmSync(work, { recursive: true, force: true });
  }
  return { objects: N, lease: `${lease}/${renew}/${retry} s`, rows };
}
