// The forwarder's resident memory while it holds many watched objects (issue 21, item 2): the
// shipped bundle as its own process under the image's Node.js flags, watching Memcacheds
// (primaries) and Deployments each controlled by one of them (children), half and half, in one
// namespace, with `resyncOnStart: false` (it lists, watches and holds; it sends nothing). For each
// size in SIZES (cumulative: the objects of a size stay for the next) every bundle (this checkout,
// and those of BUNDLES=<label>=<forwarder .mjs>,... when given, e.g. the base commit's) runs
// REPEAT times, alternating;
// a run waits until /readyz says every watch is synced, lets it settle SETTLE_MS, then samples
// VmRSS (RssAnon/RssFile) every 250 ms for 5 s and reports the median, plus VmHWM (the peak,
// the initial LIST included). A bare `node` under the same flags (an idle timer) is the floor.
//
//   SIZES=10000,100000 BUNDLES=before=/tmp/forwarder-before.mjs node bench/experiments/watch-memory.ts
//
// FLAGS_VARIANT="<node flags>" adds a run of this checkout's bundle with those flags on top of the
// image's (label `this checkout + <flags>`), to try a runtime flag before shipping it; several
// variants are separated by `;`, and a word NAME=value in a variant is set in the environment
// (e.g. FLAGS_VARIANT="--single-threaded-gc;MALLOC_ARENA_MAX=2").
//
// RUNTIMES="node,bun,bun --smol,deno" adds a run of this checkout's bundle under each other
// runtime listed (Bun, Deno: from npm into the version-keyed cache, src/testing/provision.ts),
// each entry a runtime's name and extra flags (bench/lib/runtimes.ts says which flags each gets
// by default); the node row always runs. Each runtime entry gets its own floor: the bare runtime
// with the same flags running an idle timer. A run that fails (the bundle does not start under a
// runtime, an API it lacks) prints its error and that row is not run again.
//
// The Deployments are what a Memcached's reconcile creates (bench/lib's children: the same pod
// template); no kube-controller-manager runs, so they carry no status — a real child's status
// only adds to what a whole-object watch parses.
import { DEPLOYMENTS, NAMESPACES } from '../../src/kube/kinds.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { bundleForwarder } from '../../src/build/forwarder-bundle.ts';
import { forwarderEnv } from '../lib/forwarder-process.ts';
import { createKubeClient } from '../../src/kube/client.ts';
import { createTransport } from '../../src/kube/transport.ts';
import { startMemoryQueueServer } from '../../src/local/memory-queue-server.ts';
import { startControlPlane } from '../../src/testing/index.ts';
import { createMemcachedsWithDeployments, sleep, until } from '../lib/objects.ts';
import { parseRuntimes, runtimeArgv, type RuntimeEntry, type RuntimeName } from '../lib/runtimes.ts';
import { provision } from '../../src/testing/provision.ts';
import { CRD, MEMCACHED_KIND } from '../lib/systems.ts';

const SIZES = (process.env.SIZES ?? '10000,100000').split(',').map(Number);
const REPEAT = Number(process.env.REPEAT ?? 2);
const PARALLEL = Number(process.env.PARALLEL ?? 32);
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 5000);
const NAMESPACE = 'held';
const RUNTIMES = parseRuntimes(process.env.RUNTIMES);
const NODE: RuntimeEntry = { name: 'node', flags: [], label: 'node' };

interface Memory {
  readonly rssMiB: number;
  readonly anonMiB: number;
  readonly fileMiB: number;
  readonly hwmMiB: number;
}

function memoryOf(pid: number): Memory {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN) / 1024;
  return { rssMiB: mib('VmRSS'), anonMiB: mib('RssAnon'), fileMiB: mib('RssFile'), hwmMiB: mib('VmHWM') };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round = (m: Memory): Memory => ({
  rssMiB: Math.round(m.rssMiB),
  anonMiB: Math.round(m.anonMiB),
  fileMiB: Math.round(m.fileMiB),
  hwmMiB: Math.round(m.hwmMiB),
});

