/**
 * The forwarder's container image, built from infra/forwarder/Dockerfile with buildah (no
 * Docker engine here; stand-in bases from the pinned Node.js, see test/support/forwarder-image.ts)
 * and run from the image against the REAL API server and broker:
 * - the image runs as the numeric non-root uid the chart's securityContext expects, with the
 *   Dockerfile's ENTRYPOINT;
 * - run as uid 65532 on a read-only root file system (the container's root bind-mounted
 *   read-only, /tmp a tmpfs — what readOnlyRootFilesystem and the chart's emptyDir give), with
 *   its configuration mounted at /etc/operless as the chart mounts it, it forwards a change of
 *   a real object to the real queue.
 * Needs Linux and root (buildah --isolation chroot); elsewhere the tests are skipped with that
 * reason. The image size and build time are reported as test diagnostics.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startBroker, startControlPlane, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import {
  buildah,
  buildForwarderImage,
  ensureBuildah,
  imageBuildUnavailable,
  inspectImage,
  STORAGE_ARGS,
  type Buildah,
  type BuiltImage,
} from '../support/forwarder-image.ts';
import { GADGET_CRD, Objects, collect, gadgetConfig, summary } from './forwarder-env.ts';

// Skipped only on a developer's machine that cannot build (not Linux, not root); CI never skips
// it: there a machine that cannot build fails the test, saying why.
const unavailable = process.env.CI ? undefined : imageBuildUnavailable();
let run: Buildah;
let image: BuiltImage;
let cp: ControlPlane;
let broker: Broker;
const work = mkdtempSync(join(tmpdir(), 'fwd-image-'));
const children = new Set<ChildProcess>();
const cleanups: (() => Promise<unknown> | unknown)[] = [];

// A first build on a fresh machine runs `npm ci` inside the image (about 3 minutes here with
// the overlay driver, longer with vfs): more than the suite's per-test default allows.
before(
  async () => {
    if (unavailable) return;
    run = buildah(ensureBuildah());
    [image, cp, broker] = await Promise.all([
      buildForwarderImage(run),
      startControlPlane({ crds: [GADGET_CRD] }),
      startBroker({ queues: [{ name: 'image' }] }),
    ]);
  },
  { timeout: 1_200_000 },
);
after(async () => {
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  await Promise.all([cp?.stop(), broker?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

const imageConfig = async () => (await inspectImage(run, image.name)).config;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;

test("the image runs as uid/gid 65532 (numeric, as runAsNonRoot needs; the chart's runAsUser) with the Dockerfile's ENTRYPOINT; its size is reported", {
  skip: unavailable,
}, async (t) => {
  const config = await imageConfig();
  assert.equal(config.User, '65532:65532');
  assert.deepEqual(config.Entrypoint?.slice(0, 1), ['node']);
  assert.equal(config.Entrypoint?.at(-1), '/app/forwarder.mjs');
  assert.ok(config.Env?.includes('OPERLESS_FORWARDER_CONFIG=/etc/operless/forwarder.yaml'), JSON.stringify(config.Env));
  t.diagnostic(
    `image ${image.name}: ${mib(image.sizeBytes)} uncompressed, of which the forwarder's own layer ${mib(image.ownLayerBytes)} (the rest is the stand-in base: node and its libraries); build ${(image.buildMs / 1000).toFixed(1)} s`,
  );
  assert.ok(image.sizeBytes > 0, 'the image has a size');
});

/** A working container of the image whose root file system is mounted read-only, with the chart's mount points made. */
async function readOnlyContainer(): Promise<string> {
  const container = (await run(['from', '--pull=false', image.name])).trim();
  cleanups.push(() => run(['rm', container]));
  const root = (await run(['mount', container])).trim();
  cleanups.push(() => run(['umount', container]));
  // What a container runtime does before starting the container: create the mount points
  // (the chart's config volume and /tmp; /dev, /proc, /sys and the files buildah bind-mounts).
  for (const dir of ['etc/operless', 'tmp', 'dev', 'proc', 'sys', 'run']) mkdirSync(join(root, dir), { recursive: true });
  for (const file of ['etc/hosts', 'etc/resolv.conf', 'etc/hostname', 'run/.containerenv']) writeFileSync(join(root, file), '');
  const mount = (args: string[]) => {
    const r = spawnSync('mount', args, { encoding: 'utf8' });
    assert.equal(r.status, 0, `mount ${args.join(' ')}: ${r.stderr}`);
  };
  mount(['--bind', root, root]);
  cleanups.push(() => spawnSync('umount', [root]));
  mount(['-o', 'remount,bind,ro', root, root]);
  return container;
}

