/** serverless.yml's function runtimes (timeout, environment) and the package step's budget check. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_TIMEOUT_SECONDS, parseServerlessYaml } from '../../../src/project/serverless-yml.ts';
import { PackageError, refuseUnworkableBudgets } from '../../../scripts/package.ts';

const YAML = `
provider:
  timeout: 30
  environment:
    OPERLESS_LOG_LEVEL: info
    OPERLESS_BUDGET_RESERVE_MS: 2000
functions:
  a:
    handler: functions/a.handler
    timeout: 60
    environment: { OPERLESS_BUDGET_RESERVE_MS: 5000, OPERLESS_DLQ_URL: !Ref DeadLetterQueue }
    events: [{ sqs: { arn: x } }]
  b:
    handler: functions/b.handler
    events: [{ schedule: { rate: rate(10 minutes) } }]
`;

test("a function's timeout and environment: its own over the provider's, numbers kept as written", () => {
  const { runtimes } = parseServerlessYaml(YAML);
  assert.deepEqual(
    runtimes.map((r) => [r.name, r.sqs, r.timeout, r.environment.OPERLESS_BUDGET_RESERVE_MS, r.environment.OPERLESS_LOG_LEVEL]),
    [
      ['a', true, 60, '5000', 'info'],
      ['b', false, 30, '2000', 'info'],
    ],
  );
  assert.equal(parseServerlessYaml('functions:\n  c:\n    handler: c.handler\n').runtimes[0]?.timeout, DEFAULT_TIMEOUT_SECONDS);
});

test('packaging refuses a reconcile function whose reserve is at or above its timeout, naming both, before building anything', () => {
  assert.doesNotThrow(() => refuseUnworkableBudgets(YAML));
  const bad = YAML.replace('timeout: 60', 'timeout: 5');
  assert.throws(
    () => refuseUnworkableBudgets(bad),
    (err: unknown) => err instanceof PackageError && /function "a": OPERLESS_BUDGET_RESERVE_MS is 5000 ms, at or above its timeout of 5 s/.test(err.message),
  );
});
