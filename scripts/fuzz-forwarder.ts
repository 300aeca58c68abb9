/**
 * A long fuzz run of hostile objects against the forwarder process (the fuzz case of
 * test/integration/forwarder-hostile.test.ts, which CI runs with 25 runs): a real
 * kube-apiserver + etcd, ElasticMQ, the forwarder bundle under the shipped ServiceAccount.
 *
 *   node scripts/fuzz-forwarder.ts [--runs 400] [--seed N] [--rounds 1]
 *
 * Each round uses its own seed (the given one, then fresh ones) and prints it; replay a
 * failing round with `--seed <seed> --runs <runs>` (or OPERLESS_FC_SEED / OPERLESS_FC_RUNS on
 * the test file). Exit code 1 when any round failed.
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const TEST_FILE = 'test/integration/forwarder-hostile.test.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '400' },
    seed: { type: 'string' },
    rounds: { type: 'string', default: '1' },
  },
});
const runs = Number(values.runs);
const rounds = Number(values.rounds);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: node scripts/fuzz-forwarder.ts [--runs N] [--seed N] [--rounds N]');
  process.exit(2);
}

let failed = 0;
for (let round = 0; round < rounds; round++) {
  const seed = round === 0 && values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 0x7fffffff);
  console.log(`fuzz-forwarder: round ${round + 1}/${rounds}, seed ${seed}, ${runs} runs`);
  const result = spawnSync(
    process.execPath,
    ['--test', '--test-reporter=spec', '--test-name-pattern=^fuzz', `--test-timeout=${Math.max(300_000, runs * 3_000)}`, TEST_FILE],
    { stdio: 'inherit', env: { ...process.env, OPERLESS_FC_SEED: String(seed), OPERLESS_FC_RUNS: String(runs) } },
  );
  if (result.status !== 0) {
    failed++;
    console.log(`fuzz-forwarder: round ${round + 1} FAILED; replay with: node scripts/fuzz-forwarder.ts --seed ${seed} --runs ${runs}`);
  }
}
process.exit(failed > 0 ? 1 : 0);
