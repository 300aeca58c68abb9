/**
 * Provisioning: makes sure every binary of the test environment exists and says where.
 * kube-apiserver, kube-controller-manager, kubectl and etcd are built from the pinned Go
 * wrapper modules in `modules/` (by `modules/build.sh`), helm likewise, and ElasticMQ's jars
 * are fetched from Maven Central, AWS's Lambda Runtime Interface Emulator is built from its Go
 * module (`rie`), AWS's Node.js runtime interface client is installed from npm with its
 * native addon (`ric`), and the template linters (cfn-lint, checkov) are installed from PyPI
 * into a Python virtual environment (`pytools`) — each once, into a version-keyed cache
 * (`~/.cache/operless/<name>-<version>/`, or `$OPERLESS_CACHE`). The benchmark's
 * controller-runtime operator (`bench/controller-runtime`) is built the same way, but only when
 * named (`controller-runtime` is not among the default targets: tests never build it), and so
 * is the EventBridge emulator, moto's server from PyPI in a Python virtual environment
 * (`moto`: the EventBridge tests provision it themselves), and the OpenTelemetry Collector, a
 * minimal build from its Go modules (`otelcol`: the trace test's real OTLP receiver, provisioned
 * by that test), and the JavaScript runtimes Bun and Deno from npm (`bun`, `deno`: the forwarder's
 * memory experiment runs its bundle under them; bench only, the image ships Node.js).
 *
 * `KUBEBUILDER_ASSETS` is honoured like controller-runtime's envtest does: when that folder
 * holds `kube-apiserver` and `etcd`, they are used and neither is built; kube-controller-manager
 * and kubectl come from there too when present, else from the cache.
 *
 * Guarantees: a cache entry is complete or absent (build.sh builds into a temp folder and
 * renames it into place); concurrent provisioners wait on a lock instead of building twice;
 * progress goes to stderr (what is built, elapsed time); a missing toolchain or failed build
 * fails with what happened and what to do. Runnable: `node src/testing/provision.ts [targets...]`
 * prints the paths as JSON.
 */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type ProvisionTarget = 'kube' | 'etcd' | 'helm' | 'elasticmq' | 'rie' | 'ric' | 'pytools' | 'moto' | 'otelcol' | 'controller-runtime' | 'bun' | 'deno';
/** What `provision()` builds by default: the test environment. */
export const ALL_TARGETS: readonly ProvisionTarget[] = ['etcd', 'kube', 'elasticmq', 'helm', 'rie', 'ric', 'pytools'];
/**
 * Every target, including those built only when named: the EventBridge emulator and the
 * OpenTelemetry Collector (their tests provision them themselves) and the benchmark's operator and runtimes (Bun, Deno).
 */
export const KNOWN_TARGETS: readonly ProvisionTarget[] = [...ALL_TARGETS, 'moto', 'otelcol', 'controller-runtime', 'bun', 'deno'];

export interface TestBinaries {
  readonly etcd: string;
  readonly kubeApiServer: string;
  readonly kubeControllerManager: string;
  readonly kubectl: string;
  /** Folder holding the Kubernetes binaries (the `binDir` of a control plane). */
  readonly kubeBinDir: string;
}

export interface ProvisionResult {
  readonly kube?: TestBinaries;
  /** Folder of ElasticMQ's jars: run `java -cp '<dir>/*' org.elasticmq.server.Main`. */
  readonly elasticmqLib?: string;
  readonly java?: string;
  readonly helm?: string;
  /** AWS's Lambda Runtime Interface Emulator binary (`aws-lambda-rie`). */
  readonly lambdaEmulator?: string;
  /** Entry point of AWS's Node.js runtime interface client (`aws-lambda-ric`'s index.mjs). */
  readonly lambdaRuntimeClient?: string;
  /** The template linters, from PyPI into a virtual environment (modules/pytools/requirements.txt). */
  readonly cfnLint?: string;
  readonly checkov?: string;
  /** The benchmark's controller-runtime Memcached operator (bench/controller-runtime). */
  readonly controllerRuntimeOperator?: string;
  /** The Python of moto's virtual environment: run `<python> -m moto.server -H 127.0.0.1 -p PORT`. */
  readonly motoPython?: string;
  /** The minimal OpenTelemetry Collector (OTLP receiver + file exporter): run `<bin> --config=file:PATH`. */
  readonly otelCollector?: string;
  /** Bun's executable (the runtime itself, not npm's launcher). */
  readonly bun?: string;
  /** Deno's executable (the runtime itself, not npm's launcher). */
  readonly deno?: string;
}

