/**
 * The forwarder's container image, built and run on a machine without a Docker engine:
 * Debian's `buildah` as root (`--isolation chroot`; the overlay storage driver where the kernel
 * has it, else vfs), with its image store under the cache (`~/.cache/operless/buildah/`), so
 * layers survive between runs.
 *
 * Public base images cannot be pulled here, so the Dockerfile's `BASE_IMAGE` /
 * `RUNTIME_IMAGE` build arguments get stand-ins assembled from what is on this machine:
 * - runtime: the pinned Node.js binary (the `node` npm package — the same version the
 *   shipped default `node:<v>-slim` carries) with exactly the shared libraries `ldd` names,
 *   and an /etc/passwd (the image's numeric uid needs no entry) — nothing else, no shell (like distroless);
 * - build: the same plus the machine's npm and a POSIX shell, what the Dockerfile's build
 *   stage runs (`npm ci`, the bundler).
 * Each is committed once per Node.js/npm version and reused.
 *
 * Guarantees: `ensureBuildah` installs buildah with apt-get (idempotent) only when it is
 * missing and we are root, and otherwise says why the image cannot be built here; every
 * buildah call has a deadline and fails with buildah's own output.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const DOCKERFILE = join(root, 'infra/forwarder/Dockerfile');
const cacheRoot = process.env.OPERLESS_CACHE ?? join(homedir(), '.cache/operless');
/**
 * buildah's storage driver: overlay where the kernel offers it (layers shared, no copies), else
 * vfs (plain directories: every layer and container a full copy — slow, but works anywhere).
 * `OPERLESS_BUILDAH_DRIVER` overrides.
 */
export const STORAGE_DRIVER = process.env.OPERLESS_BUILDAH_DRIVER ?? (overlayAvailable() ? 'overlay' : 'vfs');
/** Where buildah keeps images and layers, per driver. */
export const STORAGE = join(cacheRoot, `buildah/${STORAGE_DRIVER === 'vfs' ? 'storage' : STORAGE_DRIVER}`);

function overlayAvailable(): boolean {
  try {
    return /\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8'));
  } catch {
    return false;
  }
}

