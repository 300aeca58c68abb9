/**
 * The templates under the field's own linters, as a platform team's pipeline runs them:
 *
 * - `cfn-lint` on the packaged CloudFormation, with default parameters and with every optional
 *   setting on (VPC, EKS, Secrets Manager kubeconfig with a customer key, forwarder role, log
 *   KMS key, alarm topic, per-key ordering, an EventBridge bus): no finding at all (error, warning or
 *   informational). Per-key ordering rides on the all-optional package run (no third
 *   `serverless package`): its stack defaults to Ordering=per-key, so the linters also see the
 *   template a per-key deployment gets (this is how W1001 on the functions' delay queue URL was
 *   found);
 * - `checkov` on both templates and on the chart rendered with the example values and the
 *   reference operator's webhooks (cert-manager, the CRD's conversion stanza): every failed
 *   check is one docs/security.md explains for that target ("Linters" table), and every
 *   explained check still fails — the table is the only skip list, so docs and test cannot drift.
 *
 * The linters come from PyPI into a virtual environment in the cache (provision target
 * `pytools`); each runs once over all its files. Offline: checkov's guideline download is off.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageService } from '../../scripts/package.ts';
import { EXAMPLE_VALUES, renderChart } from '../../src/build/forwarder-chart.ts';
import { provision } from '../../src/testing/index.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'operless-lint-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

/** Every optional setting of serverless.yml on, with well-formed (fictional) values. */
const ALL_OPTIONAL_PARAMS = {
  clusterName: 'shop-eks',
  kubeconfigParameter: '/aws/reference/secretsmanager/operless/kubeconfig',
  kubeconfigKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
  subnetIds: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210',
  securityGroupIds: 'sg-0123456789abcdef0',
  forwarderRoleArn: 'arn:aws:iam::123456789012:role/operless-forwarder',
  logKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
  alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:operless-alarms',
  ordering: 'per-key',
  // With per-key ordering the rule delivers to the delay queue (issue 29 item 9), with its
  // retry policy, dead-letter queue and alarms: the linters see that combination.
  eventBusName: 'operless-events',
};