/** Median of 20 samples, 250 ms apart; VmHWM as it stands at the end. */
async function sample(pid: number): Promise<Memory> {
  const samples: Memory[] = [];
  for (let i = 0; i < 20; i++) {
    samples.push(memoryOf(pid));
    await sleep(250);
  }
  const last = memoryOf(pid);
  return round({
    rssMiB: median(samples.map((s) => s.rssMiB)),
    anonMiB: median(samples.map((s) => s.anonMiB)),
    fileMiB: median(samples.map((s) => s.fileMiB)),
    hwmMiB: last.hwmMiB,
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000)]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

const work = mkdtempSync(join(tmpdir(), 'operless-watch-memory-'));
const others = [...new Set(RUNTIMES.map((r) => r.name).filter((n): n is Exclude<RuntimeName, 'node'> => n !== 'node'))];
const provisioned = others.length > 0 ? await provision({ targets: others }) : {};
const executables: Record<RuntimeName, string | undefined> = { node: process.execPath, bun: provisioned.bun, deno: provisioned.deno };
const executableOf = (runtime: RuntimeEntry): string => executables[runtime.name] ?? `<no ${runtime.name}>`;
const idleScript = join(work, 'idle.mjs');
writeFileSync(idleScript, 'setInterval(() => {}, 1000);\n');

/** The bare runtime under the same flags, running an idle timer. */
async function bareRuntime(runtime: RuntimeEntry): Promise<Memory> {
  const [command, ...args] = runtimeArgv(runtime, executableOf(runtime), idleScript);
  const child = spawn(command!, args, { stdio: 'ignore' });
  try {
    await sleep(SETTLE_MS);
    return await sample(child.pid!);
  } finally {
    await stopProcess(child);
  }
}

const cp = await startControlPlane({ crds: [CRD] });
const queues = await startMemoryQueueServer();
try {
  const admin = createKubeClient(createTransport(cp.kubeConfig), { fieldManager: 'bench' });
  await admin.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  const queueUrl = await queues.createQueue({ name: 'held', visibilityTimeoutSeconds: 600 });
  const bundles: Record<string, string> = {};
  for (const entry of (process.env.BUNDLES ?? '').split(',').filter(Boolean)) {
    const [label, path] = entry.split('=');
    if (!label || !path) throw new Error(`BUNDLES: expected <label>=<path>, got ${JSON.stringify(entry)}`);
    bundles[label] = path;
  }
  bundles['this checkout'] = (await bundleForwarder(join(work, 'forwarder.mjs'))).outFile;
  interface Variant {
    readonly runtime: RuntimeEntry;
    readonly flags: readonly string[];
    readonly env: Readonly<Record<string, string>>;
  }
  const variants: Record<string, Variant> = { 'this checkout': { runtime: NODE, flags: [], env: {} } };
  for (const bundleLabel of Object.keys(bundles)) variants[bundleLabel] ??= { runtime: NODE, flags: [], env: {} };
  for (const text of (process.env.FLAGS_VARIANT ?? '')
    .split(';')
    .map((v) => v.trim())
    .filter(Boolean)) {
    const words = text.split(' ').filter(Boolean);
    const isEnv = (w: string) => /^[A-Z_][A-Z0-9_]*=/.test(w);
    const env = Object.fromEntries(words.filter(isEnv).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
    const label = `this checkout + ${text}`;
    bundles[label] = bundles['this checkout'];
    variants[label] = { runtime: NODE, flags: words.filter((w) => !isEnv(w)), env };
  }
  for (const runtime of RUNTIMES) {
    if (runtime.label === 'node') continue;
    const label = `this checkout under ${runtime.label}`;
    bundles[label] = bundles['this checkout'];
    variants[label] = { runtime, flags: [], env: {} };
  }
  const configPath = join(work, 'forwarder.yaml');
  writeFileSync(
    configPath,
    stringify({
      clusterId: 'bench',
      queue: { url: queueUrl, region: queues.region },
      primaries: [{ ...MEMCACHED_KIND, namespaces: [NAMESPACE] }],
      owned: [{ ...DEPLOYMENTS, namespaces: [NAMESPACE] }],
      resyncOnStart: false,
      leaderElection: { enabled: false },
      server: { port: 0, host: '127.0.0.1' },
    }),
  );

  async function runForwarder(bundle: string, variant: Variant): Promise<Memory & { syncSeconds: number }> {
    const started = Date.now();
    const lines: string[] = [];
    const runtime = { ...variant.runtime, flags: [...variant.runtime.flags, ...variant.flags] };
    const [command, ...args] = runtimeArgv(runtime, executableOf(runtime), bundle);
    const child = spawn(command!, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...forwarderEnv(configPath, cp.kubeconfigPath, queues.endpoint), ...variant.env },
    });
    for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n')));
    try {
      let probes = '';
      await until(
        'the forwarder serves its probes',
        () => {
          for (const l of lines) {
            try {
              const parsed = JSON.parse(l) as { probes?: unknown };
              if (typeof parsed.probes === 'string') probes = parsed.probes;
            } catch {
              // not JSON
            }
          }
          if (child.exitCode !== null) throw new Error(`the forwarder exited: ${lines.slice(-20).join('\n')}`);
          return probes !== '';
        },
        120_000,
      );
      await until('every watch synced', async () => (await fetch(`${probes}/readyz`).catch(() => undefined))?.status === 200, 600_000);
      const syncSeconds = (Date.now() - started) / 1000;
      await sleep(SETTLE_MS);
      return { ...(await sample(child.pid!)), syncSeconds: Number(syncSeconds.toFixed(1)) };
    } finally {
      await stopProcess(child);
    }
  }

  const floors: Record<string, Memory> = {};
  for (const runtime of [NODE, ...RUNTIMES.filter((r) => r.label !== 'node')]) {
    floors[runtime.label] = await bareRuntime(runtime);
    console.log(JSON.stringify(runtime.label === 'node' ? { bareNode: floors.node } : { bareRuntime: runtime.label, ...floors[runtime.label] }));
  }
  const floor = floors.node!;
  const failed = new Set<string>();
  let created = 0;
  for (const size of SIZES) {
    const t0 = Date.now();
    await createMemcachedsWithDeployments(admin, NAMESPACE, created / 2, size / 2, PARALLEL);
    created = size;
    console.log(JSON.stringify({ created: size, seconds: Math.round((Date.now() - t0) / 1000) }));
    const runs: Record<string, (Memory & { syncSeconds: number })[]> = {};
    for (let r = 0; r < REPEAT; r++) {
      for (const [label, bundle] of Object.entries(bundles)) {
        if (failed.has(label)) continue;
        try {
          const result = await runForwarder(bundle, variants[label]!);
          (runs[label] ??= []).push(result);
          console.log(JSON.stringify({ objects: size, bundle: label, run: r + 1, ...result }));
        } catch (err) {
          failed.add(label);
          console.log(JSON.stringify({ objects: size, bundle: label, run: r + 1, failed: err instanceof Error ? err.message : String(err) }));
        }
      }
    }
    for (const [label, results] of Object.entries(runs)) {
      const rss = median(results.map((m) => m.rssMiB));
      const runtimeFloor = floors[variants[label]!.runtime.label] ?? floor;
      console.log(
        JSON.stringify({
          objects: size,
          bundle: label,
          medianRssMiB: rss,
          aboveBareNodeMiB: rss - floor.rssMiB,
          ...(variants[label]!.runtime.name === 'node' ? {} : { aboveBareRuntimeMiB: rss - runtimeFloor.rssMiB }),
          medianHwmMiB: median(results.map((m) => m.hwmMiB)),
        }),
      );
    }
  }
} finally {
  await queues.stop();
  await cp.stop();
  rmSync(work, { recursive: true, force: true });
}
