/**
 * Always-on memory in the cluster (issue 21): what each system keeps resident while it watches
 * the same objects, and the forwarder's relist of every primary on one queue.
 *
 * - Held objects: for each size (cumulative: the objects of a size stay for the next), half
 *   Memcacheds (primaries) and half Deployments each controlled by one of them (children, what a
 *   reconcile creates), in one namespace, with the kube-controller-manager and the simulated
 *   kubelet stopped (the Deployments get no ReplicaSets, pods or status, and nothing changes the
 *   objects). Then, one after the other:
 *   * the forwarder as it ships (its bundle as its own process under the image's flags,
 *     `bench/lib/forwarder-process.ts`), watching the controller's primaries and owned kinds
 *     with `resyncOnStart: false`: it lists, watches and holds, and sends nothing;
 *   * controller-runtime's operator (bench/controller-runtime) with its informers (Memcached,
 *     Deployment, Service, Pod: its default cache of whole objects) over the same namespace,
 *     started `--paused`: the gate on its informers' events is closed, so it reconciles nothing
 *     and writes nothing — the steady state of a converged operator, whose reconciles would be
 *     no-ops.
 *   Each is measured once its watches synced (the forwarder's `forwarder running`, the
 *   operator's `ready`) and `settleMs` passed: VmRSS (RssAnon, RssFile) as the median of
 *   `samples` samples 250 ms apart, and VmHWM (the peak, the initial LIST included). A bare `node`
 *   under the forwarder's flags (an idle timer) is the floor.
 * - Relist: the forwarder, primaries only, default `resyncOnStart` and `buffer.maxMessages`,
 *   starts over every Memcached of the largest size, lists them and resyncs them into one queue
 *   of the embedded SQS-compatible queue; every message is read back and counted per key. From
 *   the process's start to the last message: seconds, messages, keys, the most messages of one
 *   key, messages dropped (its /metrics), resyncs it logged, VmRSS at the end and VmHWM.
 *
 * The kube-controller-manager stays stopped afterwards: the caller starts the next scenario on
 * a fresh control plane.
 */
import { spawn } from 'node:child_process';
import { decodeMessage } from '../../src/contract/message.ts';
import { FORWARDER_NODE_FLAGS } from '../../src/build/forwarder-node-flags.ts';
import { metricSamples } from '../lib/apiserver-metrics.ts';
import { startControllerRuntime } from '../lib/controller-runtime.ts';
import { controllerWatches, startForwarderProcess } from '../lib/forwarder-process.ts';
import { createMemcachedsWithDeployments, sleep } from '../lib/objects.ts';
import { processMemory, sampleMemory, stopProcess, type ProcessMemory } from '../lib/process.ts';
import { CLUSTER_ID, MEMCACHED_KIND, type BenchEnv } from '../lib/systems.ts';

/** One process holding the objects: MiB, and seconds from its start until its watches synced. */
export interface HeldMemory extends ProcessMemory {
  readonly syncSeconds: number;
}

export interface MemoryRow {
  /** Watched objects: primaries + children. */
  readonly objects: number;
  readonly forwarder: HeldMemory;
  /** Absent when controller-runtime was left out of the run. */
  readonly controllerRuntime?: HeldMemory;
}

export interface RelistResult {
  readonly primaries: number;
  /** From the process's start to the last message read back. */
  readonly seconds: number;
  readonly messages: number;
  readonly keys: number;
  readonly maxMessagesPerKey: number;
  readonly dropped: number;
  readonly resyncs: number;
  readonly rssMiB: number;
  readonly peakMiB: number;
}

export interface MemoryResult {
  readonly bareNode: ProcessMemory;
  readonly rows: MemoryRow[];
  readonly relist: RelistResult;
  readonly settleMs: number;
  readonly samples: number;
}

export interface MemoryOptions {
  /** Watched objects per step, ascending, even (half primaries, half children). */
  readonly sizes: readonly number[];
  /** controller-runtime's MaxConcurrentReconciles (it reconciles nothing here; as in the other scenarios). */
  readonly workers: number;
  readonly controllerRuntime: boolean;
  readonly settleMs: number;
  readonly samples: number;
  readonly log?: (line: string) => void;
}

const MiB = (m: ProcessMemory) => `${m.rss.toFixed(1)} MiB (anon ${m.anon.toFixed(1)}, peak ${m.peak.toFixed(1)})`;

