/**
 * The runtimes a measurement runs the forwarder bundle under (bench/lib/runtimes.ts): the
 * RUNTIMES list read into entries, and the command line of each runtime with the image's flags
 * where they apply.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FORWARDER_NODE_FLAGS } from '../../../src/build/forwarder-node-flags.ts';
import { FORWARDER_V8_FLAGS, parseRuntimes, runtimeArgv } from '../../../bench/lib/runtimes.ts';

test('parseRuntimes reads names and their extra flags, in order; unset means node alone', () => {
  assert.deepEqual(parseRuntimes(undefined), [{ name: 'node', flags: [], label: 'node' }]);
  assert.deepEqual(parseRuntimes('node, bun,bun  --smol ,deno,'), [
    { name: 'node', flags: [], label: 'node' },
    { name: 'bun', flags: [], label: 'bun' },
    { name: 'bun', flags: ['--smol'], label: 'bun --smol' },
    { name: 'deno', flags: [], label: 'deno' },
  ]);
});

test('parseRuntimes refuses an unknown runtime, an entry given twice and an empty list, naming them', () => {
  assert.throws(() => parseRuntimes('node,quickjs'), /unknown runtime "quickjs"/);
  assert.throws(() => parseRuntimes('bun --smol,bun  --smol'), /"bun --smol" is given twice/);
  assert.throws(() => parseRuntimes(' , '), /no runtime/);
});

test("the V8 flags passed to Deno are the image's flags less Node's own heap-percentage option", () => {
  assert.ok(FORWARDER_NODE_FLAGS.some((f) => f.startsWith('--max-old-space-size-percentage')));
  assert.ok(!FORWARDER_V8_FLAGS.some((f) => f.startsWith('--max-old-space-size-percentage')));
  assert.deepEqual(
    FORWARDER_V8_FLAGS,
    FORWARDER_NODE_FLAGS.filter((f) => !f.startsWith('--max-old-space-size-percentage')),
  );
});

test('runtimeArgv: node with the image flags, deno with run -A and the V8 flags, bun with its own flags only', () => {
  const [node, bun, smol, deno] = parseRuntimes('node --expose-gc,bun,bun --smol,deno --v8-flags=--trace-gc');
  assert.deepEqual(runtimeArgv(node!, '/n', 'f.mjs'), ['/n', ...FORWARDER_NODE_FLAGS, '--expose-gc', 'f.mjs']);
  assert.deepEqual(runtimeArgv(bun!, '/b', 'f.mjs'), ['/b', 'f.mjs']);
  assert.deepEqual(runtimeArgv(smol!, '/b', 'f.mjs'), ['/b', '--smol', 'f.mjs']);
  assert.deepEqual(runtimeArgv(deno!, '/d', 'f.mjs'), ['/d', 'run', '-A', `--v8-flags=${FORWARDER_V8_FLAGS.join(',')}`, '--v8-flags=--trace-gc', 'f.mjs']);
});
