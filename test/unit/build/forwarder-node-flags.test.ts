import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FORWARDER_NODE_FLAGS } from '../../../src/build/forwarder-node-flags.ts';

const dockerfile = fileURLToPath(new URL('../../../infra/forwarder/Dockerfile', import.meta.url));

test('the image runs the bundle with exactly the Node.js flags the benchmark measures', () => {
  const text = readFileSync(dockerfile, 'utf8');
  const entrypoints = [...text.matchAll(/^ENTRYPOINT (\[.*\])\s*$/gm)].map((m) => JSON.parse(m[1]!) as string[]);
  assert.equal(entrypoints.length, 1, 'one exec-form ENTRYPOINT in infra/forwarder/Dockerfile');
  assert.deepEqual(
    entrypoints[0],
    ['node', ...FORWARDER_NODE_FLAGS, '/app/forwarder.mjs'],
    'the ENTRYPOINT must run node with FORWARDER_NODE_FLAGS (src/build/forwarder-node-flags.ts)',
  );
  assert.doesNotMatch(text, /NODE_OPTIONS/, 'the flags live in the ENTRYPOINT only (one place to read)');
});

test('Node accepts the flags, and they bound the young generation and turn the optimizing compilers off', () => {
  // Allocate short-lived garbage at a resync's rate in a hot loop; without the flags the new
  // space grows to tens of MiB and the loop gets optimized.
  const script = `function hot(i) { return { i, s: 'x'.repeat(64) + i }; }
    const keep = []; for (let i = 0; i < 300000; i++) { keep.push(hot(i)); if (keep.length > 5000) keep.length = 0; }
    const ns = require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    process.stdout.write(JSON.stringify({ newSpace: ns.space_size, optimized: %GetOptimizationStatus(hot) }));`;
  const run = (flags: readonly string[]) => {
    const r = spawnSync(process.execPath, [...flags, '--allow-natives-syntax', '-e', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { newSpace: number; optimized: number };
  };
  const TURBOFANNED = 1 << 5; // V8's OptimizationStatus::kTurboFanned
  const MAGLEVVED = 1 << 4; // OptimizationStatus::kMaglevved
  const shipped = run(FORWARDER_NODE_FLAGS);
  assert.ok(shipped.newSpace <= 2 * 2 ** 20, `new space with ${FORWARDER_NODE_FLAGS.join(' ')}: ${shipped.newSpace} bytes, expected ≤ 2 MiB`);
  assert.equal(shipped.optimized & (TURBOFANNED | MAGLEVVED), 0, 'no optimized code with the shipped flags');
  const plain = run([]);
  assert.ok(plain.newSpace > shipped.newSpace, 'without the flags the young generation grows larger (the flag has an effect)');
  assert.notEqual(plain.optimized & (TURBOFANNED | MAGLEVVED), 0, 'without the flags the hot function is optimized (the check can fail)');
});

test("the V8 heap is sized to half the memory the process may use (the cgroup limit, else the machine's)", () => {
  const script = `const v8 = require('node:v8'); const os = require('node:os');
    const constrained = process.constrainedMemory(); const total = os.totalmem();
    const available = constrained > 0 && constrained < total ? constrained : total;
    process.stdout.write(JSON.stringify({ limit: v8.getHeapStatistics().heap_size_limit, available }));`;
  const run = (flags: readonly string[]) => {
    const r = spawnSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { limit: number; available: number };
  };
  const shipped = run(FORWARDER_NODE_FLAGS);
  const half = shipped.available / 2;
  // heap_size_limit is the old generation plus the (bounded) young generation: within 8 MiB of half.
  assert.ok(Math.abs(shipped.limit - half) <= 8 * 2 ** 20, `heap limit ${shipped.limit} bytes, expected about ${half} (half of ${shipped.available})`);
  const plain = run([]);
  assert.notEqual(plain.limit, shipped.limit, 'without the flag V8 sizes the heap by its own rule (the check can fail)');
});