export interface ProvisionOptions {
  readonly targets?: readonly ProvisionTarget[];
  readonly env?: NodeJS.ProcessEnv;
  /** Progress lines; stderr by default. */
  readonly progress?: (line: string) => void;
}

const MODULES = join(dirname(fileURLToPath(import.meta.url)), 'modules');

export class ProvisionError extends Error {
  override readonly name = 'ProvisionError';
}

/** What KUBEBUILDER_ASSETS supplies and what must still be built. Pure, for unit tests. */
export function planKubeAssets(
  assetsDir: string | undefined,
  isExecutable: (path: string) => boolean,
): { fromAssets: Partial<Record<'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kubectl', string>>; build: ('kube' | 'etcd')[] } {
  if (!assetsDir) return { fromAssets: {}, build: ['etcd', 'kube'] };
  const at = (name: string) => (isExecutable(join(assetsDir, name)) ? join(assetsDir, name) : undefined);
  const apiServer = at('kube-apiserver');
  const etcd = at('etcd');
  if (!apiServer || !etcd) return { fromAssets: {}, build: ['etcd', 'kube'] };
  const fromAssets: Partial<Record<'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kubectl', string>> = {
    etcd,
    'kube-apiserver': apiServer,
  };
  const kcm = at('kube-controller-manager');
  const kubectl = at('kubectl');
  if (kcm) fromAssets['kube-controller-manager'] = kcm;
  if (kubectl) fromAssets.kubectl = kubectl;
  return { fromAssets, build: kcm && kubectl ? [] : ['kube'] };
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs `build.sh <target>` (a no-op when cached) and returns the cache folder it prints. */
export async function buildTarget(target: ProvisionTarget, options: ProvisionOptions = {}): Promise<string> {
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const started = Date.now();
  const child = spawn('bash', [join(MODULES, 'build.sh'), target], {
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderrTail = '';
  let announced = false;
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => {
    const text = c.toString();
    stderrTail = (stderrTail + text).slice(-4000);
    for (const line of text.split('\n')) if (line.startsWith('operless testenv:')) (announced = true), progress(line);
  });
  const ticker = setInterval(() => {
    if (announced) progress(`operless testenv:   ... still working on ${target} (${Math.round((Date.now() - started) / 1000)}s elapsed)`);
  }, 30_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).finally(() => clearInterval(ticker));
  if (code !== 0) {
    const tail = stderrTail.trim().split('\n').slice(-25).join('\n');
    throw new ProvisionError(
      `provisioning ${target} failed (build.sh exited ${code}). The cache was left unchanged; fix the cause and run ` +
        `\`node src/testing/provision.ts ${target}\` again.\n--- build output (tail) ---\n${tail}`,
    );
  }
  const dir = stdout.trim().split('\n').pop() ?? '';
  if (!dir) throw new ProvisionError(`build.sh ${target} succeeded but printed no folder; this is a bug in build.sh`);
  if (announced) progress(`operless testenv: ${target} ready in ${Math.round((Date.now() - started) / 1000)}s: ${dir}`);
  return dir;
}

let memo: Promise<ProvisionResult> | undefined;
let memoKey = '';

/**
 * Ensures the binaries for `targets` (all by default) exist; returns their paths.
 * Memoised per process for the same targets and environment.
 */
export function provision(options: ProvisionOptions = {}): Promise<ProvisionResult> {
  const env = options.env ?? process.env;
  const key = JSON.stringify([options.targets ?? ALL_TARGETS, env.KUBEBUILDER_ASSETS ?? '', env.OPERLESS_CACHE ?? '']);
  if (!memo || key !== memoKey) {
    memoKey = key;
    memo = doProvision(options);
    memo.catch(() => (memo = undefined));
  }
  return memo;
}

async function doProvision(options: ProvisionOptions): Promise<ProvisionResult> {
  const env = options.env ?? process.env;
  const targets = new Set(options.targets ?? ALL_TARGETS);
  let result: { -readonly [K in keyof ProvisionResult]: ProvisionResult[K] } = {};
  if (targets.has('kube') || targets.has('etcd')) {
    const plan = planKubeAssets(env.KUBEBUILDER_ASSETS, executable);
    const built: Partial<Record<'kube' | 'etcd', string>> = {};
    // One at a time: each Go build already uses every core.
    for (const t of plan.build) built[t] = await buildTarget(t, options);
    const pick = (name: 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kubectl'): string => {
      const fromAssets = plan.fromAssets[name];
      if (fromAssets) return fromAssets;
      const dir = name === 'etcd' ? built.etcd : built.kube;
      if (!dir) throw new ProvisionError(`no ${name}: neither KUBEBUILDER_ASSETS nor the build supplied it`);
      return join(dir, name);
    };
    const kubeApiServer = pick('kube-apiserver');
    result.kube = {
      etcd: pick('etcd'),
      kubeApiServer,
      kubeControllerManager: pick('kube-controller-manager'),
      kubectl: pick('kubectl'),
      kubeBinDir: dirname(kubeApiServer),
    };
  }
  if (targets.has('elasticmq')) {
    const java = findJava(env);
    result = { ...result, java, elasticmqLib: join(await buildTarget('elasticmq', options), 'lib') };
  }
  if (targets.has('helm')) result.helm = join(await buildTarget('helm', options), 'helm');
  if (targets.has('rie')) result.lambdaEmulator = join(await buildTarget('rie', options), 'aws-lambda-rie');
  if (targets.has('ric')) result.lambdaRuntimeClient = join(await buildTarget('ric', options), 'node_modules', 'aws-lambda-ric', 'index.mjs');
  if (targets.has('pytools')) {
    const bin = join(await buildTarget('pytools', options), 'bin');
    result = { ...result, cfnLint: join(bin, 'cfn-lint'), checkov: join(bin, 'checkov') };
  }
  if (targets.has('moto')) result.motoPython = join(await buildTarget('moto', options), 'venv', 'bin', 'python');
  if (targets.has('otelcol')) result.otelCollector = join(await buildTarget('otelcol', options), 'otelcol');
  if (targets.has('bun')) result.bun = join(await buildTarget('bun', options), 'bin', 'bun');
  if (targets.has('deno')) result.deno = join(await buildTarget('deno', options), 'bin', 'deno');
  if (targets.has('controller-runtime')) result.controllerRuntimeOperator = join(await buildTarget('controller-runtime', options), 'memcached-operator');
  return result;
}

/** The `java` to run ElasticMQ with: `$JAVA_HOME/bin/java`, else `java` on PATH. */
export function findJava(env: NodeJS.ProcessEnv = process.env): string {
  const candidate = env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java';
  const probe = spawnSync(candidate, ['-version'], { encoding: 'utf8', env });
  if (probe.error || probe.status !== 0) {
    throw new ProvisionError(
      `Java is not available (${candidate}: ${probe.error?.message ?? `exit ${probe.status}`}), and the SQS broker ` +
        `(ElasticMQ) needs it. Install a Java runtime >= 11 (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME.`,
    );
  }
  return candidate;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const bad = args.filter((a) => !(KNOWN_TARGETS as readonly string[]).includes(a));
  if (bad.length > 0) {
    process.stderr.write(`usage: node src/testing/provision.ts [${KNOWN_TARGETS.join('|')}]...  (unknown: ${bad.join(', ')})\n`);
    process.exit(2);
  }
  provision(args.length > 0 ? { targets: args as ProvisionTarget[] } : {}).then(
    (result) => process.stdout.write(`${JSON.stringify(result, null, 2)}\n`),
    (err: unknown) => {
      process.stderr.write(`operless testenv: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
