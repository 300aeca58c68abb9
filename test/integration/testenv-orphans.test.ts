/**
 * No orphans: when the process that started a control plane and a broker dies — killed with
 * SIGKILL (no exit hook can run) or SIGTERM — etcd, kube-apiserver, kube-controller-manager and
 * ElasticMQ die too, and their temp dirs are removed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const victim = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'testenv-victim.ts');

function processesMentioning(text: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .flatMap((p) => {
      try {
        const cmdline = readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return cmdline.includes(text) ? [`${p}: ${cmdline}`] : [];
      } catch {
        return [];
      }
    });
}

async function startVictim(): Promise<{ pid: number; dataDir: string; brokerDir: string }> {
  const child = spawn(process.execPath, [victim], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
    });
    child.once('exit', (code) => reject(new Error(`the victim process exited early (code ${code})`)));
  });
  const { dataDir, brokerLog } = JSON.parse(line) as { dataDir: string; brokerLog: string };
  return { pid: child.pid!, dataDir, brokerDir: dirname(brokerLog) };
}

async function assertCleanedUp(dirs: string[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const left = dirs.flatMap(processesMentioning);
    const existing = dirs.filter((d) => existsSync(d));
    if (left.length === 0 && existing.length === 0) return;
    if (Date.now() > deadline) assert.fail(`left behind: processes ${JSON.stringify(left)}, folders ${JSON.stringify(existing)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
  test(`${signal} of the test process leaves no component running and no temp dir`, async () => {
    const { pid, dataDir, brokerDir } = await startVictim();
    try {
      const before = [dataDir, brokerDir].flatMap(processesMentioning);
      // etcd, kube-apiserver, kube-controller-manager (+ their wrappers) and ElasticMQ all run.
      for (const component of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'org.elasticmq.server.Main']) {
        assert.ok(
          before.some((p) => p.includes(component)),
          `${component} is not running:\n${before.join('\n')}`,
        );
      }
    } finally {
      process.kill(pid, signal);
    }
    await assertCleanedUp([dataDir, brokerDir]);
  });
}