export async function measureMemory(env: BenchEnv, namespace: string, options: MemoryOptions): Promise<MemoryResult> {
  const say = options.log ?? (() => {});
  await env.namespace(namespace);
  await env.stopSimulator();
  await env.cp.stopControllerManager();
  const bareNode = await measureBareNode(options);
  say(`  bare node: ${MiB(bareNode)}`);
  const rows: MemoryRow[] = [];
  let primaries = 0;
  for (const size of options.sizes) {
    const t0 = Date.now();
    await createMemcachedsWithDeployments(env.admin, namespace, primaries, size / 2);
    primaries = size / 2;
    say(`  ${size} objects created in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const forwarder = await holdWithForwarder(env, namespace, `${namespace}-held-${size}`, options);
    say(`  ${size} objects, forwarder: ${MiB(forwarder)}, synced in ${forwarder.syncSeconds.toFixed(1)} s`);
    const row: MemoryRow = { objects: size, forwarder };
    if (options.controllerRuntime) {
      const cr = await holdWithControllerRuntime(env, namespace, options);
      say(`  ${size} objects, controller-runtime: ${MiB(cr)}, synced in ${cr.syncSeconds.toFixed(1)} s`);
      rows.push({ ...row, controllerRuntime: cr });
    } else rows.push(row);
  }
  const relist = await relistPrimaries(env, namespace, primaries);
  say(`  relist of ${primaries} primaries: ${relist.seconds} s, ${relist.messages} messages, peak ${relist.peakMiB.toFixed(1)} MiB`);
  return { bareNode, rows, relist, settleMs: options.settleMs, samples: options.samples };
}

async function measureBareNode(options: MemoryOptions): Promise<ProcessMemory> {
  const child = spawn(process.execPath, [...FORWARDER_NODE_FLAGS, '-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await sleep(options.settleMs);
    return await sampleMemory(child.pid!, options.samples, 250);
  } finally {
    await stopProcess(child);
  }
}

async function holdWithForwarder(env: BenchEnv, namespace: string, queueName: string, options: MemoryOptions): Promise<HeldMemory> {
  const proc = await startForwarderProcess({
    workDir: env.workDir,
    kubeconfigPath: env.cp.kubeconfigPath,
    sqsEndpoint: env.sqsCounter.endpoint,
    name: queueName,
    config: {
      clusterId: CLUSTER_ID,
      queue: { url: (await env.createQueue(queueName)).queueUrl, region: env.queues.region },
      ...controllerWatches(env.controller, namespace),
      resyncOnStart: false,
      leaderElection: { enabled: false },
    },
  });
  try {
    const syncSeconds = (Date.now() - proc.startedAt) / 1000;
    await sleep(options.settleMs);
    return { ...(await sampleMemory(proc.pid, options.samples, 250)), syncSeconds };
  } finally {
    await proc.stop();
  }
}

async function holdWithControllerRuntime(env: BenchEnv, namespace: string, options: MemoryOptions): Promise<HeldMemory> {
  const started = Date.now();
  const cr = await startControllerRuntime(env, { namespace, workers: options.workers, paused: true });
  try {
    await cr.ready;
    const syncSeconds = (Date.now() - started) / 1000;
    await sleep(options.settleMs);
    const memory = await sampleMemory(cr.pid, options.samples, 250);
    await cr.refresh?.();
    if (cr.reconciles() > 0)
      throw new Error(`controller-runtime reconciled ${cr.reconciles()} times with its events gated off: the memory figure would include writes`);
    return { ...memory, syncSeconds };
  } finally {
    await cr.stop();
  }
}

async function relistPrimaries(env: BenchEnv, namespace: string, primaries: number): Promise<RelistResult> {
  const queueName = `${namespace}-relist`;
  // Straight to the queue (not the counting proxy): every message is read back below.
  const queueUrl = await env.queues.createQueue({ name: queueName, visibilityTimeoutSeconds: 600 });
  const proc = await startForwarderProcess({
    workDir: env.workDir,
    kubeconfigPath: env.cp.kubeconfigPath,
    sqsEndpoint: env.queues.endpoint,
    name: queueName,
    config: {
      clusterId: CLUSTER_ID,
      queue: { url: queueUrl, region: env.queues.region },
      primaries: [{ ...MEMCACHED_KIND, namespaces: [namespace] }],
      leaderElection: { enabled: false },
    },
  });
  try {
    const perKey = new Map<string, number>();
    let messages = 0;
    let lastAt = proc.startedAt;
    let quietSince = Date.now();
    const capAt = Date.now() + 600_000;
    // Until every key arrived and 3 s passed without a message (a second round would show); with
    // keys missing, until 30 s passed without one (reported as missing), or the cap.
    const done = () => Date.now() - quietSince >= (perKey.size >= primaries ? 3000 : 30_000) || Date.now() >= capAt || proc.child.exitCode !== null;
    while (!done()) {
      const got = env.queues.broker.receiveMessage(queueName, { maxNumberOfMessages: 10 });
      if (got.length === 0) {
        await sleep(20);
        continue;
      }
      quietSince = lastAt = Date.now();
      for (const m of got) {
        const decoded = decodeMessage(m.body);
        if (!decoded.ok) throw new Error(`relist: an invalid message: ${decoded.error}`);
        perKey.set(decoded.message.name, (perKey.get(decoded.message.name) ?? 0) + 1);
        messages++;
      }
      env.queues.broker.deleteMessageBatch(
        queueName,
        got.map((m, i) => ({ id: `d${i}`, receiptHandle: m.receiptHandle })),
      );
    }
    const memory = processMemory(proc.pid);
    const metrics = await (await fetch(`${proc.probes}/metrics`)).text();
    const dropped = metricSamples(metrics, 'operless_forwarder_messages_dropped_total').reduce((a, s) => a + s.value, 0);
    return {
      primaries,
      seconds: Number(((lastAt - proc.startedAt) / 1000).toFixed(1)),
      messages,
      keys: perKey.size,
      maxMessagesPerKey: [...perKey.values()].reduce((a, b) => Math.max(a, b), 0),
      dropped,
      resyncs: proc.logged('resync started'),
      rssMiB: memory?.rss ?? Number.NaN,
      peakMiB: memory?.peak ?? Number.NaN,
    };
  } finally {
    await proc.stop();
  }
}