/** The reference operator's webhooks on top of the example values: every webhook object the chart renders. */
const WEBHOOK_VALUES = {
  settings: { webhooks: { enabled: true, functions: { memcached: 'operless-memcached-ci-webhooks' } } },
  webhooks: {
    certManager: { enabled: true },
    resources: [
      {
        alias: 'memcached',
        apiVersion: 'cache.example.com/v1alpha1',
        plural: 'memcacheds',
        namespaced: true,
        default: {},
        validate: {},
        conversion: { crd: readFileSync(join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml'), 'utf8'), preferredSpoke: true },
      },
    ],
  },
};

type Target = 'template' | 'chart';
interface Tools {
  cfnLint: string;
  checkov: string;
}
let tools: Tools;
const templates: Record<string, string> = {};
let chartFile: string;

before(async () => {
  const provisioned = await provision({ targets: ['pytools', 'helm'] });
  assert.ok(provisioned.cfnLint && provisioned.checkov && provisioned.helm, 'cfn-lint, checkov and helm are provisioned');
  tools = { cfnLint: provisioned.cfnLint, checkov: provisioned.checkov };
  for (const [name, params] of [
    ['default', {}],
    ['all-optional', ALL_OPTIONAL_PARAMS],
  ] as const) {
    const result = await packageService({ stage: 'ci', outDir: join(work, name), params });
    templates[name] = join(result.dir, 'cloudformation-template-update-stack.json');
  }
  const rendered = await renderChart(provisioned.helm, { valuesFiles: [EXAMPLE_VALUES], values: WEBHOOK_VALUES });
  assert.equal(rendered.code, 0, rendered.stderr);
  chartFile = join(work, 'forwarder-chart.yaml');
  writeFileSync(chartFile, rendered.stdout);
});

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, [...args], { maxBuffer: 64 * 1024 * 1024, env, timeout: 300_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

test('cfn-lint: no error, warning or informational finding on the packaged templates', async () => {
  const { code, stdout, stderr } = await run(tools.cfnLint, ['--format', 'json', '--', ...Object.values(templates)]);
  const findings = JSON.parse(stdout || '[]') as {
    Rule: { Id: string };
    Level: string;
    Message: string;
    Filename: string;
    Location: { Start: { LineNumber: number } };
  }[];
  const lines = findings.map((f) => `${f.Level} ${f.Rule.Id} ${f.Filename}:${f.Location.Start.LineNumber} ${f.Message}`);
  assert.deepEqual(lines, [], 'cfn-lint findings');
  assert.equal(code, 0, `cfn-lint exited ${code}: ${stderr}`);
});

test("the all-optional template is the per-key one: FIFO ordering by default and the delay queue in the functions' environment", () => {
  const template = JSON.parse(readFileSync(templates['all-optional']!, 'utf8')) as {
    Parameters: Record<string, { Default?: unknown }>;
    Resources: Record<string, { Properties?: { Environment?: { Variables?: Record<string, unknown> } } }>;
  };
  assert.equal(template.Parameters.Ordering?.Default, 'per-key');
  const delayQueueUrl = JSON.stringify(template.Resources.MemcachedLambdaFunction?.Properties?.Environment?.Variables?.OPERLESS_DELAY_QUEUE_URL);
  assert.match(delayQueueUrl, /"Ref":"DelayQueue"/, 'the functions find the delay queue');
  assert.match(delayQueueUrl, /"Fn::If":\["PerKeyOrdering"/, 'only when the stack is per-key');
});

/** The "Linters" table of docs/security.md: check id → target. */
function documentedChecks(markdown: string): Map<string, Target> {
  const checks = new Map<string, Target>();
  for (const line of markdown.split('\n')) {
    const row = /^\| `(CKV2?_[A-Z0-9_]+)` \| (template|chart) \| (.+) \|$/.exec(line);
    if (!row) continue;
    assert.ok(row[3]!.trim().length > 20, `docs/security.md: ${row[1]} needs a reason`);
    assert.ok(!checks.has(row[1]!), `docs/security.md lists ${row[1]} twice`);
    checks.set(row[1]!, row[2] as Target);
  }
  return checks;
}

interface CheckovReport {
  check_type: string;
  results: { failed_checks: { check_id: string; resource: string; file_path: string }[] };
}

test('checkov: every failed check on the templates and the chart is explained in docs/security.md, and every explained one still fails', async (t) => {
  // BC_SKIP_MAPPING / --skip-download: no call to the vendor's platform (offline, no API key).
  const env = { ...process.env, BC_SKIP_MAPPING: 'TRUE', CHECKOV_RUN_SCA_PACKAGE_SCAN_V2: 'false' };
  const files = [...Object.values(templates), chartFile].flatMap((f) => ['-f', f]);
  const { stdout, stderr } = await run(
    tools.checkov,
    [...files, '--framework', 'cloudformation', 'kubernetes', '--skip-download', '--output', 'json', '--quiet'],
    env,
  );
  let parsed: CheckovReport | CheckovReport[];
  try {
    parsed = JSON.parse(stdout) as CheckovReport | CheckovReport[];
  } catch {
    assert.fail(`checkov printed no JSON report:\n${stdout.slice(0, 2000)}\n${stderr.slice(-2000)}`);
  }
  const reports = ([] as CheckovReport[]).concat(parsed);
  assert.deepEqual(reports.map((r) => r.check_type).sort(), ['cloudformation', 'kubernetes'], 'checkov scanned both');
  const failed = new Map<string, { target: Target; where: Set<string> }>();
  for (const report of reports) {
    const target: Target = report.check_type === 'cloudformation' ? 'template' : 'chart';
    for (const f of report.results.failed_checks) {
      const entry = failed.get(f.check_id) ?? { target, where: new Set<string>() };
      entry.where.add(`${f.resource} (${f.file_path.split('/').slice(-2).join('/')})`);
      failed.set(f.check_id, entry);
    }
  }
  const documented = documentedChecks(readFileSync(join(ROOT, 'docs', 'security.md'), 'utf8'));
  const unexplained = [...failed].filter(([id, f]) => documented.get(id) !== f.target).map(([id, f]) => `${id} on ${f.target}: ${[...f.where].join(', ')}`);
  const stale = [...documented].filter(([id]) => !failed.has(id)).map(([id, target]) => `${id} (${target})`);
  for (const [id, f] of failed) t.diagnostic(`${id}: ${[...f.where].join(', ')}`);
  assert.deepEqual(unexplained, [], 'failed checks that docs/security.md does not explain: fix them, or add a row with the reason');
  assert.deepEqual(stale, [], 'rows of docs/security.md whose check no longer fails: remove them');
});
