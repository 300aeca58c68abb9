// A relist of N (default 50,000) primaries on one queue, with the forwarder as it ships: its
// bundle as its own process under the image's Node.js flags, the default `buffer.maxMessages`
// (10,000) unless BUFFER says otherwise, `resyncOnStart`. N Memcached objects are created first
// (no controllers run: only the forwarder reads them); then the forwarder starts, lists them and
// resyncs them into the embedded SQS-compatible queue. Measured: the duration from the process's
// start to the last message, messages per key in the queue (each read back and counted), the
// buffer depth and the resync feed's pending count (the forwarder's /metrics, scraped every
// 100 ms), messages dropped, the resyncs the forwarder logged, and VmRSS/VmHWM of the process.
//
//   N=50000 node bench/experiments/relist.ts        (N, BUFFER, PARALLEL from the environment)
//
// BUNDLE=<path to a forwarder .mjs> runs another build instead (e.g. an older commit's, to compare);
// CAP_SECONDS (default 600) stops reading after that long — a forwarder whose resync never ends
// (the overflow loop before resync-feed.ts) is then reported as it stands.
import { NAMESPACES } from '../../src/kube/kinds.ts';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { decodeMessage } from '../../src/contract/message.ts';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { FORWARDER_NODE_FLAGS } from '../../src/build/forwarder-node-flags.ts';
import { forwarderEnv } from '../lib/forwarder-process.ts';
import { createKubeClient } from '../../src/kube/client.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { startMemoryQueueServer } from '../../src/local/memory-queue-server.ts';
import { startControlPlane } from '../../src/testing/index.ts';
import { createMemcacheds, names, sleep, until } from '../lib/objects.ts';
import { CRD, MEMCACHED_KIND } from '../lib/systems.ts';

const N = Number(process.env.N ?? 50_000);
const BUFFER = process.env.BUFFER ? Number(process.env.BUFFER) : undefined;
const PARALLEL = Number(process.env.PARALLEL ?? 32);
const CAP_SECONDS = Number(process.env.CAP_SECONDS ?? 600);
const NAMESPACE = 'relist';

function procStatus(pid: number): { rssMiB: number; hwmMiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024 };
}

const work = mkdtempSync(join(tmpdir(), 'operless-relist-'));
const cp = await startControlPlane({ crds: [CRD] });
const queues = await startMemoryQueueServer();
try {
  const admin = createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'bench' });
  await admin.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  const queueName = 'relist-work';
  const queueUrl = await queues.createQueue({ name: queueName, visibilityTimeoutSeconds: 600 });
  const t0 = Date.now();
  await createMemcacheds(admin, NAMESPACE, names('mc', N), 1, PARALLEL);
  const createSeconds = (Date.now() - t0) / 1000;
  console.log(`created ${N} Memcacheds in ${createSeconds.toFixed(0)} s (${(N / createSeconds).toFixed(0)}/s)`);

  const bundle = process.env.BUNDLE ? { outFile: process.env.BUNDLE } : await bundleForwarder(join(work, 'forwarder.mjs'));
  const configPath = join(work, 'forwarder.yaml');
  writeFileSync(
    configPath,
    stringify({
      clusterId: 'bench',
      queue: { url: queueUrl, region: queues.region },
      primaries: [{ ...MEMCACHED_KIND, namespaces: [NAMESPACE] }],
      leaderElection: { enabled: false },
      server: { port: 0, host: '127.0.0.1' },
      ...(BUFFER ? { buffer: { maxMessages: BUFFER } } : {}),
    }),
  );
  const started = Date.now();
  const child = spawn(process.execPath, [...FORWARDER_NODE_FLAGS, bundle.outFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: forwarderEnv(configPath, cp.kubeconfigPath, queues.endpoint),
  });
  const lines: Record<string, unknown>[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (l) => {
      try {
        lines.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        lines.push({ msg: l });
      }
    });
  }
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  await until(
    'the forwarder serves its probes',
    () => lines.some((l) => l.msg === 'probe server listening' || typeof l.probes === 'string') || child.exitCode !== null,
    120_000,
  );
  const probes = String(lines.find((l) => typeof l.probes === 'string')?.probes ?? '');

  // Read every message back, count per key; scrape the gauges meanwhile.
  const perKey = new Map<string, number>();
  let total = 0;
  let lastAt = started;
  let maxDepth = 0;
  let maxResyncPending = 0;
  let peakRss = 0;
  let scraping = true;
  const scraper = (async () => {
    while (scraping) {
      try {
        const text = await (await fetch(`${probes}/metrics`)).text();
        const value = (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
        maxDepth = Math.max(maxDepth, value('operless_forwarder_buffer_depth'));
        maxResyncPending = Math.max(maxResyncPending, value('operless_forwarder_resync_pending'));
        peakRss = Math.max(peakRss, procStatus(child.pid!).rssMiB);
      } catch {
        // not serving yet / exiting
      }
      await sleep(100);
    }
  })();
  let quietSince = Date.now();
  while (Date.now() - quietSince < 5000 && child.exitCode === null && Date.now() - started < CAP_SECONDS * 1000) {
    const got = queues.broker.receiveMessage(queueName, { maxNumberOfMessages: 10 });
    if (got.length === 0) {
      await sleep(20);
      continue;
    }
    quietSince = lastAt = Date.now();
    for (const m of got) {
      const decoded = decodeMessage(m.body);
      if (!decoded.ok) throw new Error(`invalid message: ${decoded.error}`);
      perKey.set(decoded.message.name, (perKey.get(decoded.message.name) ?? 0) + 1);
      total++;
    }
    queues.broker.deleteMessageBatch(
      queueName,
      got.map((m, i) => ({ id: `d${i}`, receiptHandle: m.receiptHandle })),
    );
  }
  scraping = false;
  await scraper;
  const mem = procStatus(child.pid!);
  const text = await (await fetch(`${probes}/metrics`)).text();
  const dropped = [...text.matchAll(/^operless_forwarder_messages_dropped_total\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  child.kill('SIGTERM');
  await exited;
  const counts = [...perKey.values()];
  const resyncs = lines.filter((l) => l.msg === 'resync started').length;
  const overflowResyncs = lines.filter((l) => String(l.msg).startsWith('send buffer drained after an overflow')).length;
  console.log(
    JSON.stringify(
      {
        objects: N,
        bundle: process.env.BUNDLE ?? 'this checkout',
        cappedAtSeconds: Date.now() - started >= CAP_SECONDS * 1000 ? CAP_SECONDS : undefined,
        bufferMaxMessages: BUFFER ?? 'default (10000)',
        durationSeconds: Number(((lastAt - started) / 1000).toFixed(1)),
        messages: total,
        keys: perKey.size,
        missingKeys: N - perKey.size,
        messagesPerKey: { min: Math.min(...counts), max: Math.max(...counts), mean: Number((total / Math.max(1, perKey.size)).toFixed(3)) },
        maxBufferDepth: maxDepth,
        maxResyncPending,
        droppedMessages: dropped,
        resyncsStarted: resyncs,
        overflowResyncs,
        vmRssMiB: Number(mem.rssMiB.toFixed(0)),
        peakVmRssSampledMiB: Number(peakRss.toFixed(0)),
        vmHwmMiB: Number(mem.hwmMiB.toFixed(0)),
      },
      null,
      2,
    ),
  );
} finally {
  await queues.stop();
  await cp.stop();
  rmSync(work, { recursive: true, force: true });
}
