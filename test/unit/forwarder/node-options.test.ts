import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FORWARDER_NODE_OPTIONS } from '../../../src/forwarder/node-options.ts';

const dockerfile = fileURLToPath(new URL('../../../infra/forwarder/Dockerfile', import.meta.url));

test('the image sets exactly the Node.js options the benchmark measures', () => {
  const text = readFileSync(dockerfile, 'utf8');
  const set = /^\s*NODE_OPTIONS="([^"]*)"/m.exec(text)?.[1];
  assert.equal(set, FORWARDER_NODE_OPTIONS, 'infra/forwarder/Dockerfile ENV NODE_OPTIONS must equal FORWARDER_NODE_OPTIONS (src/forwarder/node-options.ts)');
  assert.doesNotMatch(text, /ENTRYPOINT \[[^\]]*--max-semi-space-size/, 'the flags live in NODE_OPTIONS only, not also in the ENTRYPOINT');
});

test('Node accepts the options in NODE_OPTIONS and they bound the young generation', () => {
  // Allocate short-lived garbage at a resync's rate; without the option the new space grows to tens of MiB.
  const script = `const keep = []; for (let i = 0; i < 200000; i++) { keep.push({ i, s: 'x'.repeat(64) + i }); if (keep.length > 5000) keep.length = 0; }
    const ns = require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    process.stdout.write(String(ns.space_size));`;
  const run = (nodeOptions: string | undefined) => {
    const r = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, NODE_OPTIONS: nodeOptions ?? '' }, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return Number(r.stdout);
  };
  const bounded = run(FORWARDER_NODE_OPTIONS);
  assert.ok(bounded <= 2 * 2 ** 20, `new space with ${FORWARDER_NODE_OPTIONS}: ${bounded} bytes, expected ≤ 2 MiB`);
  assert.ok(run(undefined) > bounded, 'without the option the young generation grows larger (the option has an effect)');
});
