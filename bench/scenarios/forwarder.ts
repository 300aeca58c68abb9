/**
 * The forwarder on its own, run as it ships: its esbuild bundle as a separate Node process
 * (config file, SQS endpoint through the counting proxy), watching one namespace's
 * Memcached objects (and the owned kinds), with no function consuming the queue, under the
 * image's Node.js flags (src/forwarder/node-options.ts):
 *
 * - live throughput: N objects created as fast as the API server takes them; messages/s;
 * - resident memory (VmRSS, and the peak VmHWM) with N watched objects after the initial list;
 * - resync throughput: the forwarder restarted over N existing objects lists them and sends
 *   N Resync messages; messages per wall second and per CPU second of the process;
 * - coalescing: M objects each changed `burst` times back to back; messages per change.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { FORWARDER_NODE_FLAGS } from '../../src/forwarder/node-options.ts';
import { createMemcacheds, forEachParallel, names, setSize, sleep, until } from '../lib/objects.ts';
import { CLUSTER_ID, type BenchEnv } from '../lib/systems.ts';

export interface ForwarderResult {
  readonly objects: number;
  readonly bundleBytes: number;
  readonly createPerSecond: number;
  readonly liveMessagesPerSecond: number;
  readonly rssMiB: number;
  /** The private (anonymous) part of rssMiB: heaps, buffers, stacks — what the process itself allocated. */
  readonly rssAnonMiB: number;
  /** The file-backed part of rssMiB: pages of the node binary and shared libraries (shared, reclaimable). */
  readonly rssFileMiB: number;
  readonly peakRssMiB: number;
  readonly resyncMessagesPerSecond: number;
  readonly resyncMessagesPerCpuSecond: number;
  readonly coalescing: { readonly objects: number; readonly changesPerObject: number; readonly messages: number; readonly messagesPerChange: number; readonly messagesPerObject: number };
  readonly coalesceWindowMs: number | 'default';
}

interface Proc {
  child: ChildProcess;
  exited: Promise<number | null>;
  lines: string[];
}

function procStatus(pid: number): { rssKiB: number; hwmKiB: number; anonKiB: number; fileKiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM'), anonKiB: field('RssAnon'), fileKiB: field('RssFile') };
}

/** CPU seconds (user + system) used by a process so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

export async function measureForwarder(env: BenchEnv, namespace: string, options: { objects: number; burstObjects: number; burst: number }): Promise<ForwarderResult> {
  await env.namespace(namespace);
  const bundle = await bundleForwarder(join(env.workDir, 'forwarder.mjs'));
  const { queueUrl } = await env.createQueue(namespace);
  const kind = (k: { apiVersion: string; kind: string; plural: string; namespaced: boolean }) => ({ apiVersion: k.apiVersion, kind: k.kind, plural: k.plural, namespaced: k.namespaced, namespaces: [namespace] });
  const configPath = join(env.workDir, 'forwarder.yaml');
  writeFileSync(configPath, stringify({
    clusterId: CLUSTER_ID,
    queue: { url: queueUrl, region: env.queues.region },
    primaries: [kind(env.controller.kind)],
    owned: (env.controller.spec.owns ?? []).map(kind),
    leaderElection: { enabled: false },
    server: { port: 0 },
  }));
  const start = async (): Promise<Proc> => {
    const child = spawn(process.execPath, [...FORWARDER_NODE_FLAGS, bundle.outFile], { // as the image runs it (infra/forwarder/Dockerfile)
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        OPERLESS_FORWARDER_CONFIG: configPath,
        OPERLESS_LOG_LEVEL: 'info',
        KUBECONFIG: env.cp.kubeconfigPath,
        AWS_ACCESS_KEY_ID: 'bench',
        AWS_SECRET_ACCESS_KEY: 'bench',
        AWS_ENDPOINT_URL_SQS: env.sqsCounter.endpoint,
      },
    });
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (l) => lines.push(l));
    createInterface({ input: child.stderr! }).on('line', (l) => lines.push(l));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await until('the forwarder process is running', () => lines.some((l) => l.includes('forwarder running')) || child.exitCode !== null, 60_000);
    if (child.exitCode !== null) throw new Error(`the forwarder exited with ${child.exitCode}:\n${lines.slice(-10).join('\n')}`);
    return { child, exited, lines };
  };
  const stop = async (p: Proc) => {
    p.child.kill('SIGTERM');
    await p.exited;
  };
  const sent = () => env.sqsCounter.counts().messagesSent;

  let proc = await start();
  try {
    // 1. Live: create N objects as fast as the API server takes them.
    const list = names('fwd', options.objects);
    const base = sent();
    let lastAt = 0;
    let lastCount = base;
    const sampler = setInterval(() => {
      const now = sent();
      if (now > lastCount) {
        lastAt = Date.now();
        lastCount = now;
      }
    }, 20);
    const t0 = Date.now();
    await createMemcacheds(env.admin, namespace, list, 1, 32);
    const createSeconds = (Date.now() - t0) / 1000;
    await until(`${options.objects} messages sent`, () => sent() - base >= options.objects, 120_000);
    clearInterval(sampler);
    const liveSeconds = Math.max(0.001, ((lastAt || Date.now()) - t0) / 1000);
    await sleep(1500);
    const mem = procStatus(proc.child.pid!);

    // 2. Resync: restart over N existing objects.
    await stop(proc);
    const resyncBase = sent();
    proc = await start();
    let rFirst = 0;
    let rLast = 0;
    let rCount = resyncBase;
    const rSampler = setInterval(() => {
      const now = sent();
      if (now > rCount) {
        if (!rFirst) rFirst = Date.now();
        rLast = Date.now();
        rCount = now;
      }
    }, 10);
    const tResync = Date.now();
    await until(`${options.objects} resync messages sent`, () => sent() - resyncBase >= options.objects, 120_000);
    clearInterval(rSampler);
    const cpu1 = cpuSeconds(proc.child.pid!); // since spawn: startup + list + sends
    // The list happened before 'forwarder running'; measure from the first message sent.
    const resyncSeconds = Math.max(0.001, (rLast - (rFirst || tResync)) / 1000);
    const memAfterResync = procStatus(proc.child.pid!);

    // 3. Coalescing: bursts of changes per object.
    await sleep(1500);
    const burstList = list.slice(0, options.burstObjects);
    const cBase = sent();
    await forEachParallel(burstList, 16, async (name) => {
      for (let i = 0; i < options.burst; i++) await setSize(env.admin, namespace, name, 2 + (i % 2));
    });
    await sleep(3000);
    const messages = sent() - cBase;
    const changes = burstList.length * options.burst;

    return {
      objects: options.objects,
      bundleBytes: bundle.bytes,
      createPerSecond: options.objects / createSeconds,
      liveMessagesPerSecond: options.objects / liveSeconds,
      rssMiB: mem.rssKiB / 1024,
      rssAnonMiB: mem.anonKiB / 1024,
      rssFileMiB: mem.fileKiB / 1024,
      peakRssMiB: Math.max(mem.hwmKiB, memAfterResync.hwmKiB) / 1024,
      resyncMessagesPerSecond: options.objects / resyncSeconds,
      resyncMessagesPerCpuSecond: options.objects / Math.max(0.01, cpu1),
      coalescing: { objects: burstList.length, changesPerObject: options.burst, messages, messagesPerChange: messages / changes, messagesPerObject: messages / burstList.length },
      coalesceWindowMs: 'default',
    };
  } finally {
    await stop(proc);
  }
}
