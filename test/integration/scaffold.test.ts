/**
 * The scaffolding end to end, as a user runs it: `operless init` + `operless create api`
 * (a cluster-scoped kind owning a Namespace, and a namespaced one owning a ConfigMap and a
 * Secret) into a temporary folder, then the generated project's own `npm install && npm test`:
 * it installs Operless as a package (a copy of this repository's compiled dist/, like a
 * published version), type-checks the generated code against its .d.ts, and runs the
 * generated integration tests against a real control plane from ~/.cache/operless.
 *
 * Slow by nature (npm install from the registry cache: about 15 s here; the generated tests
 * about 20 s), so exactly one project is generated.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPackage } from '../../scripts/build-package.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'bin', 'operless.js');
let work: string;
let project: string;

/** Runs a command with this repository's Node 24 first on PATH; returns its output. */
function run(command: string, args: string[], cwd: string, timeoutMs = 600_000) {
  // Without NODE_TEST_CONTEXT: the project's own `node --test` must not think it is nested in this one.
  const { NODE_TEST_CONTEXT: _nested, ...inherited } = process.env;
  const env = { ...inherited, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, npm_config_fund: 'false', npm_config_audit: 'false' };
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: timeoutMs });
  return { code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

before(() => {
  buildPackage();
  work = mkdtempSync(join(tmpdir(), 'operless-scaffold-'));
  project = join(work, 'demo-operator');
});
after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test('init creates a project that depends on Operless as a package and says what to do next', () => {
  const r = run(process.execPath, [CLI, 'init', project, '--domain', 'example.com', '--operless-version', `file:${ROOT}`], work);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Created operator project demo-operator/);
  assert.match(r.out, /npm install && npm test/);
  const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
  assert.equal(pkg.dependencies.operless, `file:${ROOT}`);
  assert.equal(pkg.scripts.start, 'operless dev');
  assert.equal(pkg.devDependencies.node, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).devDependencies.node);
  assert.equal(readFileSync(join(project, '.npmrc'), 'utf8'), 'install-links=true\n');
});

test('init refuses to overwrite the project without --force', () => {
  const r = run(process.execPath, [CLI, 'init', project, '--domain', 'example.com'], work);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /refusing to overwrite package\.json, .*pass --force/);
});

test('create api adds two kinds; a second time it refuses', () => {
  const tenant = run(process.execPath, [CLI, 'create', 'api', '--group', 'tenancy', '--version', 'v1alpha1', '--kind', 'Tenant', '--cluster-scoped', '--owns', 'Namespace'], project);
  assert.equal(tenant.code, 0, tenant.out);
  assert.match(tenant.out, /Added Tenant \(tenancy\.example\.com\/v1alpha1, cluster-scoped, owns Namespace\)/);
  const app = run(process.execPath, [CLI, 'create', 'api', '--group', 'apps', '--version', 'v1', '--kind', 'WebApp', '--owns', 'ConfigMap,Secret'], project);
  assert.equal(app.code, 0, app.out);
  const again = run(process.execPath, [CLI, 'create', 'api', '--group', 'apps', '--version', 'v1', '--kind', 'WebApp'], project);
  assert.equal(again.code, 2, again.out);
  assert.match(again.out, /already has kind WebApp/);
  for (const path of ['infra/crds/tenants.tenancy.example.com.yaml', 'infra/crds/webapps.apps.example.com.yaml', 'test/web-app.test.ts', 'functions/tenant.ts']) {
    assert.ok(existsSync(join(project, path)), path);
  }
});

test('the generated project installs and its own tests pass against a real control plane', () => {
  const install = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], project);
  assert.equal(install.code, 0, install.out);
  assert.ok(existsSync(join(project, 'node_modules', 'operless', 'dist', 'index.js')), 'operless is installed as a package with its dist/');
  const tested = run('npm', ['test'], project);
  assert.equal(tested.code, 0, tested.out);
  assert.match(tested.out, /the handler reconciles the sample Tenant: Ready=True/);
  assert.match(tested.out, /the handler reconciles the sample WebApp: Ready=True/);
  assert.match(tested.out, /# fail 0|ℹ fail 0/);
});
