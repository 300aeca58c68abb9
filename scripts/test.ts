/**
 * Runs the test suites with Node's built-in test runner, one suite after another, and
 * prints the runner's summary. Usage: node scripts/test.ts [unit|integration|e2e|faults|security|soak]...
 *
 * Unit tests run concurrently (no servers). Integration and end-to-end tests start their
 * own real kube-apiserver/etcd/ElasticMQ per file, so they run one file at a time on CI's
 * two cores.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const SUITES: Record<string, { dir: string; concurrency: number; timeoutMs: number }> = {
  unit: { dir: 'test/unit', concurrency: 2, timeoutMs: 60_000 },
  integration: { dir: 'test/integration', concurrency: 1, timeoutMs: 300_000 },
  e2e: { dir: 'test/e2e', concurrency: 1, timeoutMs: 600_000 },
  faults: { dir: 'test/faults', concurrency: 1, timeoutMs: 900_000 },
  security: { dir: 'test/security', concurrency: 1, timeoutMs: 600_000 },
  soak: { dir: 'test/soak', concurrency: 1, timeoutMs: 900_000 },
};

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.test.ts') ? [path] : [];
  }).sort();
}

const requested = process.argv.slice(2);
const names = requested.length > 0 ? requested : Object.keys(SUITES);
const all: string[] = [];
let concurrency = Infinity;
let timeoutMs = 0;
for (const name of names) {
  const suite = SUITES[name];
  if (!suite) {
    console.error(`operless: unknown test suite "${name}" (expected ${Object.keys(SUITES).join(', ')})`);
    process.exit(2);
  }
  all.push(...files(suite.dir));
  concurrency = Math.min(concurrency, suite.concurrency);
  timeoutMs = Math.max(timeoutMs, suite.timeoutMs);
}
if (all.length === 0) {
  console.error(`operless: no test files found for ${names.join(', ')}`);
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--test', `--test-concurrency=${concurrency}`, `--test-timeout=${timeoutMs}`, '--test-reporter=spec', ...all],
  { stdio: 'inherit', env: { ...process.env, OPERLESS_LOG_LEVEL: process.env.OPERLESS_LOG_LEVEL ?? 'warn' } },
);
process.exit(result.status ?? 1);