function runIn(container: string, volumes: string[], env: Record<string, string>, command: readonly string[]): ChildProcess {
  const child = spawn(
    'buildah',
    [
      ...STORAGE_ARGS,
      'run',
      '--isolation',
      'chroot',
      '--network',
      'host',
      '--user',
      '65532:65532',
      '--mount',
      'type=tmpfs,destination=/tmp',
      ...volumes.flatMap((v) => ['--volume', v]),
      ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
      container,
      '--',
      ...command,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  children.add(child);
  child.on('close', () => children.delete(child));
  return child;
}

function output(child: ChildProcess): { text: () => string; exited: Promise<number | null> } {
  let text = '';
  child.stdout!.on('data', (d) => (text = (text + d).slice(-20_000)));
  child.stderr!.on('data', (d) => (text = (text + d).slice(-20_000)));
  return { text: () => text, exited: new Promise((resolve) => child.on('close', (code) => resolve(code))) };
}

test('run from the image as uid 65532 on a read-only root: a change of a real object reaches the real queue', { skip: unavailable }, async () => {
  const container = await readOnlyContainer();
  const { Entrypoint: entrypoint = [] } = await imageConfig();
  const etc = join(work, 'etc');
  mkdirSync(etc);
  const queueUrl = broker.queueUrl('image');
  writeFileSync(join(etc, 'forwarder.yaml'), stringify(gadgetConfig(queueUrl, broker.region, { clusterId: 'image' })));
  writeFileSync(join(etc, 'kubeconfig'), cp.kubeconfigYaml);
  const volumes = [`${etc}:/etc/operless:ro`];

  // The root really is read-only for the process, and uid 65532 is who runs it.
  const probe = output(
    runIn(container, volumes, {}, [
      'node',
      '-e',
      `
    const fs = require('node:fs');
    let root; try { fs.writeFileSync('/app/written', 'x'); root = 'writable'; } catch (e) { root = e.code; }
    fs.writeFileSync('/tmp/scratch', 'x');
    console.log('PROBE ' + JSON.stringify({ uid: process.getuid(), gid: process.getgid(), root, tmp: fs.readFileSync('/tmp/scratch', 'utf8') }));`,
    ]),
  );
  // buildah 1.28 exits non-zero (a panic while cleaning up its mount points on the read-only
  // root) after the command ran; the command's own answer is what counts.
  await probe.exited;
  const answer = /^PROBE (.*)$/m.exec(probe.text());
  assert.ok(answer, `the probe ran in the container:\n${probe.text()}`);
  assert.deepEqual(JSON.parse(answer[1]!), { uid: 65532, gid: 65532, root: 'EROFS', tmp: 'x' });

  const forwarder = output(
    runIn(
      container,
      volumes,
      {
        KUBECONFIG: '/etc/operless/kubeconfig',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_ENDPOINT_URL_SQS: broker.endpoint,
        POD_NAME: 'forwarder-image-0',
        POD_NAMESPACE: 'operless',
      },
      entrypoint,
    ),
  );
  const objects = new Objects(cp.kubeConfig);
  await objects.createNamespace('image');
  // Changes after the initial list are forwarded (resyncOnStart is off in this config).
  await waitUntil('the forwarder in the image runs (watches synced)', () => forwarder.text().includes('"msg":"forwarder running"'), {
    timeoutMs: 60_000,
    context: forwarder.text,
  });
  await objects.createGadget('image', 'from-image');
  const received = await collect(broker.sqs(), queueUrl, { until: (all) => all.length > 0, timeoutMs: 60_000 });
  assert.deepEqual(summary(received), ['Added Gadget/image/from-image'], `forwarder output:\n${forwarder.text()}`);
  assert.doesNotMatch(forwarder.text(), /EROFS|EACCES/, 'the forwarder writes nothing outside /tmp');
});
