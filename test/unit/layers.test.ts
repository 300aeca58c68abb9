/**
 * The layer rules (.dependency-cruiser.cjs): the repository keeps them (the exact command of
 * `npm run layers`, which `npm test` runs), and they bite — a fixture tree with one forbidden
 * import per rule is flagged rule by rule, while the imports the layers allow pass.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs');

/** `npm run layers` without npm: its arguments, from package.json. */
function layersArgs(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const [command, ...args] = (pkg.scripts.layers ?? '').split(/\s+/);
  assert.equal(command, 'depcruise', 'package.json has a "layers" script running depcruise');
  return args;
}

function depcruise(cwd: string, args: readonly string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [DEPCRUISE, ...args], { cwd, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

test('the repository keeps its layers: npm run layers finds no violation and ignores none', () => {
  const args = layersArgs();
  assert.ok(!args.some((a) => a.startsWith('--ignore-known')), `npm run layers ignores no known violation: ${args.join(' ')}`);
  const { status, output } = depcruise(ROOT, args);
  assert.equal(status, 0, output);
  assert.match(output, /no dependency violations found/);
});

/** A forbidden import per rule: [importing file, imported file, the rule that must flag it]. */
const FORBIDDEN: readonly (readonly [string, string, string])[] = [
  ['src/observability/log.ts', 'src/core/reconcile/metrics.ts', 'layer-observability'],
  ['src/contract/message.ts', 'src/kube/types.ts', 'layer-contract'],
  ['src/kube/client.ts', 'src/core/controller/types.ts', 'layer-kube'],
  ['src/queue/sender.ts', 'src/local/memory-queue.ts', 'layer-queue'],
  ['src/core/handler/handler.ts', 'src/forwarder/router.ts', 'layer-core'],
  ['src/forwarder/main.ts', 'src/testing/provision.ts', 'layer-forwarder'],
  ['src/crd/resource.ts', 'src/memcached/types.ts', 'layer-crd'],
  ['src/local/lambda-runner.ts', 'src/core/handler/handler.ts', 'layer-local'],
  ['src/testing/config.ts', 'src/devloop/dev-loop.ts', 'layer-testing'],
  ['src/memcached/controller.ts', 'src/forwarder/router.ts', 'operator-uses-public-entries'],
  ['src/memcached/controller.ts', 'src/kube/owned.ts', 'operator-uses-public-entries'],
  ['src/memcached/status.ts', 'src/core/controller/result.ts', 'operator-uses-public-entries'],
  ['functions/handler.ts', 'src/core/handler/handler.ts', 'operator-uses-public-entries'],
  ['src/resources.ts', 'src/crd/generate.ts', 'operator-uses-public-entries'],
  ['src/project/serverless-yml.ts', 'src/kube/types.ts', 'layer-project'],
  ['src/build/esbuild-plugins.ts', 'src/forwarder/main.ts', 'layer-build'],
  ['src/scaffold/init.ts', 'src/cli/main.ts', 'layer-scaffold'],
  ['src/devloop/dev-loop.ts', 'src/cli/target.ts', 'layer-devloop'],
  ['src/cli/main.ts', 'src/memcached/types.ts', 'layer-cli'],
  ['src/retry/backoff.ts', 'src/core/controller/retry-policy.ts', 'layer-retry'],
  ['src/core/controller/types.ts', 'src/core/handler/key.ts', 'core-controller'],
  ['src/core/webhook/webhook.ts', 'src/core/controller/controller.ts', 'core-webhook'],
  ['src/core/invocation/budget.ts', 'src/core/reconcile/followup.ts', 'core-invocation'],
  ['src/core/reconcile/reconciler.ts', 'src/core/controls/timer-tick.ts', 'core-reconcile'],
  ['src/core/controls/timer-tick.ts', 'src/core/handler/key.ts', 'core-controls'],
  ['src/core/per-key/mover.ts', 'src/core/controls/rate-limit-lease.ts', 'core-per-key'],
  ['src/core/resync/resync.ts', 'src/core/controller/controller.ts', 'core-resync'],
  ['src/core/handler/key.ts', 'src/core/webhook/admission.ts', 'core-handler'],
  ['src/core/handler/handler.ts', 'src/core/key.ts', 'core-files-in-stages'],
  ['src/forwarder/source/watcher.ts', 'src/forwarder/route/router.ts', 'forwarder-source'],
  ['src/forwarder/route/router.ts', 'src/forwarder/coalesce/merge.ts', 'forwarder-route'],
  ['src/forwarder/coalesce/coalescer.ts', 'src/forwarder/sink/sender.ts', 'forwarder-coalesce'],
  ['src/forwarder/coalesce/merge.ts', 'src/forwarder/route/router.ts', 'forwarder-coalesce'],
  ['src/forwarder/config/config.ts', 'src/forwarder/source/watches.ts', 'forwarder-config'],
  ['src/forwarder/sink/lane.ts', 'src/forwarder/control/leader.ts', 'forwarder-sink'],
  ['src/forwarder/sink/lanes.ts', 'src/forwarder/route/router.ts', 'forwarder-sink'],
  ['src/forwarder/sink/lane.ts', 'src/forwarder/intake.ts', 'forwarder-sink'],
  ['src/forwarder/intake.ts', 'src/forwarder/control/leader.ts', 'forwarder-intake'],
  ['src/forwarder/intake.ts', 'src/forwarder/coalesce/merge.ts', 'forwarder-intake'],
  ['src/forwarder/control/leader.ts', 'src/forwarder/sink/lane.ts', 'forwarder-control'],
  ['src/forwarder/metrics.ts', 'src/forwarder/sink/lane.ts', 'forwarder-shared-leaves'],
  ['src/forwarder/forwarder.ts', 'src/forwarder/main.ts', 'forwarder-root-below-main'],
  ['src/kube/paths.ts', 'src/index.ts', 'src-top-files-are-entry-points'],
  ['src/core/controller/result.ts', 'bench/run.ts', 'src-is-self-contained'],
  ['functions/handler.ts', 'src/local/lambda-runner.ts', 'functions-are-production'],
  ['scripts/tool.ts', 'test/helper.ts', 'tools-do-not-import-tests'],
];

/** Imports the layers allow (downward), which must not be flagged. */
const ALLOWED: readonly (readonly [string, string])[] = [
  ['src/core/handler/handler.ts', 'src/queue/sender.ts'],
  ['src/core/controller/retry-policy.ts', 'src/retry/backoff.ts'],
  ['src/core/handler/key.ts', 'src/core/per-key/requeue-merge.ts'],
  ['src/core/handler/key.ts', 'src/core/controls/timer-tick.ts'],
  ['src/core/controls/timer-tick.ts', 'src/core/reconcile/delivery.ts'],
  ['src/core/per-key/mover.ts', 'src/core/invocation/budget.ts'],
  ['src/core/controller/controller.ts', 'src/core/resync/resync-period.ts'],
  ['src/forwarder/sink/lane.ts', 'src/forwarder/coalesce/coalescer.ts'],
  ['src/forwarder/route/router.ts', 'src/forwarder/source/watches.ts'],
  ['src/forwarder/sink/sender.ts', 'src/forwarder/metrics.ts'],
  ['src/forwarder/sink/lanes.ts', 'src/forwarder/config/config.ts'],
  ['src/forwarder/source/streams.ts', 'src/forwarder/config/label-selector.ts'],
  ['src/forwarder/config/checks.ts', 'src/forwarder/config/schema.ts'],
  ['src/forwarder/forwarder.ts', 'src/forwarder/control/leader.ts'],
  ['src/forwarder/forwarder.ts', 'src/forwarder/intake.ts'],
  ['src/forwarder/intake.ts', 'src/forwarder/route/router.ts'],
  ['src/forwarder/intake.ts', 'src/forwarder/sink/lanes.ts'],
  ['src/forwarder/intake.ts', 'src/forwarder/source/store.ts'],
  ['src/forwarder/main.ts', 'src/queue/batch-send.ts'],
  ['src/testing/config.ts', 'src/local/memory-queue.ts'],
  ['src/devloop/dev-loop.ts', 'src/testing/provision.ts'],
  ['src/cli/main.ts', 'src/devloop/dev-loop.ts'],
  ['src/index.ts', 'src/core/handler/handler.ts'],
  ['functions/handler.ts', 'src/memcached/types.ts'],
  ['functions/handler.ts', 'src/index.ts'],
  ['functions/resync.ts', 'src/core/resync/resync.ts'],
  ['src/memcached/controller.ts', 'src/index.ts'],
  ['src/memcached/controller.ts', 'src/kube/index.ts'],
  ['src/memcached/types.ts', 'src/crd/index.ts'],
  ['src/memcached/webhook.ts', 'src/kube/kinds.ts'],
  ['src/resources.ts', 'src/memcached/types.ts'],
  ['bench/run.ts', 'src/local/lambda-runner.ts'],
  ['bench/baseline/controller.ts', 'src/forwarder/source/watches.ts'],
];

test('every rule flags its forbidden import, and a cycle, while downward imports pass', () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-layers-'));
  try {
    copyFileSync(join(ROOT, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
    copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true } }),
    );
    const imports = new Map<string, string[]>();
    const cycle: readonly (readonly [string, string])[] = [
      ['src/cli/a.ts', 'src/cli/b.ts'],
      ['src/cli/b.ts', 'src/cli/a.ts'],
    ];
    for (const [from, to] of [...FORBIDDEN, ...ALLOWED, ...cycle]) {
      imports.set(from, [...(imports.get(from) ?? []), to]);
      if (!imports.has(to)) imports.set(to, []);
    }
    for (const [file, targets] of imports) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      const lines = targets.map((t, i) => {
        const rel = pathFrom(file, t);
        return `import * as m${i} from '${rel}';\nexport const use${i} = m${i};`;
      });
      writeFileSync(join(dir, file), `${lines.join('\n')}\nexport const here = ${JSON.stringify(file)};\n`);
    }
    const { status, output } = depcruise(dir, ['--config', '.dependency-cruiser.cjs', '--output-type', 'err', 'src', 'functions', 'scripts', 'bench']);
    assert.notEqual(status, 0, `the fixture's violations fail the check:\n${output}`);
    for (const [from, to, rule] of FORBIDDEN) {
      assert.ok(
        output.split('\n').some((line) => line.includes(rule) && line.includes(from) && line.includes(to)),
        `${rule} flags ${from} → ${to}:\n${output}`,
      );
    }
    assert.match(output, /no-circular: src\/cli\/(a|b)\.ts/, `the cycle is flagged:\n${output}`);
    for (const [from, to] of ALLOWED) {
      assert.ok(!output.split('\n').some((line) => line.includes(`${from} → ${to}`)), `${from} → ${to} is allowed:\n${output}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The relative specifier from `file` to `target` (both relative to the fixture root). */
function pathFrom(file: string, target: string): string {
  return `${'../'.repeat(file.split('/').length - 1)}${target}`;
}
