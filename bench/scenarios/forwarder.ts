/**
 * The forwarder on its own, run as it ships: its esbuild bundle as a separate Node process
 * (config file, SQS endpoint through the counting proxy), watching one namespace's
 * Memcached objects (and the owned kinds), with no function consuming the queue, under the
 * image's Node.js flags (src/build/forwarder-node-flags.ts):
 *
 * - live throughput: N objects created as fast as the API server takes them; messages/s;
 * - resident memory (VmRSS, and the peak VmHWM) with N watched objects after the initial list;
 * - resync throughput: the forwarder restarted over N existing objects lists them and sends
 *   N Resync messages; messages per wall second and per CPU second of the process;
 * - coalescing: M objects each changed `burst` times back to back; messages per change.
 */
import { createMemcacheds, forEachParallel, names, setSize, sleep, until } from '../lib/objects.ts';
import { controllerWatches, forwarderBundle, startForwarderProcess, type ForwarderProcess } from '../lib/forwarder-process.ts';
import { processCpuSeconds, processMemory } from '../lib/process.ts';
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
  readonly coalescing: {
    readonly objects: number;
    readonly changesPerObject: number;
    readonly messages: number;
    readonly messagesPerChange: number;
    readonly messagesPerObject: number;
  };
  readonly coalesceWindowMs: number | 'default';
}

export async function measureForwarder(
  env: BenchEnv,
  namespace: string,
  options: { objects: number; burstObjects: number; burst: number },
): Promise<ForwarderResult> {
  await env.namespace(namespace);
  const bundle = await forwarderBundle(env.workDir);
  const { queueUrl } = await env.createQueue(namespace);
  const start = (): Promise<ForwarderProcess> =>
    startForwarderProcess({
      workDir: env.workDir,
      kubeconfigPath: env.cp.kubeconfigPath,
      sqsEndpoint: env.sqsCounter.endpoint,
      name: namespace,
      readyTimeoutMs: 60_000,
      config: {
        clusterId: CLUSTER_ID,
        queue: { url: queueUrl, region: env.queues.region },
        ...controllerWatches(env.controller, namespace),
        leaderElection: { enabled: false },
      },
    });
  const stop = (p: ForwarderProcess) => p.stop();
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
    const mem = processMemory(proc.pid)!;

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
    const cpu1 = processCpuSeconds(proc.pid); // since spawn: startup + list + sends
    // The list happened before 'forwarder running'; measure from the first message sent.
    const resyncSeconds = Math.max(0.001, (rLast - (rFirst || tResync)) / 1000);
    const memAfterResync = processMemory(proc.pid)!;

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
      rssMiB: mem.rss,
      rssAnonMiB: mem.anon,
      rssFileMiB: mem.file,
      peakRssMiB: Math.max(mem.peak, memAfterResync.peak),
      resyncMessagesPerSecond: options.objects / resyncSeconds,
      resyncMessagesPerCpuSecond: options.objects / Math.max(0.01, cpu1),
      coalescing: {
        objects: burstList.length,
        changesPerObject: options.burst,
        messages,
        messagesPerChange: messages / changes,
        messagesPerObject: messages / burstList.length,
      },
      coalesceWindowMs: 'default',
    };
  } finally {
    await stop(proc);
  }
}
