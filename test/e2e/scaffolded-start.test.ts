/**
 * A generated project's `npm start`, as its README promises: `operless init` + two `operless
 * create api` (a cluster-scoped kind and a namespaced one) into a temporary folder, the
 * project's `npm install` (Operless as a package: this repository staged and compiled into the
 * test's own folder, never the checkout's dist/), then
 * `npm start` as a child process — the project's own dev loop (`operless dev` from its
 * node_modules) on the Operless test environment binaries (~/.cache/operless, or
 * KUBEBUILDER_ASSETS). It must reconcile both samples (the generated stubs set `Ready=True`
 * for the current generation, each kind through its own queue); Ctrl-C — SIGINT to the whole
 * process group, as a terminal sends it — must stop everything: no process of the tree
 * survives and the state file is gone.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIST, stagePackage } from '../../scripts/build-package.ts';
import { processTree, survivors, watchProcess } from './process-helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'bin', 'operless.js');
let work: string | undefined;
let child: ChildProcess | undefined;
let operlessPackage: string;
let distBefore: number | undefined;

/** This repository's Node 24 first on PATH; not nested in this test run. */
function environment(): NodeJS.ProcessEnv {
  const { NODE_TEST_CONTEXT: _nested, ...inherited } = process.env;
  return { ...inherited, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, npm_config_fund: 'false', npm_config_audit: 'false' };
}

function run(command: string, args: string[], cwd: string): void {
  const r = spawnSync(command, args, { cwd, env: environment(), encoding: 'utf8', timeout: 600_000 });
  assert.equal(r.status, 0, `${command} ${args.join(' ')}:\n${r.stdout}${r.stderr}`);
}

before(() => {
  distBefore = statSync(DIST, { throwIfNoEntry: false })?.mtimeMs;
  work = mkdtempSync(join(tmpdir(), 'operless-e2e-start-'));
  operlessPackage = stagePackage(join(work, 'operless-package'));
});
after(() => {
  if (child?.pid && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

test('npm start in a generated project reconciles its samples and stops cleanly on Ctrl-C', async () => {
  const project = join(work!, 'start-operator');
  run(process.execPath, [CLI, 'init', project, '--domain', 'example.com', '--operless-version', `file:${operlessPackage}`], work!);
  run(
    process.execPath,
    [CLI, 'create', 'api', '--group', 'tenancy', '--version', 'v1alpha1', '--kind', 'Tenant', '--cluster-scoped', '--owns', 'Namespace'],
    project,
  );
  run(process.execPath, [CLI, 'create', 'api', '--group', 'apps', '--version', 'v1', '--kind', 'WebApp', '--owns', 'ConfigMap,Secret'], project);
  run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], project);

  // Its own process group, so SIGINT can go to the whole group like a terminal's Ctrl-C.
  const start = spawn('npm', ['start'], { cwd: project, env: environment(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child = start;
  const { waitFor, exited, output } = watchProcess(start, 'npm start');

  await waitFor(/● Tenant tenant-sample generation (\d+) observed \1: Ready=True/, 'the sample Tenant was reconciled');
  await waitFor(/● WebApp default\/web-app-sample generation (\d+) observed \1: Ready=True/, 'the sample WebApp was reconciled');
  await waitFor(/press Ctrl-C to stop everything/, 'it finished starting');
  assert.match(
    output(),
    /functions running: tenant \(functions\/tenant\.ts, queue \S+operless-dev-tenant\), webApp \(functions\/web-app\.ts, queue \S+operless-dev-webApp\)/,
    'each kind on its own queue',
  );
  assert.ok(existsSync(join(project, '.operless', 'dev.json')), 'the state file is written');

  // A second terminal: `operless enqueue` finds the loop through its state file and sends each
  // object to the queue of the function that reconciles its kind.
  const enqueued = spawnSync(process.execPath, [CLI, 'enqueue', 'webapp/default/web-app-sample', 'tenant/tenant-sample', '--json'], {
    cwd: project,
    env: environment(),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(enqueued.status, 0, `${enqueued.stdout}${enqueued.stderr}`);
  const summary = JSON.parse(enqueued.stdout) as { sent: number; queueUrls?: string[] };
  assert.equal(summary.sent, 2);
  assert.deepEqual(summary.queueUrls?.map((u) => u.split('/').pop()).sort(), ['operless-dev-tenant', 'operless-dev-webApp'], enqueued.stdout);

  const tree = processTree(start.pid!);
  assert.ok(
    tree.some((p) => /kube-apiserver/.test(p.command)),
    `the control plane runs under npm start:\n${tree.map((p) => `${p.pid} ${p.command}`).join('\n')}`,
  );
  assert.ok(tree.some((p) => /etcd/.test(p.command)));

  process.kill(-start.pid!, 'SIGINT');
  const { code, signal } = await exited;
  // npm ends the way its script did on SIGINT (by the signal itself, or 0 / 130): either is a clean stop.
  assert.ok(signal === 'SIGINT' || code === 0 || code === 130, `npm start ended with code ${code}, signal ${signal}:\n${output().slice(-2000)}`);
  assert.match(output(), /stopped; nothing left running/);
  assert.deepEqual(await survivors(tree), [], 'processes survived npm start');
  assert.equal(existsSync(join(project, '.operless', 'dev.json')), false, 'the state file is removed on stop');
  assert.equal(
    statSync(DIST, { throwIfNoEntry: false })?.mtimeMs,
    distBefore,
    `the checkout's ${DIST} was left alone (the package was built into the test's own folder)`,
  );
});