/** Why the image cannot be built on this machine, or undefined when it can. */
export function imageBuildUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `building the image needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'building the image with buildah --isolation chroot needs root';
  return undefined;
}

/** Installs buildah with apt-get when it is missing (idempotent); returns its path. */
export function ensureBuildah(): string {
  const found = spawnSync('sh', ['-c', 'command -v buildah'], { encoding: 'utf8' });
  if (found.status === 0) return found.stdout.trim();
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'buildah'], { env, encoding: 'utf8', timeout: 600_000 });
  if (install.status !== 0) {
    spawnSync('apt-get', ['update'], { env, timeout: 300_000 });
    install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'buildah'], { env, encoding: 'utf8', timeout: 600_000 });
  }
  if (install.status !== 0) throw new Error(`could not install buildah with apt-get: ${install.stderr || install.error?.message}`);
  return 'buildah';
}

export interface Buildah {
  /** Runs buildah with the project's storage options; resolves with stdout, rejects with its output. */
  (args: readonly string[], timeoutMs?: number): Promise<string>;
}

/** buildah's global options for the project's store. */
export const STORAGE_ARGS: readonly string[] = [
  '--storage-driver',
  STORAGE_DRIVER,
  '--root',
  STORAGE,
  '--runroot',
  join(tmpdir(), `operless-buildah-run-${STORAGE_DRIVER}`),
];

export function buildah(binary: string): Buildah {
  const base = STORAGE_ARGS;
  return (args, timeoutMs = 600_000) =>
    new Promise((resolvePromise, reject) => {
      execFile(
        binary,
        [...base, ...args],
        { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, BUILDAH_ISOLATION: 'chroot' } },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`buildah ${args.join(' ')} failed: ${err.message}\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`));
          else resolvePromise(stdout);
        },
      );
    });
}

/** The shared libraries `ldd` lists for `binary` (absolute paths, the loader included). */
export function sharedLibraries(binary: string): string[] {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  return [...out.matchAll(/(\/\S+) \(0x/g)].map((m) => m[1] as string);
}

function copyWithLibraries(rootfs: string, binary: string, to: string): void {
  mkdirSync(dirname(join(rootfs, to)), { recursive: true });
  copyFileSync(binary, join(rootfs, to));
  chmodSync(join(rootfs, to), 0o755);
  for (const lib of sharedLibraries(binary)) {
    const target = join(rootfs, lib);
    if (existsSync(target)) continue;
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(realpathSync(lib), target);
  }
}

/** The root file system of a stand-in base: node (+ npm and a shell for `build`), its libraries, uid 1000. */
export function assembleRootfs(dir: string, kind: 'build' | 'runtime'): void {
  copyWithLibraries(dir, process.execPath, 'usr/local/bin/node');
  mkdirSync(join(dir, 'etc'), { recursive: true });
  writeFileSync(join(dir, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n');
  writeFileSync(join(dir, 'etc/group'), 'root:x:0:\nnode:x:1000:\n');
  mkdirSync(join(dir, 'tmp'), { recursive: true, mode: 0o1777 });
  chmodSync(join(dir, 'tmp'), 0o1777);
  if (kind === 'runtime') return;
  copyWithLibraries(dir, '/bin/sh', 'bin/sh');
  copyWithLibraries(dir, '/usr/bin/env', 'usr/bin/env');
  cpSync(npmDir(), join(dir, 'usr/local/lib/node_modules/npm'), { recursive: true });
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(dir, 'usr/local/bin/npm'));
  mkdirSync(join(dir, 'root'), { recursive: true });
}

/** The machine's npm package folder (the `npm` on PATH is its bin/npm-cli.js, symlinked). */
function npmDir(): string {
  const cli = realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim());
  return resolve(dirname(cli), '..');
}

function npmVersion(): string {
  return execFileSync('npm', ['--version'], { encoding: 'utf8' }).trim();
}

/** The stand-in base image of `kind`, committed once per Node.js (and npm) version. */
export async function standInBase(run: Buildah, kind: 'build' | 'runtime'): Promise<string> {
  const tag = kind === 'build' ? `${process.versions.node}-npm${npmVersion()}` : process.versions.node;
  const name = `localhost/operless-node-${kind}:${tag}`;
  const listed = await run(['images', '--noheading', '--format', '{{.Name}}:{{.Tag}}']);
  if (listed.split('\n').includes(name)) return name;
  const dir = mkdtempSync(join(tmpdir(), `operless-rootfs-${kind}-`));
  try {
    assembleRootfs(dir, kind);
    const container = (await run(['from', 'scratch'])).trim();
    try {
      await run(['copy', container, `${dir}/.`, '/']);
      await run(['config', '--env', 'PATH=/usr/local/bin:/usr/bin:/bin', '--env', 'HOME=/root', container]);
      await run(['commit', '--quiet', container, name]);
    } finally {
      await run(['rm', container]).catch(() => undefined);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return name;
}

export interface BuiltImage {
  readonly name: string;
  /** Sum of the image's layers (uncompressed tar). */
  readonly sizeBytes: number;
  /** The layers the Dockerfile's runtime stage adds on top of its base. */
  readonly ownLayerBytes: number;
  readonly buildMs: number;
}

export interface ImageInspection {
  readonly config: { User?: string; Entrypoint?: string[]; Env?: string[]; WorkingDir?: string };
  readonly layerBytes: readonly number[];
}

/** The image's OCI config and layer sizes (`buildah inspect`). */
export async function inspectImage(run: Buildah, name: string): Promise<ImageInspection> {
  const info = JSON.parse(await run(['inspect', '--type', 'image', name])) as { OCIv1: { config: ImageInspection['config'] }; Manifest: string };
  const manifest = JSON.parse(info.Manifest) as { layers: { size: number }[] };
  return { config: info.OCIv1.config, layerBytes: manifest.layers.map((l) => l.size) };
}

/**
 * Builds the project's Dockerfile with the stand-in bases (layers cached in STORAGE). The
 * machine's npm cache is mounted into the build so `npm ci` does not download again.
 */
export async function buildForwarderImage(run: Buildah, name = 'localhost/operless-forwarder:test'): Promise<BuiltImage> {
  const [build, runtime] = [await standInBase(run, 'build'), await standInBase(run, 'runtime')];
  const npmCache = join(homedir(), '.npm');
  mkdirSync(npmCache, { recursive: true });
  const started = Date.now();
  await run(
    [
      'bud',
      '--isolation',
      'chroot',
      '--layers',
      '--pull=false',
      '--network',
      'host',
      '--build-arg',
      `BASE_IMAGE=${build}`,
      '--build-arg',
      `RUNTIME_IMAGE=${runtime}`,
      '--volume',
      `${npmCache}:/root/.npm`,
      '-f',
      DOCKERFILE,
      '-t',
      name,
      root,
    ],
    900_000,
  );
  const buildMs = Date.now() - started;
  const [image, base] = await Promise.all([inspectImage(run, name), inspectImage(run, runtime)]);
  const sum = (sizes: readonly number[]) => sizes.reduce((a, b) => a + b, 0);
  return { name, sizeBytes: sum(image.layerBytes), ownLayerBytes: sum(image.layerBytes.slice(base.layerBytes.length)), buildMs };
}
