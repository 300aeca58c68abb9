/**
 * Invalid CLI arguments: `operless` run as a child process (the real bin shim) with bad
 * flags, bad values and bad names exits 2 with one line on stderr that names the problem —
 * the flag, the value or the name — and never a stack trace. No server is contacted: every
 * case is refused before any request (queue URLs point at a closed loopback port).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { closedPort } from '../../../src/testing/ports.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(root, 'bin/operless.js');
const work = mkdtempSync(join(tmpdir(), 'operless-cli-args-'));
// A port that was free a moment ago and is closed: were a request made, it would be refused.
const closed = `http://127.0.0.1:${await closedPort()}`;
const Q = ['--queue-url', `${closed}/000000000000/q`, '--region', 'eu-west-1', '--project', root];
const D = ['--dlq-url', `${closed}/000000000000/d`, '--region', 'eu-west-1'];

async function operless(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // A clean environment: no queue, cluster or kubeconfig leaks in from the developer's shell.
  const env = { PATH: process.env.PATH ?? '', HOME: work, AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x', AWS_EC2_METADATA_DISABLED: 'true' };
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd: work, env, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

before(async () => {
  const init = await operless(['init', 'proj', '--domain', 'example.com', '--operless-version', `file:${root}`]);
  assert.equal(init.code, 0, init.stderr);
});
after(() => rmSync(work, { recursive: true, force: true }));

/** [args, what the one-line message must name] */
const CASES: [string[], RegExp][] = [
  [['frobnicate'], /unknown command "frobnicate"/],
  [['--bogus'], /unknown command "--bogus"/],
  [['enqueue', '--nope'], /Unknown option '--nope'/],
  [['enqueue'], /name an object.*--all/],
  [['enqueue', 'mc/ns/a', '--project', root], /--queue-url.*OPERLESS_QUEUE_URL/],
  [['enqueue', 'mc/ns/a'], /unknown kind "mc": no CRDs found in infra\/crds\//],
  [['enqueue', 'nokind/ns/a', ...Q], /unknown kind "nokind"/],
  [['enqueue', 'memcached/ns/a/b', ...Q], /memcached\/<namespace>\/<name>/],
  [['enqueue', 'memcached/NS/a', ...Q], /"namespace" must be a DNS-1123 label, got "NS"/],
  [['enqueue', 'memcached/ns/a', '--cluster', 'bad id', ...Q], /"cluster" must be a cluster id/],
  [['enqueue', 'memcached', '--all', '--page-size', 'abc', ...Q], /--page-size must be a whole number.*"abc"/],
  [['enqueue', 'memcached', '--all', '--page-size', '0', ...Q], /--page-size must be a whole number.*"0"/],
  [['enqueue', 'memcached/ns/a', '--queue-url', 'notaurl', '--region', 'eu-west-1', '--project', root], /--queue-url.*"notaurl"/],
  [['dlq'], /needs a subcommand: list, redrive/],
  [['dlq', 'list', '--limit', 'abc', ...D], /--limit must be a whole number.*"abc"/],
  [['dlq', 'list', '--limit=-5', ...D], /--limit must be a whole number.*"-5"/],
  [['dlq', 'list', '--limit', '-5', ...D], /'--limit'/],
  [['dlq', 'list', '--dlq-url', 'ftp://x', '--region', 'eu-west-1'], /--dlq-url.*"ftp:\/\/x"/],
  [['dlq', 'redrive', '--max', '3', ...D], /Unknown option '--max'/],
  [['status', '--json=yes'], /'--json' does not take an argument/],
  [['status', '--max-names', 'x'], /--max-names must be a whole number.*"x"/],
  [['doctor', '--timeout', '5'], /Unknown option '--timeout'/],
  [['crd', '--check', 'extra'], /unexpected argument "extra"/],
  [['dev', '--broker', 'kafka'], /--broker must be embedded, elasticmq or sqs, got "kafka"/],
  [['dev', '--runtime', 'docker'], /--runtime must be inprocess or emulator, got "docker"/],
  [['init'], /give exactly one directory/],
  [['init', 'x'], /--domain is required/],
  [['init', 'Bad_Name', '--domain', 'example.com'], /project name "Bad_Name" must be lower-case/],
  [['init', 'ok', '--domain', 'example.com', '--name', 'Has_Upper'], /project name "Has_Upper"/],
  [['init', 'ok', '--domain', 'nodot'], /--domain "nodot" must be a lower-case DNS name/],
  [['init', 'ok', '--domain', 'Example.COM'], /--domain "Example.COM"/],
  [['create', 'api'], /--group, --version, --kind required/],
  [['create', 'api', '--group', 'cache', '--version', 'v1', '--kind', 'Foo'], /no operless\.json/],
  [['create', 'api', '--project', 'proj', '--group', 'Cache', '--version', 'v1', '--kind', 'Foo'], /--group "Cache" must be a DNS-1123 name/],
  [['create', 'api', '--project', 'proj', '--group=-bad-', '--version', 'v1', '--kind', 'Foo'], /--group "-bad-"/],
  [['create', 'api', '--project', 'proj', '--group', 'cache', '--version', '1', '--kind', 'Foo'], /--version "1" must look like v1/],
  [['create', 'api', '--project', 'proj', '--group', 'cache', '--version', 'v0', '--kind', 'Foo'], /--version "v0"/],
  [['create', 'api', '--project', 'proj', '--group', 'cache', '--version', 'v1', '--kind', 'foo'], /--kind "foo" must be PascalCase/],
  [['create', 'api', '--project', 'proj', '--group', 'cache', '--version', 'v1', '--kind', 'Foo_Bar'], /--kind "Foo_Bar"/],
  [['create', 'api', '--project', 'proj', '--group', 'cache', '--version', 'v1', '--kind', 'Foo', '--owns', 'Deployment,Nope'], /--owns: unknown kind "Nope"/],
  [
    ['create', 'api', '--project', 'proj', '--group', 'cache', '--version', 'v1', '--kind', 'Foo', '--namespaced', '--cluster-scoped'],
    /--namespaced and --cluster-scoped exclude each other/,
  ],
];

// In tests of ten cases: each case is a Node process start, and a loaded machine (the unit lane
// beside two server lanes) took longer than one test's timeout for all of them together.
const CHUNK = 10;
for (let from = 0; from < CASES.length; from += CHUNK) {
  const chunk = CASES.slice(from, from + CHUNK);
  test(`bad arguments exit 2 with one line naming the problem, no stack trace (cases ${from + 1}–${from + chunk.length} of ${CASES.length})`, async () => {
    const failures: string[] = [];
    // Two at a time.
    for (let i = 0; i < chunk.length; i += 2) {
      await Promise.all(
        chunk.slice(i, i + 2).map(async ([args, names]) => {
          const r = await operless(args);
          const out = r.stderr.trim();
          const problems = [
            r.code !== 2 && `exit ${r.code} (expected 2)`,
            !names.test(out) && `message does not match ${names}`,
            /\n\s+at /.test(r.stderr) && 'stack trace printed',
            out.split('\n').length > 1 && 'more than one line',
            /\.\./.test(out.replace(/\.\.\.|\.\.\//g, '')) && 'doubled period',
          ].filter(Boolean);
          if (problems.length) failures.push(`operless ${args.join(' ')}\n    ${problems.join('; ')}\n    stderr: ${out}`);
        }),
      );
    }
    assert.equal(failures.length, 0, `\n${failures.join('\n')}`);
  });
}

test('--help of every command exits 0 and prints its usage', async () => {
  for (const cmd of [['enqueue'], ['dlq', 'list'], ['dlq', 'redrive'], ['status'], ['doctor'], ['crd'], ['dev'], ['init'], ['create', 'api']]) {
    const r = await operless([...cmd, '--help']);
    assert.equal(r.code, 0, `${cmd.join(' ')} --help: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`Usage: operless ${cmd.join(' ')}`));
  }
});
