/**
 * Runs the test suites with Node's built-in test runner and prints the runner's summary.
 * Usage: node scripts/test.ts [unit|integration|e2e|faults|security|soak]...
 *
 * Lanes: the requested suites run in up to three `node --test` processes side by side, each
 * a lane of suites alike:
 * - servers (integration, e2e): one file at a time — each file starts its own real
 *   kube-apiserver/etcd/ElasticMQ; reported live;
 * - faults (faults, security, soak): one file at a time beside them. Their time goes mostly to waiting —
 *   an outage held for tens of seconds, a visibility timeout, churn paced at a fixed rate —
 *   so the servers lane uses the CPU they leave idle instead of waiting for them;
 * - unit: no servers; two files at a time when it runs alone, one beside the others.
 * So at most two server files run at once, each on its own control plane (free ports, its own
 * temp dirs). Tests wait on conditions and assert no speed (the developers' guide), so a
 * busier machine makes a lane slower, not wrong. The lanes other than the first are held and
 * printed once every lane has finished, so reports never interleave; then, last, what failed in
 * each failed lane (so a log that keeps only its tail still names every failure); the exit status
 * is failure when any lane fails. `OPERLESS_TEST_SERIAL=1` runs every file in one lane, one at a
 * time (the way to compare, or to rule the lanes out when a failure looks like interference).
 *
 * The run's build cache: a fresh folder named in `OPERLESS_BUILD_CACHE` for every test process
 * (unless the caller names one), removed at the end. Test files that need the same
 * `serverless package` or staged npm package make it once (scripts/build-cache.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failureSummary, planLanes, SUITES, type Lane } from './test-lanes.ts';

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return files(path);
      return name.endsWith('.test.ts') ? [path] : [];
    })
    .sort();
}

interface LaneResult {
  readonly code: number;
  readonly seconds: number;
  /** The lane's whole report; printed at the end for every lane but the first (which reports live). */
  readonly held: Buffer[];
}

/** Runs a lane; the first lane reports live (and is kept too), the others are held and printed later. */
function runLane(lane: Lane, live: boolean, env: NodeJS.ProcessEnv): Promise<LaneResult> {
  const started = Date.now();
  const args = ['--test', `--test-concurrency=${lane.concurrency}`, `--test-timeout=${lane.timeoutMs}`, '--test-reporter=spec', ...lane.files];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const held: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    held.push(chunk);
    if (live) process.stdout.write(chunk);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    held.push(chunk);
    if (live) process.stderr.write(chunk);
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), seconds: (Date.now() - started) / 1000, held }));
  });
}

const requested = process.argv.slice(2);
const names = requested.length > 0 ? requested : Object.keys(SUITES);
const unknown = names.find((name) => !SUITES[name]);
if (unknown) {
  console.error(`operless: unknown test suite "${unknown}" (expected ${Object.keys(SUITES).join(', ')})`);
  process.exit(2);
}
const lanes = planLanes(names, process.env.OPERLESS_TEST_SERIAL === '1', files);
if (lanes.length === 0) {
  console.error(`operless: no test files found for ${names.join(', ')}`);
  process.exit(1);
}

const ownCache = process.env.OPERLESS_BUILD_CACHE ? undefined : mkdtempSync(join(tmpdir(), 'operless-build-cache-'));
const env = {
  ...process.env,
  OPERLESS_LOG_LEVEL: process.env.OPERLESS_LOG_LEVEL ?? 'warn',
  ...(ownCache ? { OPERLESS_BUILD_CACHE: ownCache } : {}),
};
let results: LaneResult[];
try {
  results = await Promise.all(lanes.map((lane, i) => runLane(lane, i === 0, env)));
} finally {
  if (ownCache) rmSync(ownCache, { recursive: true, force: true });
}
for (const [i, result] of results.entries()) {
  if (i === 0 || result.held.length === 0) continue;
  process.stdout.write(`\noperless: the report of ${lanes[i]!.name}, which ran beside the others:\n\n`);
  process.stdout.write(Buffer.concat(result.held));
}
if (lanes.length > 1) {
  const line = (lane: Lane, r: LaneResult) =>
    `${lane.name}: ${lane.files.length} files, ${lane.concurrency} at a time, ${r.seconds.toFixed(0)} s, ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`}`;
  process.stdout.write(`\noperless: lanes run side by side — ${lanes.map((lane, i) => line(lane, results[i]!)).join('; ')}\n`);
}
// The failures again, last: a CI log that keeps only its tail still names what failed in every lane.
for (const [i, result] of results.entries()) {
  if (result.code === 0) continue;
  const failures = failureSummary(Buffer.concat(result.held).toString('utf8'));
  process.stdout.write(`\noperless: what failed in ${lanes[i]!.name}:\n${failures}\n`);
}
process.exit(results.find((r) => r.code !== 0)?.code ?? 0);
